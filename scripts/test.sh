#!/usr/bin/env bash
# test.sh - installs what the tests need besides what setup.sh installs, then
# builds and runs the whole test suite twice: in the Release build (with
# valgrind checks) and in the sanitizer build (ASan+UBSan). Exits non-zero on
# any failure.
#
# The tests add CUnit (the unit tests), valgrind (the valgrind_* tests),
# strace (a signal check of tests/e2e/cli.sh), protoc (protobuf-compiler) and
# python3-protobuf (tests/e2e/chakra_interop.py decodes npusim's Chakra ETs
# with Chakra's own schema, in protoc and in Chakra's Python reader),
# python3-junitparser (check_e2e reads npusim check's JUnit XML with it), nodejs
# and npm's speedscope 1.25.0 (timeline_speedscope imports npusim's timelines
# with it). NPUSIM_TEST_SLURM=1, as .ci/run
# sets it, also installs Debian's Slurm (slurmctld, slurmd, slurm-client):
# tests/e2e/sweep_e2e.sh then runs a sweep on a private single-node Slurm, as root.
# Without it no Slurm package is installed (it could shadow a site's own).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

packages=(libcunit1-dev valgrind strace protobuf-compiler python3-protobuf python3-junitparser nodejs)
if [ "${NPUSIM_TEST_SLURM:-0}" = 1 ]; then
  packages+=(slurmctld slurmd slurm-client)
fi
scripts/apt_missing.sh "${packages[@]}"
# speedscope's importer for the timeline_speedscope test: Debian's nodejs runs
# it; its npm package (1.3 MB) is fetched from the npm registry into a cache
# outside the repository and checked against the registry's published sha512
# (no npm needed). Without node or the registry the test skips.
npm_cache=${NPUSIM_NPM_CACHE:-$HOME/.cache/npusim-npm}
if command -v node >/dev/null && [ ! -d "$npm_cache/node_modules/speedscope" ]; then
  python3 scripts/lib/fetch_npm.py speedscope 1.25.0 \
    'sha512-cpf9HWTZf1ijLXBJrk87Ve/54tnYx6rlf0gUThvn3ook6h63hLXVOQiMf44PT+XoV503cPfvfiT5gP5vojp6Ag==' \
    "$npm_cache/node_modules/speedscope" ||
    echo "test.sh: speedscope not installed: timeline_speedscope will skip"
fi

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
