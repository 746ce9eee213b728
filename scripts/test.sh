#!/usr/bin/env bash
# test.sh - sets up, then builds and runs the whole test suite twice: in the
# Release build (with valgrind checks) and in the sanitizer build (ASan+UBSan).
# Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

for mode in release sanitize; do
  if [ "$mode" = release ]; then
    scripts/setup.sh
    build=build
  else
    scripts/setup.sh --sanitize
    build=build-sanitize
  fi
  echo "== tests: $mode build"
  (cd "$build" && ctest --output-on-failure -j"$(nproc)")
done
