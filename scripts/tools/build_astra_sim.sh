#!/usr/bin/env bash
# build_astra_sim.sh SRC [--target all|congestion_unaware|congestion_aware]
#                        [--jobs N] [--no-apt]
# Builds ASTRA-sim 2.x's analytical network backends from the source checkout
# SRC (a clone with its submodules), so that tests/e2e/astra_sim_run.py can run
# npusim's emitted Chakra ETs through the real tool (ASTRA_BIN=<binary> ctest
# -R astra_sim_run). Prints the binaries' paths on the last lines:
#   SRC/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware
#   SRC/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Aware
#
# It does what ASTRA-sim's build/astra_analytical/build.sh does (protoc on
# Chakra's et_def.proto, then cmake on build/astra_analytical), with these
# differences, so that it builds without a network:
# - yaml-cpp: ASTRA-sim's CMakeLists fetches it from GitHub at configure time;
#   here FETCHCONTENT_TRY_FIND_PACKAGE_MODE=ALWAYS takes Debian's
#   libyaml-cpp-dev instead. Where the network backend's own yaml-cpp
#   submodule (extern/network_backend/analytical/extern/yaml-cpp) is empty, as
#   in a checkout whose nested submodules were not cloned, an empty
#   CMakeLists.txt is written into it (said on stderr), so its targets link
#   the same Debian library by name.
# - Debian build dependencies are installed with scripts/apt_missing.sh
#   (root or sudo) unless --no-apt.
# - A Chakra whose feeder_v3 lacks the name Chakra::ETFeeder (older than the
#   commit ASTRA-sim pins) gets it from a header force-included from the
#   build folder (said on stderr).
# It does not fetch sources, patch ASTRA-sim, or build the ns-3/htsim backends.
#
# Tested with (Debian 12, g++ 12, cmake 3.25, protobuf 3.21, yaml-cpp 0.7):
#   astra-sim/astra-sim                518bd51 (2026-03-26)
#   extern/graph_frontend/chakra       astra-sim/chakra f37c2bb (branch stage,
#                                      with the alias above; the pinned 0e3cd40
#                                      was not at hand)
#   extern/network_backend/analytical  astra-sim/astra-network-analytical
#                                      599a047 (the pinned e8c5119 was not)
#   extern/remote_memory_backend/analytical  641cce8 (as pinned)
#   extern/helper/spdlog               gabime/spdlog 6230201 (1.13+; the
#                                      pinned 63f0875 was not at hand)
#   extern/helper/fmt                  fmtlib/fmt 10.2.1 (e69e5f9, the fmt
#                                      that spdlog bundles; pinned 7e73566)
# A build from scratch took about 17 minutes on 2 shared cores. CI does not
# run it; the ctest that uses its output is skipped without ASTRA_BIN.
set -euo pipefail

usage() {
  sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

src=""
target=all
jobs=$(nproc)
[ "$jobs" -gt 16 ] && jobs=16
apt=1
while [ $# -gt 0 ]; do
  case "$1" in
  --target) target=${2:?--target needs a value}; shift 2 ;;
  --jobs | -j) jobs=${2:?--jobs needs a value}; shift 2 ;;
  --no-apt) apt=0; shift ;;
  -h | --help) usage ;;
  -*) echo "build_astra_sim: unknown option $1" >&2; usage ;;
  *) [ -z "$src" ] || usage; src=$1; shift ;;
  esac
done
[ -n "$src" ] || usage
case "$target" in
all | congestion_unaware | congestion_aware) ;;
*) echo "build_astra_sim: --target is all, congestion_unaware or congestion_aware, not $target" >&2; exit 2 ;;
esac

src=$(cd "$src" && pwd)
here=$(cd "$(dirname "$0")/../.." && pwd)

