#!/usr/bin/env bash
# Fails when a file over 1,000,000 bytes that is not data is tracked by git:
# a committed build output or a stray dump, which every clone then carries
# for good. Data lives in testdata/ and docs/; everything else must be small.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=1000000
big=()
while IFS= read -r -d '' f; do
  case "$f" in
    testdata/* | docs/*) continue ;;
  esac
  [ -f "$f" ] || continue
  size=$(wc -c <"$f")
  if [ "$size" -gt "$limit" ]; then
    big+=("$f ($size bytes)")
  fi
done < <(git ls-files -z)
if [ "${#big[@]}" -gt 0 ]; then
  echo "check-tree: files over $limit bytes outside testdata/ and docs/ (a build output? data belongs in testdata/):" >&2
  printf '  %s\n' "${big[@]}" >&2
  exit 1
fi
