#!/usr/bin/env bash
# bench_fuzz.sh [SECONDS] - runs the libFuzzer targets (config loader, trace
# reader, Chakra ET reader and serving request traces, ASan+UBSan) for SECONDS each (default 600), side by side, from copies
# of the saved corpora, and prints a table: executions, executions per second,
# corpus growth and whether a crash was found. Beside them the structured
# serving fuzzer (tests/fuzz/fuzz_serve.py: random deployments through npusim
# serve, its oracles) runs on the Release build for as long, its row in the
# same table (executions: seeds; crash: an oracle failed). Then replays the
# random-trace fuzzer (tests/fuzz/fuzz_traces.py) over seeds 0..9999.
# A benchmark: it reports; exit status 1 only when something crashed (the
# input is kept in fuzz-out/TARGET/) or disagreed. Needs clang,
# libclang-rt-14-dev and libcunit1-dev (installed when missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
secs=${1:-600}
# the targets live in tests/, which CMake builds only with CUnit
scripts/apt_missing.sh clang libclang-rt-14-dev libcunit1-dev >/dev/null
CC=clang cmake -S . -B build-fuzz -DNPUSIM_FUZZ=ON -DNPUSIM_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_config fuzz_trace fuzz_chakra fuzz_serve \
  >/dev/null
[ -x build/npusim ] || scripts/setup.sh >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run_target() { # name corpus max_len
  mkdir -p "$work/$1"
  cp "tests/fuzz/$2"/* "$work/$1/"
  local before
  before=$(ls "$work/$1" | wc -l)
  mkdir -p "$work/$1.artifacts"
  ("$root/build-fuzz/$1" -max_total_time="$secs" -max_len="$3" -print_final_stats=1 \
    -artifact_prefix="$work/$1.artifacts/" "$work/$1" >"$work/$1.log" 2>&1) || true
  echo "$before" >"$work/$1.before"
}
run_target fuzz_config corpus 8192 &
run_target fuzz_trace corpus_trace 16384 &
run_target fuzz_chakra corpus_chakra 4096 &
run_target fuzz_serve corpus_serve 4096 &
(python3 tests/fuzz/fuzz_serve.py --seeds 0:100000000 --time "$secs" --jobs 1 --quiet \
  --keep "$root/fuzz-out/fuzz_serve.py" >"$work/fuzz_serve.py.log" 2>&1 || true) &
wait
status=0
printf '%-12s %8s %12s %10s %14s %s\n' target seconds executions exec/s corpus crash
for t in fuzz_config fuzz_trace fuzz_chakra fuzz_serve; do
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t.log")
  crash=no
  if [ -n "$(ls -A "$work/$t.artifacts")" ] ||
     grep -q "ERROR: \(AddressSanitizer\|libFuzzer\|LeakSanitizer\)" "$work/$t.log"; then
    crash=YES
    status=1
    mkdir -p "fuzz-out/$t" && cp "$work/$t.artifacts"/* "$work/$t.log" "fuzz-out/$t/" 2>/dev/null
    grep -m3 "ERROR" "$work/$t.log" >&2 || true
    echo "bench_fuzz: $t's findings and log kept in fuzz-out/$t/" >&2
  fi
  printf '%-12s %8s %12s %10s %14s %s\n' "$t" "$secs" "${execs:-?}" "${rate:-?}" \
    "$(cat "$work/$t.before") -> $(ls "$work/$t" | wc -l)" "$crash"
done
# fuzz_serve: N seeds in T s, S simulated, R refused in one line, F failed
read -r seeds took failed < <(sed -n \
  's/^fuzz_serve: \([0-9]*\) seeds in \([0-9.]*\) s, .* \([0-9]*\) failed$/\1 \2 \3/p' \
  "$work/fuzz_serve.py.log") || true
crash=no
if [ "${failed:-1}" != 0 ]; then
  crash=YES
  status=1
  grep -m3 -A2 "FAIL" "$work/fuzz_serve.py.log" >&2 || tail -3 "$work/fuzz_serve.py.log" >&2
  echo "bench_fuzz: fuzz_serve.py's failing cases kept in fuzz-out/fuzz_serve.py/" >&2
fi
printf '%-12s %8s %12s %10s %14s %s\n' fuzz_serve.py "$secs" "${seeds:-?}" \
  "$(awk -v n="${seeds:-0}" -v t="${took:-1}" 'BEGIN { printf "%.1f", n / t }')" "-" "$crash"
python3 tests/fuzz/fuzz_traces.py --seeds 0:10000 --quiet || status=1
exit $status
