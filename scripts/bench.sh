#!/usr/bin/env bash
# Benchmarks of hoist-mcp's stdio proxy (issue 2, point 5). Each figure is
# measured against a baseline measured in the same run: round trips against
# hoist-mcp-demo directly, throughput against a plain pipe through cat, and
# printed beside its target. Expects bin/ built (make bench does it); extra
# arguments go to the benchmark (go run ./internal/benchcmd/proxybench -h).
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./internal/benchcmd/proxybench -hoist bin/hoist-mcp -demo bin/hoist-mcp-demo "$@"
