#!/usr/bin/env bash
# setup.sh - installs what npusim needs from Debian's packages (only what is
# missing) and builds it in build/ (Release). Safe to run again.
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

# python3-matplotlib: scripts/npusim-plot; slurm*: tests/sweep_e2e.sh runs a sweep
# on a private single-node Slurm (about 4 MB)
packages=(cmake make gcc pkg-config libsimgrid-dev libcjson-dev zlib1g-dev libcunit1-dev
          python3 python3-matplotlib valgrind slurmctld slurmd slurm-client)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cmake -S "$root" -B "$root/$build" "${flags[@]}" >/dev/null
cmake --build "$root/$build" -j"$(nproc)"
echo "setup: built $root/$build/npusim"
