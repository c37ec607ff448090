#!/usr/bin/env bash
# Builds Jaeger (the jaeger program, from internal/tools/jaeger: its own
# module, whose go.mod names it as a tool) into the cache that
# testbin.Jaeger reads, once per version: the --otel tests send their
# traces to it. A cold build takes minutes, so it runs before the tests
# rather than inside one.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${HOIST_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hoist-tools}"
bin="$cache/jaeger-$(sha256sum internal/tools/jaeger/go.sum | cut -c1-16)"
if [ -x "$bin" ]; then
  exit 0
fi
mkdir -p "$cache"
echo "building jaeger into $bin (once per version)" >&2
(cd internal/tools/jaeger && go build -o "$bin.$$.tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
mv "$bin.$$.tmp" "$bin"
