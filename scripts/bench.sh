#!/usr/bin/env bash
# Benchmarks. Each figure is measured against a baseline measured in the same
# run and printed beside its target:
#   stdio  hoist-mcp's stdio proxy: round trips against hoist-mcp-demo
#          directly, throughput against a plain pipe through cat, peak RSS
#          (go run ./internal/benchcmd/proxybench -h)
#   http   --listen against server-everything's own HTTP endpoint, --upstream
#          against a direct HTTP client, a 64-session soak, and the gateway
#          runs below (go run ./internal/benchcmd/httpbench -h)
#   relay  the proxy at the relay floor: calls/s of server-everything's echo
#          at 16 B and 64 KiB, one and eight in flight, through --record
#          against a cat relay (proxybench -only relay), and through --listen
#          against supergateway --stateful (httpbench -only gateway); stdio
#          also runs the first part, http the second; relay takes no flags
#          (pass -relay-* to proxybench, -gateway-* to httpbench), but
#          AGAINST=BINARY measures both parts against another hoist-mcp
#          build instead of cat and supergateway: before and after a change
#   ingest hoist ingest of a generated corpus beside DuckDB's read_json on the
#          same files, re-ingest and export (go run ./internal/benchcmd/ingestbench -h)
#   flow   decision latency of a 200-site flow, learn throughput, and the
#          held-out share of LLM turns a flow learned from τ²-bench saves
#          (go run ./internal/benchcmd/flowbench -h; reads ../shared/data/tau2
#          when it is there)
#   audit  hoist audit of 10,000 generated sessions from a store
#          (go run ./internal/benchcmd/auditbench -h)
#   eval   hoist evaluate over 10,000 generated sessions
#          (go run ./internal/benchcmd/evalbench -h)
#   redact hoist redact's MB/s on τ²-bench's logs
#          (go run ./internal/benchcmd/redactbench -h; reads ../shared/data/tau2/logs)
#   all    every one of them (the default), with the relay at 1, 8 and 64
#          calls in flight and the gateway at 1, 8 and 16 (supergateway
#          resets its connections at 64 KiB, 64 in flight), --listen at 1,
#          16 and 64 sessions, ingest of generated corpora of 10, 100
#          and 1,000 sessions, and learn at 1, 10 and 100 times the
#          episodes; their figures go to docs/bench/results.jsonl, and
#          internal/benchcmd/benchdoc draws docs/bench.md and its charts
#          (docs/img/bench/) from them
#   gotest the heap a --flow session keeps per call over 100,000 calls, from
#          go test's BenchmarkFlowRetained (go run ./internal/benchcmd/gobench -h)
#   chart PART...  only those parts of all (stdio http relay sessions ingest
#          flow gotest audit eval redact; relay is the relay and gateway runs of
#          stdio and http, sessions the sessions runs of http), their
#          tables replacing the same tables in docs/bench/results.jsonl,
#          and the page redrawn: on a loaded machine, where all takes long
# Usage: scripts/bench.sh [stdio|http|relay|ingest|flow|audit|eval|redact|all|chart PART...] [flags for that benchmark]
# Expects bin/ built (make bench does it); installs the npm peers for stdio,
# http and relay. HOIST_BENCH_RESULTS=FILE keeps the figures of any part as
# JSON lines (package internal/benchcmd/results).
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
[ $# -gt 0 ] && shift
case "$which" in
stdio)
  scripts/peers.sh
  exec go run ./internal/benchcmd/proxybench -hoist bin/hoist-mcp -demo bin/hoist-mcp-demo -everything peers/node_modules/.bin/mcp-server-everything "$@"
  ;;
http)
  scripts/peers.sh
  exec go run ./internal/benchcmd/httpbench -hoist bin/hoist-mcp -demo bin/hoist-mcp-demo -peers peers/node_modules "$@"
  ;;
relay)
  scripts/peers.sh
  go run ./internal/benchcmd/proxybench -hoist bin/hoist-mcp -everything peers/node_modules/.bin/mcp-server-everything -only relay ${AGAINST:+-relay-against "$AGAINST"}
  echo
  exec go run ./internal/benchcmd/httpbench -hoist bin/hoist-mcp -peers peers/node_modules -only gateway ${AGAINST:+-gateway-against "$AGAINST"}
  ;;