# A checkout without its submodules fails deep inside cmake; say which one
# is missing instead.
need_dir() {
  if [ -z "$(ls -A "$src/$1" 2>/dev/null)" ]; then
    echo "build_astra_sim: expected $2 in $src/$1, found it missing or empty${3-; run git submodule update --init --recursive in $src}" >&2
    exit 1
  fi
}
need_dir build/astra_analytical "ASTRA-sim 2.x's analytical build folder" " (is $src an ASTRA-sim checkout?)"
need_dir extern/graph_frontend/chakra/src/feeder_v3 "Chakra with feeder_v3"
need_dir extern/network_backend/analytical/congestion_aware "astra-network-analytical"
need_dir extern/remote_memory_backend/analytical "astra-memory-analytical"
need_dir extern/helper/fmt fmt
need_dir extern/helper/spdlog spdlog

if [ "$apt" -eq 1 ]; then
  bash "$here/scripts/apt_missing.sh" g++ make cmake protobuf-compiler \
    libprotobuf-dev libyaml-cpp-dev
fi

proto_dir=$src/extern/graph_frontend/chakra/schema/protobuf
if [ ! -f "$proto_dir/et_def.pb.cc" ] || [ "$proto_dir/et_def.proto" -nt "$proto_dir/et_def.pb.cc" ]; then
  protoc et_def.proto --proto_path="$proto_dir" --cpp_out="$proto_dir"
fi

yaml_sub=$src/extern/network_backend/analytical/extern/yaml-cpp
if [ -d "$yaml_sub" ] && [ -z "$(ls -A "$yaml_sub")" ]; then
  echo "build_astra_sim: $yaml_sub is empty; an empty CMakeLists.txt there links Debian's yaml-cpp" >&2
  printf '# written by npusim scripts/tools/build_astra_sim.sh: Debian libyaml-cpp-dev is used\n' \
    >"$yaml_sub/CMakeLists.txt"
fi

build=$src/build/astra_analytical/build
mkdir -p "$build"

# ASTRA-sim 518bd51 names the feeder Chakra::ETFeeder; Chakra's feeder_v3
# before the commit ASTRA-sim pins (e.g. astra-sim/chakra f37c2bb, branch
# stage) declares it only as Chakra::FeederV3::ETFeeder. Where the header has
# no ETFeeder outside namespace FeederV3, a header force-included from the
# build folder adds the name (the checkout is left as it is).
cxx_flags=""
feeder=$src/extern/graph_frontend/chakra/src/feeder_v3/et_feeder.h
if grep -rqs 'Chakra::ETFeeder\b' "$src/astra-sim" &&
  ! awk '/^namespace FeederV3/ { inside = 1 } /^} \/\/ namespace FeederV3/ { inside = 0; next }
         !inside && /using (ETFeeder|FeederV3::ETFeeder)/ { found = 1 } END { exit !found }' "$feeder"; then
  echo "build_astra_sim: $feeder declares no Chakra::ETFeeder, which ASTRA-sim names; adding it from $build/chakra_etfeeder_alias.h" >&2
  alias=$(printf '%s\n' '// written by npusim scripts/tools/build_astra_sim.sh' \
    'namespace Chakra { namespace FeederV3 { class ETFeeder; } using FeederV3::ETFeeder; }')
  # rewritten only when it changes: its time stamp would rebuild everything
  [ "$(cat "$build/chakra_etfeeder_alias.h" 2>/dev/null)" = "$alias" ] ||
    printf '%s\n' "$alias" >"$build/chakra_etfeeder_alias.h"
  cxx_flags="-include $build/chakra_etfeeder_alias.h"
fi

cmake -S "$src/build/astra_analytical" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release -DBUILDTARGET="$target" \
  -DFETCHCONTENT_TRY_FIND_PACKAGE_MODE=ALWAYS -DCMAKE_CXX_FLAGS="$cxx_flags"
cmake --build "$build" -j "$jobs"

for b in Unaware Aware; do
  bin=$build/bin/AstraSim_Analytical_Congestion_$b
  [ -x "$bin" ] && echo "$bin"
done
exit 0
