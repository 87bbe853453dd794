#!/usr/bin/env bash
# Runs every Go fuzz target in the module for FUZZTIME (default 10s) each.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
  pkg=./$(dirname "${f#./}")
  for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
    echo "== $pkg $name"
    go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
  done
done