ingest) exec scripts/bench-ingest.sh "$@" ;;
flow) exec go run ./internal/benchcmd/flowbench "$@" ;;
audit) exec go run ./internal/benchcmd/auditbench "$@" ;;
eval) exec go run ./internal/benchcmd/evalbench "$@" ;;
redact) exec go run ./internal/benchcmd/redactbench -sessions ../shared/data/tau2/logs "$@" ;;
all|chart)
  # chart PART...: run only those parts of all (stdio http relay sessions
  # ingest flow audit eval redact) and redraw the page, their tables taking
  # the place of the same tables of the last run's (benchdoc -update); each
  # table on the page says when and at what load it was measured.
  parts=(stdio http ingest flow gotest audit eval redact)
  if [ "$which" = chart ]; then
    [ $# -gt 0 ] || { echo "usage: scripts/bench.sh chart PART... (stdio http relay sessions ingest flow gotest audit eval redact)" >&2; exit 2; }
    parts=("$@")
  fi
  scripts/peers.sh
  mkdir -p docs/bench
  export HOIST_BENCH_RESULTS=$PWD/docs/bench/results.jsonl.tmp
  rm -f "$HOIST_BENCH_RESULTS"
  for part in "${parts[@]}"; do
    case "$part" in
    stdio) go run ./internal/benchcmd/proxybench -hoist bin/hoist-mcp -demo bin/hoist-mcp-demo -everything peers/node_modules/.bin/mcp-server-everything -relay-flight 1,8,64 ;;
    http) go run ./internal/benchcmd/httpbench -hoist bin/hoist-mcp -demo bin/hoist-mcp-demo -peers peers/node_modules -gateway-flight 1,8,16 -sessions 1,16,64 ;;
    relay)
      go run ./internal/benchcmd/proxybench -hoist bin/hoist-mcp -everything peers/node_modules/.bin/mcp-server-everything -only relay -relay-flight 1,8,64
      go run ./internal/benchcmd/httpbench -hoist bin/hoist-mcp -peers peers/node_modules -only gateway -gateway-flight 1,8,16
      ;;
    sessions) go run ./internal/benchcmd/httpbench -hoist bin/hoist-mcp -peers peers/node_modules -only sessions -sessions 1,16,64 ;;
    ingest)
      for n in 10 100 1000; do
        go run ./internal/benchcmd/ingestbench -hoist bin/hoist -peers peers/node_modules -sessions "$n"
        echo
      done
      scripts/bench-ingest.sh
      ;;
    flow) go run ./internal/benchcmd/flowbench -scale 1,10,100 ;;
    gotest)
      go run ./internal/benchcmd/gobench -pkg ./proxy -bench FlowRetained -benchtime 100000x -metric retained-B/call \
        -table "--flow: heap kept per call over 100,000 calls" -row "one session, a lookup served per call, both logs written" -unit B/call -better lower
      ;;
    audit) go run ./internal/benchcmd/auditbench ;;
    eval) go run ./internal/benchcmd/evalbench ;;
    redact) go run ./internal/benchcmd/redactbench -sessions ../shared/data/tau2/logs ;;
    *) echo "scripts/bench.sh: no part $part (stdio http relay sessions ingest flow gotest audit eval redact)" >&2; exit 2 ;;
    esac
    echo
  done
  if [ "$which" = all ]; then
    mv "$HOIST_BENCH_RESULTS" docs/bench/results.jsonl
    go run ./internal/benchcmd/benchdoc -results docs/bench/results.jsonl -out docs/bench.md -img docs/img/bench
  else
    go run ./internal/benchcmd/benchdoc -results docs/bench/results.jsonl -update "$HOIST_BENCH_RESULTS" -out docs/bench.md -img docs/img/bench
    rm -f "$HOIST_BENCH_RESULTS"
  fi
  ;;
*) echo "usage: scripts/bench.sh [stdio|http|relay|ingest|flow|audit|eval|redact|all|chart PART...] [flags]" >&2; exit 2 ;;
esac
