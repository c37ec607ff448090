#!/usr/bin/env bash
# Runs every test: installs the npm peers, then go test -race over the whole
# module. HOIST_REQUIRE_PEERS makes a test that needs a missing peer fail
# rather than skip.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/peers.sh
export HOIST_REQUIRE_PEERS=1
go test -race -count=1 ./... "$@"
