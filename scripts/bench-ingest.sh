#!/usr/bin/env bash
# The store's benchmark (issue 3, point 10; issue 13): generates a corpus of
# session logs, then times hoist ingest beside DuckDB's read_json on the same
# files, an unchanged re-ingest, and a Parquet export beside DuckDB's own
# Parquet writer, with peak RSS; then the same over the τ²-bench logs
# (../shared/data/tau2/logs) when they are there.
# Arguments go to internal/benchcmd/ingestbench for the generated corpus
# (e.g. -sessions 100 for a quick run, -sessions 3000 for the RSS target at
# ten times the corpus, -before OLD_HOIST for before/after figures).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x bin/hoist ] || go build -o bin/ ./cmd/hoist
scripts/peers.sh
go run ./internal/benchcmd/ingestbench -hoist bin/hoist -peers peers/node_modules -sessions 300 "$@"
if [ -d ../shared/data/tau2/logs ]; then
  echo
  go run ./internal/benchcmd/ingestbench -hoist bin/hoist -peers peers/node_modules -corpus ../shared/data/tau2/logs
fi
