#!/usr/bin/env bash
# The ingest benchmark of issue 3, point 10: generates 1,000 sessions of
# about 1,000 lines, then times hoist ingest beside DuckDB's read_json on the
# same files, an unchanged re-ingest, and a Parquet export, with peak RSS.
# Arguments go to internal/benchingest (e.g. -sessions 100 for a quick run).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x bin/hoist ] || go build -o bin/ ./cmd/hoist
scripts/peers.sh
go run ./internal/benchingest -hoist bin/hoist -peers peers/node_modules "$@"
