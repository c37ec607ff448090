#!/usr/bin/env bash
# Benchmarks; each prints its figures against a baseline measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "no benchmarks yet"
