#!/usr/bin/env bash
# cli.sh NPUSIM - end-to-end checks of the npusim command line: help and
# version, exit statuses, the resolved config of `validate` (values, round trip
# through the binary, determinism), all-or-nothing --output, and that
# docs/config.md is what `npusim schema` prints. Run from the repository root.
set -u
npusim=$1
source "$(dirname "$0")/e2e_lib.sh"


status_is() { # status_is WANT COMMAND...
  local want=$1
  shift
  "$@" >/dev/null 2>&1
  local rc=$?
  [ "$rc" -eq "$want" ] || { echo "exit $rc, want $want: $*"; return 1; }
}

json_value() { # json_value FILE DOTTED.PATH : prints the value at the path
  python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k]
print(v)' "$1" "$2"
}

systems=(configs/systems/*.json)

check "--version names npusim and SimGrid" bash -c "'$npusim' --version | grep -q '^npusim .*SimGrid 3\.'"
check "--help lists every command" bash -c "'$npusim' --help | grep -q validate && '$npusim' --help | grep -q train"
for cmd in coll op replay train validate schema calibrate; do
  check "$cmd --help" bash -c "'$npusim' $cmd --help | grep -q '^usage: npusim $cmd'"
done
check "help validate" bash -c "'$npusim' help validate | grep -q '^usage: npusim validate'"
check "no arguments exits 2" status_is 2 "$npusim"
check "unknown option exits 2" status_is 2 "$npusim" validate --nope
check "help for unknown command exits 2" status_is 2 "$npusim" help nope

# The issue's "done when": --set lands in the resolved config.
"$npusim" validate --system configs/systems/ascend-910b.json \
  --set chip.hbm.bandwidth_GBps=3200 --format json >"$tmp/set.json"
check "--set shows in validate --format json" \
  test "$(json_value "$tmp/set.json" chip.hbm.bandwidth_GBps)" = 3200
check "defaults are filled in" test "$(json_value "$tmp/set.json" chip.dies_per_package)" = 1

for sys in "${systems[@]}"; do
  name=$(basename "$sys" .json)
  "$npusim" validate --system "$sys" --format json >"$tmp/$name.1.json"
  "$npusim" validate --system "$tmp/$name.1.json" --format json >"$tmp/$name.2.json"
  check "$name: canonical json loads back to itself" cmp "$tmp/$name.1.json" "$tmp/$name.2.json"
  "$npusim" validate --system "$sys" >"$tmp/$name.t1"
  "$npusim" validate --system "$sys" >"$tmp/$name.t2"
  check "$name: two runs print the same bytes" cmp "$tmp/$name.t1" "$tmp/$name.t2"
  check "$name: csv rows have 6 fields" python3 -c 'import csv,sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0] == ["config","key","value","unit","from","source"], rows[0]
assert len(rows) > 40 and all(len(r) == 6 for r in rows), len(rows)' \
    <("$npusim" validate --system "$sys" --format csv)
done

"$npusim" validate --system configs/systems/ascend-910b.json \
  --workload configs/workloads/llama2-70b.json --format json >"$tmp/both.json"
check "system and workload print together" \
  test "$(json_value "$tmp/both.json" workload.parallel.tp)" = 8

# --output is all or nothing.
check "--output writes the file" bash -c "'$npusim' validate --system ${systems[0]} --format json --output '$tmp/out.json' && cmp -s '$tmp/out.json' <('$npusim' validate --system ${systems[0]} --format json)"
echo keep >"$tmp/keep.json"
check "failed run leaves --output untouched" bash -c "! '$npusim' validate --system ${systems[0]} --set chip.cube.cores=0 --output '$tmp/keep.json' 2>/dev/null && grep -qx keep '$tmp/keep.json'"
check "failed run creates no --output file" bash -c "! '$npusim' validate --system nope.json --output '$tmp/none.json' 2>/dev/null && ! ls '$tmp' | grep -q none"

"$npusim" op --system configs/systems/ascend-910b.json --op matmul --shape 8192,8192,8192 \
  --format json >"$tmp/op.json"
check "op json has time_s, cycles, tflops, bound" python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
assert r["time_s"] > 0 and r["cycles"] > 0 and r["tflops"] > 300 and r["bound"] == "cube", r' "$tmp/op.json"
check "op --explain names the tiling and the bound" bash -c "'$npusim' op --system configs/systems/ascend-910b.json --op softmax --shape 4096,4096 --explain | grep -q '<- bound'"
check "op --sweep prints an efficiency curve" bash -c "[ \$('$npusim' op --system configs/systems/ascend-910b.json --op matmul --sweep --format csv | wc -l) -ge 8 ]"

check "docs/config.md is what 'npusim schema' prints" bash -c "cmp docs/config.md <('$npusim' schema)"
check "schema --format json parses" python3 -c 'import json,subprocess,sys
keys = json.loads(subprocess.check_output([sys.argv[1], "schema", "--format", "json"]))
assert any(k["key"] == "chip.hbm.bandwidth_GBps" and k["unit"] == "GB/s" for k in keys)' "$npusim"

# calibrate: the fitted config extends the system, loads, and carries the value
# and its [cal] note; the report goes to stdout; nothing is written without --output.
cal_out="$tmp/fitted.json"
check "calibrate writes a config that loads with the fitted value" bash -c "
  '$npusim' calibrate --system configs/systems/h100-dgx.json \
    --measurements tests/data/validation/ops_h100.csv --fit chip.vector.op_overhead_us \
    --output '$cal_out' | grep -q 'after   vector' &&
  '$npusim' validate --system '$cal_out' --format csv | grep 'chip.vector.op_overhead_us,' |
    grep -q 'cal. fitted to tests/data/validation/ops_h100.csv' &&
  ! '$npusim' validate --system '$cal_out' --format csv | grep -q 'chip.vector.op_overhead_us,2,'"
check "calibrate --fit none only reports" bash -c "
  '$npusim' calibrate --system configs/systems/h100-dgx.json \
    --measurements tests/data/validation/ops_h100.csv --fit none --format json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"parameters\"] == [] and d[\"kernels\"] == 77'"
# train --list-ops: a table of the step's distinct ops that measure_ops.py reads
check "train --list-ops writes the distinct ops measure_ops.py reads" bash -c "
  '$npusim' train --system configs/systems/a100-dgx.json --workload configs/workloads/gpt-22b.json \
    --list-ops '$tmp/ops.csv' >/dev/null &&
  grep -q '^attention_fwd\|^softmax' '$tmp/ops.csv' &&
  [ \$(python3 scripts/measure_ops.py --dry-run --ops '$tmp/ops.csv' | wc -l) -eq \$(grep -vc '^#' '$tmp/ops.csv') ]"

finish "cli"
