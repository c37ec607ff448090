#!/usr/bin/env bash
# Installs the real MCP peers the tests run against (peers/package.json, exact
# versions) into peers/node_modules, which git ignores. Skips the install when
# what is there already matches package.json.
set -euo pipefail
cd "$(dirname "$0")/../peers"
stamp=node_modules/.hoist-peers.sha
want=$(sha256sum package.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "scripts/peers.sh: installing the npm peers of the tests into peers/node_modules" >&2
npm install --no-package-lock --no-audit --no-fund --loglevel=error
echo "$want" >"$stamp"
