#!/usr/bin/env bash
# setup.sh - installs what building and running npusim needs from Debian's
# packages (only what is missing) and builds it in build/ (Release). Safe to
# run again. The tests need more (CUnit, valgrind; scripts/test.sh adds them);
# without CUnit the build leaves the tests out.
#
#   scripts/setup.sh             build/npusim
#   scripts/setup.sh --sanitize  build-sanitize/npusim (AddressSanitizer + UBSan)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

build=build
flags=(-DCMAKE_BUILD_TYPE=Release)
if [ "${1:-}" = "--sanitize" ]; then
  build=build-sanitize
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPUSIM_SANITIZE=ON)
fi

# the compiler and libraries of npusim; python3 for the scripts in scripts/,
# python3-matplotlib for scripts/tools/npusim-plot, python3-yaml for the YAML
# of MindSpeed's FSDP2 launches in npusim-from-args. No Slurm here: on a cluster's
# login node Debian's slurm-client would shadow the site's own sbatch.
"$root/scripts/apt_missing.sh" cmake make gcc pkg-config libsimgrid-dev libcjson-dev zlib1g-dev \
  python3 python3-matplotlib python3-yaml

cmake -S "$root" -B "$root/$build" "${flags[@]}" >/dev/null
cmake --build "$root/$build" -j"$(nproc)"
echo "setup: built $root/$build/npusim"
