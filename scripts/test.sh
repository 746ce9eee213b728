#!/usr/bin/env bash
# test.sh - installs what the tests need besides what setup.sh installs, then
# builds and runs the whole test suite twice: in the Release build (with
# valgrind checks) and in the sanitizer build (ASan+UBSan). Exits non-zero on
# any failure.
#
# The tests add CUnit (the unit tests), valgrind (the valgrind_* tests),
# strace (a signal check of tests/e2e/cli.sh), protoc (protobuf-compiler) and
# python3-protobuf (tests/e2e/chakra_interop.py decodes npusim's Chakra ETs
# with Chakra's own schema, in protoc and in Chakra's Python reader). NPUSIM_TEST_SLURM=1, as .ci/run
# sets it, also installs Debian's Slurm (slurmctld, slurmd, slurm-client):
# tests/e2e/sweep_e2e.sh then runs a sweep on a private single-node Slurm, as root.
# Without it no Slurm package is installed (it could shadow a site's own).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

packages=(libcunit1-dev valgrind strace protobuf-compiler python3-protobuf)
if [ "${NPUSIM_TEST_SLURM:-0}" = 1 ]; then
  packages+=(slurmctld slurmd slurm-client)
fi
scripts/apt_missing.sh "${packages[@]}"

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
