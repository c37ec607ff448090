#!/usr/bin/env bash
# hoist's whole loop on embedded defaults, with nothing to install: scripted
# customers (hoist-procedure) work a tiny shop (hoist-mcp-demo --world retail)
# through the recording proxy; hoist ingests the sessions, learns a flow and
# shows it; then the proxy serves the flow to a new customer, and the
# procedure reports the LLM turns it skipped; last, a recorded τ²-bench agent
# is replayed live against τ²-bench's retail world through a flow learned
# from the other tasks, with the turns it skipped. HOIST_DEMO_DIR keeps the
# files.
set -euo pipefail
cd "$(dirname "$0")/.."
work="${HOIST_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hoist-demo.XXXXXX")}"
bin="${HOIST_BIN:-bin}" # where the four programs are (make build puts them in bin/)
mkdir -p "$work/logs" "$work/served" "$work/customers"
shop=("$bin/hoist-mcp-demo" --world retail)
procs=testdata/procedures/retail

echo "== 1. Record: 12 scripted customers through hoist-mcp --record, in front of the retail world"
pids=()
for n in $(seq 1 12); do
  case $((n % 2)) in
    0) proc=cancel-order ;;
    1) proc=review-orders ;;
  esac
  "$bin/hoist-procedure" --param "email=c$n@example.com" "$procs/$proc.jsonl" \
    -- "$bin/hoist-mcp" --record "$work/logs" --domain retail -- "${shop[@]}" >"$work/customers/customer-$n.txt" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
echo "   one of them, c2@example.com cancelling an order:"
sed 's/^/   | /' "$work/customers/customer-2.txt" | grep -v 'hoist-mcp: recording'

echo
echo "== 2. Ingest the session logs into the episode store, and list them"
"$bin/hoist" ingest --sessions "$work/logs"
"$bin/hoist" sessions --sessions "$work/logs" | sed -n 1,5p # sed reads it all: head could stop hoist mid-write
echo "   ..."

echo
echo "== 3. Learn a flow: which reads follow which calls, and where each argument comes from"
"$bin/hoist" learn --sessions "$work/logs" --domain retail --folds 1 --out "$work/retail.flow.json"

echo
echo "== 4. Review it"
"$bin/hoist" flow-show "$work/retail.flow.json"

echo
echo "== 5. Serve it: a new customer, c15@example.com, cancels an order through hoist-mcp --flow"
"$bin/hoist-procedure" --param email=c15@example.com "$procs/cancel-order.jsonl" \
  -- "$bin/hoist-mcp" --record "$work/served" --domain retail --flow "$work/retail.flow.json" -- "${shop[@]}" 2>&1 \
  | grep -v 'hoist-mcp: recording'

echo
echo "== 6. Live on τ²-bench: a recorded retail agent (task 27) replayed against τ²-bench's database, through a flow learned from other tasks"
"$bin/hoist-procedure" replay --time-scale 0.1 --context "$work/tau2.context.jsonl" testdata/tau2/logs/retail/gpt-4.1/20250801T161636.780Z-42820.jsonl \
  -- "$bin/hoist-mcp" --record "$work/tau2" --domain retail --task-id 27 --context "$work/tau2.context.jsonl" \
  --flow testdata/flows/tau2-retail.flow.json -- "$bin/hoist-mcp-demo" --world tau2-retail 2>&1 | grep -v 'hoist-mcp: recording'

echo
echo "The files are in $work: logs/ (sessions and hoist.db), customers/ (their reports), retail.flow.json, served/ (the served"
echo "session's log and its flow log, one line per decision and run), tau2/ (the replayed τ²-bench session)."
