#!/usr/bin/env bash
# Runs every test: installs the npm peers, then go test -race over the whole
# module, then the Beam pipelines' module (beam/, its own go.mod): on the
# Prism runner in-process, their flow against the built hoist learn's and
# their Parquet against hoist export's, read back by DuckDB. HOIST_REQUIRE_PEERS
# makes a test that needs a missing peer fail rather than skip.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/peers.sh
export HOIST_REQUIRE_PEERS=1
scripts/jaeger.sh
go test -race -count=1 ./... "$@"
# Without -race: make lint has just built the Beam SDK for go vet, and a
# race build would compile its 1.2 GB of modules a second time (minutes on
# a fresh machine); the pipelines' own code is a thin layer over the main
# module's stages, which run under -race above.
(cd beam && go test -count=1 ./...)
