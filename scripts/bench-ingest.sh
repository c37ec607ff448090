#!/usr/bin/env bash
# The store's benchmark (issue 3, point 10; issue 13): generates a corpus of
# session logs, then times hoist ingest beside DuckDB's read_json on the same
# files, an unchanged re-ingest, and a Parquet export beside DuckDB's own
# Parquet writer, with peak RSS; then the same over the τ²-bench logs
# (../shared/data/tau2/logs, or $TAU2_LOGS) when they are there.
# Arguments go to internal/benchcmd/ingestbench for the generated corpus
# (e.g. -sessions 100 for a quick run, -sessions 3000 for the RSS target at
# ten times the corpus, -before OLD_HOIST for before/after figures).
# BEFORE=REV builds hoist at that git revision (say, the branch's base) and
# measures it in the same runs, both corpora, for before/after figures.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/ ./cmd/hoist # always: a stale binary would measure older code
scripts/peers.sh
before=()
if [ -n "${BEFORE:-}" ]; then
  old=$(mktemp -d)
  trap 'rm -rf "$old"' EXIT
  git archive "$BEFORE" | tar -x -C "$old"
  (cd "$old" && go build -o hoist-before ./cmd/hoist)
  before=(-before "$old/hoist-before")
fi
go run ./internal/benchcmd/ingestbench -hoist bin/hoist -peers peers/node_modules -sessions 300 "${before[@]}" "$@"
tau2=${TAU2_LOGS:-../shared/data/tau2/logs}
if [ -d "$tau2" ]; then
  echo
  go run ./internal/benchcmd/ingestbench -hoist bin/hoist -peers peers/node_modules -corpus "$tau2" "${before[@]}"
fi
