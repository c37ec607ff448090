#!/usr/bin/env bash
# Benchmarks. Each figure is measured against a baseline measured in the same
# run and printed beside its target:
#   stdio  hoist-mcp's stdio proxy: round trips against hoist-mcp-demo
#          directly, throughput against a plain pipe through cat, peak RSS
#          (go run ./internal/benchcmd/proxybench -h)
#   http   --listen against server-everything's own HTTP endpoint, --upstream
#          against a direct HTTP client, and a 64-session soak
#          (go run ./internal/benchcmd/httpbench -h)
# Usage: scripts/bench.sh [stdio|http|all] [flags for that benchmark]
# Expects bin/ built (make bench does it) and, for http, the npm peers.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
[ $# -gt 0 ] && shift
case "$which" in
stdio) exec go run ./internal/benchcmd/proxybench -hoist bin/hoist-mcp -demo bin/hoist-mcp-demo "$@" ;;
http)
  scripts/peers.sh
  exec go run ./internal/benchcmd/httpbench -hoist bin/hoist-mcp -demo bin/hoist-mcp-demo -peers peers/node_modules "$@"
  ;;
all)
  go run ./internal/benchcmd/proxybench -hoist bin/hoist-mcp -demo bin/hoist-mcp-demo
  echo
  scripts/peers.sh
  go run ./internal/benchcmd/httpbench -hoist bin/hoist-mcp -demo bin/hoist-mcp-demo -peers peers/node_modules
  ;;
*) echo "usage: scripts/bench.sh [stdio|http|all] [flags]" >&2; exit 2 ;;
esac
