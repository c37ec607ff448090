#!/usr/bin/env bash
# The "Try it" loop: five messages from a shell through hoist-mcp in front of
# hoist-mcp-demo, then where the session log is and what it holds.
set -euo pipefail
cd "$(dirname "$0")/.."
logs="${HOIST_TRY_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hoist-try.XXXXXX")}"

echo "== the host sends five messages; the server's answers:"
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"shell","version":"0"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"hello"}}}' \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"update","arguments":{"text":"hi","fail":true}}}' \
  | bin/hoist-mcp --record "$logs" --domain demo -- bin/hoist-mcp-demo 2>"$logs/proxy.stderr"
status=$?
echo
echo "== hoist-mcp said (stderr), exit status $status:"
cat "$logs/proxy.stderr"
rm -f "$logs/proxy.stderr"
log=$(ls "$logs"/*.jsonl | head -n1)
echo
echo "== the session log, $log ($(wc -l <"$log") lines: a header, then each wire line):"
cat "$log"
