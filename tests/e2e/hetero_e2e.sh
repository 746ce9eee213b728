#!/usr/bin/env bash
# hetero_e2e.sh NPUSIM - servers of different chips (cluster.node_types) end
# to end, with known answers: a node list giving every server chip B equals
# the system whose default chip is B on the same fabric; in pure data
# parallelism with half the servers on a slower chip the step is the slow
# chip's step (its compute and optimizer plus the gradient reduction), the
# fast ranks show the difference as straggler_wait, energy is the mean of the
# two uniform clusters', memory is checked against the smaller HBM, and the
# analytic and flow fidelities agree; an empty list changes no byte; a default
# chip that no server of the job carries is never asked for the job's ops
# (train, replay, cluster); bad node lists are one line, exit 2, and so is
# validate's JSON when a file's absolute path does not fit the key. Run from
# the repository root.
set -u
npusim=${1:?usage: hetero_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
B=configs/systems/ascend-910b.json
A=configs/systems/ascend-910a.json
# ascend-910b.json's fabric with ascend-910a.json's chip as the default chip
python3 -c '
import json, sys
b, a = (json.load(open(f)) for f in sys.argv[1:3])
assert "extends" not in b and "extends" not in a
b["chip"] = a["chip"]
json.dump(b, open(sys.argv[3], "w"))
' "$B" "$A" "$tmp/910b-fabric-910a-chip.json"
# 32 ranks of pure data parallelism: 4 servers; fp16, which both chips compute
wl="--workload configs/workloads/llama2-7b.json --set workload.parallel.tp=1
  --set workload.parallel.pp=1 --set workload.parallel.dp=32 --set workload.parallel.zero=1
  --set workload.parallel.sequence_parallel=false --set workload.training.global_batch=64
  --set workload.training.precision=fp16 --format json"
train="$npusim train $wl"
$train --system $B >"$tmp/allB.json"
$train --system $B --set cluster.node_types= >"$tmp/empty.json"
$train --system $B --set cluster.node_types=0-3:$A >"$tmp/listA.json"
$train --system "$tmp/910b-fabric-910a-chip.json" >"$tmp/defaultA.json"
$train --system $B --set cluster.node_types=2-3:$A >"$tmp/half.json"
$train --system $B --set cluster.node_types=2-3:$A --fidelity flow >"$tmp/half_flow.json"
$train --system $B --set cluster.node_types=2:$A,3:$A >"$tmp/half2.json"
check "an empty node list changes no byte" cmp "$tmp/allB.json" "$tmp/empty.json"
check "every server on chip A by the node list equals the system whose default chip is A" \
  python3 -c '
import json, sys
l, d = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("step_time_s", "mfu", "breakdown", "memory", "energy"):
    assert l[k] == d[k], (k, l[k], d[k])
assert l["simulated_npus"] == 1, "one chip everywhere: representatives still suffice"
' "$tmp/listA.json" "$tmp/defaultA.json"
check "the two chips differ in compute time (else the test below proves nothing)" python3 -c '
import json, sys
b, a = (json.load(open(f)) for f in sys.argv[1:3])
tb = b["breakdown"]["compute"] + b["breakdown"]["optimizer"]
ta = a["breakdown"]["compute"] + a["breakdown"]["optimizer"]
assert ta > 1.005 * tb, (ta, tb)
' "$tmp/allB.json" "$tmp/listA.json"
check "half the servers on the slower chip: the step is the slower chip's compute plus the reduction" \
  python3 -c '
import json, sys
h, a = (json.load(open(f)) for f in sys.argv[1:3])
ba = a["breakdown"]
want = ba["compute"] + ba["optimizer"] + ba["exposed_dp_comm"]
assert abs(h["step_time_s"] - want) <= 1e-6 * want, (h["step_time_s"], want)
assert abs(h["step_time_s"] - a["step_time_s"]) <= 1e-6 * want
assert h["simulated_npus"] == 32, "chips differ: every rank replayed"
' "$tmp/half.json" "$tmp/listA.json"
check "the fast ranks show the difference as straggler_wait" python3 -c '
import json, sys
h, b = (json.load(open(f)) for f in sys.argv[1:3])
grow = h["step_time_s"] - b["step_time_s"]
bh, bb = h["breakdown"], b["breakdown"]
assert bb["straggler_wait"] == 0 and bh["compute"] == bb["compute"], "rank 0 runs chip B"
extra = bh["straggler_wait"] + bh["exposed_dp_comm"] - bb["exposed_dp_comm"]
assert bh["straggler_wait"] > 0.5 * grow and abs(extra - grow) <= 1e-3 * grow, (extra, grow)
' "$tmp/half.json" "$tmp/allB.json"
check "energy: each rank on its own chip (compute and HBM the mean of the uniform runs)" \
  python3 -c '
import json, sys
h, b, a = (json.load(open(f))["energy"] for f in sys.argv[1:4])
# JSON prints 9 significant digits: each of the three figures is off by up to
# half a unit of its last digit, 5e-9 of it relative, so equal as printed means
# within 1e-8 (1e-9 passed only while the rounding happened to cancel)
for k in ("compute_J", "hbm_J"):
    want = (a[k] + b[k]) / 2
    assert abs(h[k] - want) <= 1e-8 * want, (k, h[k], want)
assert h["modelled"]
' "$tmp/half.json" "$tmp/allB.json" "$tmp/listA.json"
check "memory against the smaller HBM, MFU against the mean peak" python3 -c '
import json, sys
h, b, a = (json.load(open(f)) for f in sys.argv[1:4])
assert a["memory"]["capacity_GiB"] < b["memory"]["capacity_GiB"]
assert h["memory"]["capacity_GiB"] == a["memory"]["capacity_GiB"], h["memory"]
assert h["memory"]["fits"] == (h["memory"]["peak_GiB"] <= a["memory"]["capacity_GiB"])
peak = lambda r: r["model_tflops_per_npu"] / r["mfu"]
want = h["model_tflops_per_npu"] / ((peak(a) + peak(b)) / 2)
assert abs(h["mfu"] - want) <= 1e-5 * want, (h["mfu"], want)
' "$tmp/half.json" "$tmp/allB.json" "$tmp/listA.json"
check "analytic and flow agree (step and wait within 1%)" python3 -c '
import json, sys
a, f = (json.load(open(x)) for x in sys.argv[1:3])
assert abs(a["step_time_s"] - f["step_time_s"]) <= 0.01 * a["step_time_s"]
wa, wf = a["breakdown"]["straggler_wait"], f["breakdown"]["straggler_wait"]
assert abs(wa - wf) <= 0.01 * wa, (wa, wf)
' "$tmp/half.json" "$tmp/half_flow.json"
$train --system $B --set cluster.node_types=2-3:$A --chrome-trace "$tmp/half.trace.json" >/dev/null
check "the Chrome trace is valid and shows the fast ranks' waits" sh -c "
  python3 tests/e2e/check_chrome_trace.py '$tmp/half.trace.json' >/dev/null &&
  grep -q '\"straggler wait\"' '$tmp/half.trace.json'"
check "one range or two of the same chip give the same bytes" cmp "$tmp/half.json" "$tmp/half2.json"
check "the shipped mixed system trains (pipeline stage 1 on its 910A servers)" bash -c "
  '$npusim' train --system configs/systems/ascend-910-mixed.json \
    --workload configs/workloads/llama2-7b.json --set workload.parallel.dp=16 \
    --set workload.training.precision=fp16 | grep -q 'tightest stage on its chip'"

# The default chip is not asked for what no rank of the job runs on it:
# ascend-910a.json (no bf16) with every server on the 910B chip trains bf16 as
# ascend-910a.json's fabric with the 910B chip as its default does.
mkdir -p "$tmp/sys"
python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
a["chip"] = b["chip"]
json.dump(a, open(sys.argv[3], "w"))
' "$A" "$B" "$tmp/910a-fabric-910b-chip.json"
cat >"$tmp/sys/a-allB.json" <<JSON
{"extends": "$PWD/$A", "cluster": {"node_types": "0-3:$PWD/$B"}}
JSON
cat >"$tmp/sys/a-halfB.json" <<JSON
{"extends": "$PWD/$A", "cluster": {"node_types": "0-1:$PWD/$B"}}
JSON
bf16="$npusim train --workload configs/workloads/llama2-7b.json --set workload.parallel.tp=1
  --set workload.parallel.pp=1 --set workload.parallel.dp=32 --set workload.parallel.zero=1
  --set workload.parallel.sequence_parallel=false --set workload.training.global_batch=64
  --set workload.training.precision=bf16 --format json"
$bf16 --system "$tmp/sys/a-allB.json" >"$tmp/a-allB.json"
$bf16 --system "$tmp/910a-fabric-910b-chip.json" >"$tmp/a-fabric-b-chip.json"
check "bf16 on a 910A system whose servers all carry the 910B chip equals the 910B chip on its fabric" \
  python3 -c '
import json, sys
l, d = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("step_time_s", "mfu", "breakdown", "memory", "energy", "simulated_npus"):
    assert l[k] == d[k], (k, l[k], d[k])
' "$tmp/a-allB.json" "$tmp/a-fabric-b-chip.json"
expect_line "a mixed 910A system refuses bf16, naming a rank on a 910A server" \
  "--set: training.precision: expected a precision every chip of the job computes (rank 16, server 2: chip.cube.bf16_macs_per_cycle = 0 in $tmp/sys/a-halfB.json, its default chip), found \"bf16\"" \
  $bf16 --system "$tmp/sys/a-halfB.json"
rep="$npusim replay --trace traces/mixed.json --format json"
$rep --system $A --set cluster.node_types=0-1:$B >"$tmp/rep-allB.json"
$rep --system "$tmp/910a-fabric-910b-chip.json" >"$tmp/rep-b-chip.json"
check "replay: a bf16 trace on a 910A system whose servers all carry the 910B chip" python3 -c '
import json, sys
l, d = (json.load(open(f)) for f in sys.argv[1:3])
assert l["step_time_s"] == d["step_time_s"] > 0, (l["step_time_s"], d["step_time_s"])
' "$tmp/rep-allB.json" "$tmp/rep-b-chip.json"
expect_line "replay names the first rank on the default chip when it cannot run an op" \
  "traces/mixed.json: rank 0 op 2: dtype: expected a type the cube of ascend-910a computes, found bf16 (chip.cube.bf16_macs_per_cycle = 0)" \
  $rep --system $A --set cluster.node_types=1:$B
cat >"$tmp/wl8.json" <<JSON
{"extends": "$PWD/configs/workloads/llama2-7b.json", "parallel": {"tp": 1, "pp": 1, "dp": 8,
 "zero": 1, "sequence_parallel": false}, "training": {"global_batch": 16, "precision": "bf16"}}
JSON
"$npusim" cluster --system $B --set cluster.nodes=2 --set cluster.node_types=0:$A \
  --job "$tmp/wl8.json@8-15" --steps 1 --format json >"$tmp/cluster8.json"
$npusim train --system $B --workload "$tmp/wl8.json" --format json >"$tmp/train8.json"
check "cluster: a bf16 job placed on the 910B server beside a 910A one runs as on 910B alone" \
  python3 -c '
import json, sys
c, t = (json.load(open(f)) for f in sys.argv[1:3])
assert c["jobs"][0]["step_time_alone_s"] == t["step_time_s"], (c["jobs"][0], t["step_time_s"])
' "$tmp/cluster8.json" "$tmp/train8.json"
expect_line "cluster: a bf16 job placed on the 910A server is refused, naming its first NPU there" \
  "$tmp/wl8.json: npusim cluster: rank 8 op 2: dtype: expected a type the cube of ascend-910a computes, found bf16 (chip.cube.bf16_macs_per_cycle = 0)" \
  "$npusim" cluster --system $B --set cluster.nodes=2 --set cluster.node_types=1:$A \
  --job "$tmp/wl8.json@8-15" --steps 1

# validate's JSON names each file by its absolute path (loads from anywhere);
# a path the key cannot hold is refused, not printed relative
real=$(cd "$tmp" && pwd -P)
pad=$(printf '%*s' $((201 - ${#real} - 8)) '' | tr ' ' p) # $real/$pad/a.json: 201 characters
mkdir -p "$tmp/$pad" "$tmp/x:y"
cp $A "$tmp/$pad/a.json"
cp $A "$tmp/x:y/a.json"
ln -s "$tmp/x:y" "$tmp/colon"
cat >"$tmp/$pad/long.json" <<JSON
{"extends": "$PWD/$B", "cluster": {"node_types": "2-3:a.json"}}
JSON
cat >"$tmp/sys/colon.json" <<JSON
{"extends": "$PWD/$B", "cluster": {"node_types": "1:../colon/a.json"}}
JSON
case "$npusim" in /*) exe=$npusim ;; *) exe=$PWD/$npusim ;; esac
check "validate's JSON loads back to the same JSON from another directory" bash -c "
  cd '$tmp' && '$exe' validate --system '$PWD/configs/systems/ascend-910-mixed.json' \\
    --format json >canon.json && grep -q '\"2-3:/' canon.json &&
  cd / && '$exe' validate --system '$tmp/canon.json' --format json | cmp - '$tmp/canon.json'"
check "a long absolute path still runs and validates as a table" \
  "$npusim" validate --system "$tmp/$pad/long.json"
expect_line "validate's JSON refuses a file whose absolute path is too long for the key" \
  "$tmp/$pad/long.json: cluster.node_types: expected files whose absolute paths the key can hold (for npusim validate's JSON), found \"2-3:a.json\" (its absolute path has 201 characters, over 200)" \
  $npusim validate --system "$tmp/$pad/long.json" --format json
expect_line "validate's JSON refuses a file whose absolute path has a ':'" \
  "$tmp/sys/colon.json: cluster.node_types: expected files whose absolute paths the key can hold (for npusim validate's JSON), found \"1:../colon/a.json\" (its absolute path \"$real/x:y/a.json\" has a ',' or ':')" \
  $npusim validate --system "$tmp/sys/colon.json" --format json

# bad node lists
cat >"$tmp/sys/overlap.json" <<JSON
{"extends": "$PWD/$B", "cluster": {"node_types": "0-3:$PWD/$A,2-5:$PWD/$A"}}
JSON
cat >"$tmp/sys/badchip.json" <<JSON
{"extends": "$PWD/$A", "chip": {"cube": {"cores": 0}}}
JSON
cat >"$tmp/sys/refbad.json" <<JSON
{"extends": "$PWD/$B", "cluster": {"node_types": "1:badchip.json"}}
JSON
expect_line "overlapping ranges in a file name the file and the key" \
  "$tmp/sys/overlap.json: cluster.node_types: expected server ranges that do not overlap, found server 2 in 0-3 and 2-5" \
  $npusim validate --system "$tmp/sys/overlap.json"
expect_line "overlapping ranges from --set" \
  "--set: cluster.node_types: expected server ranges that do not overlap, found server 1 in 0-1 and 1" \
  $npusim validate --system $B --set cluster.node_types=0-1:$A,1:$A
expect_line "a range beyond cluster.nodes" \
  "--set: cluster.node_types: expected servers below cluster.nodes = 2, found 3" \
  $npusim validate --system $B --set cluster.nodes=2 --set cluster.node_types=2-3:$A
expect_line "a range beyond the job's servers" \
  "$B: cluster.node_types: expected servers below the job's 4 (configs/workloads/llama2-7b.json), found 4" \
  $train --system $B --set cluster.node_types=4:$A
expect_line "an entry without a file" \
  '--set: cluster.node_types: expected servers and system files, "S[-S]:FILE,..." (at most 8 entries), found "0-3"' \
  $npusim validate --system $B --set cluster.node_types=0-3
expect_line "a file that is not there" \
  "--set: cluster.node_types: expected readable system config files, found \"nope.json\" (No such file or directory)" \
  $npusim validate --system $B --set cluster.node_types=0:nope.json
expect_line "a referenced chip is checked in its own file (paths from the including file)" \
  "$tmp/sys/badchip.json: chip.cube.cores: expected an integer in [1, 4096], found 0" \
  $npusim validate --system "$tmp/sys/refbad.json"
expect_line "a referenced file with node types of its own" \
  "--set: cluster.node_types: expected system files without node types of their own, found \"configs/systems/ascend-910-mixed.json\", whose cluster.node_types is \"2-3:ascend-910a.json\"" \
  $npusim validate --system $B --set cluster.node_types=0:configs/systems/ascend-910-mixed.json
expect_line "a precision one of the chips lacks" \
  "--set: training.precision: expected a precision every chip of the job computes (rank 8, server 1: chip.cube.bf16_macs_per_cycle = 0 in $A, cluster.node_types of $B), found \"bf16\"" \
  $train --system $B --set cluster.node_types=1:$A --set workload.training.precision=bf16
expect_line "replay names the first rank on the chip that cannot run an op" \
  "traces/mixed.json: rank 8 op 2: dtype: expected a type the cube of ascend-910a computes, found bf16 (chip.cube.bf16_macs_per_cycle = 0)" \
  $npusim replay --system $B --trace traces/mixed.json --set cluster.node_types=1:$A
# serve places each pool on its node type's servers (tests/e2e/serve_pools_e2e.sh):
# a pool that names none runs on the default chip's
check "serve runs a pool without node_type on the default chip's servers" bash -c "
  $npusim serve --system configs/systems/ascend-910-mixed.json \
    --workload configs/workloads/serve-llama3-8b.json | grep -qx 'chips     colocated on ascend-910b2 (ranks 0-0)'"
finish hetero_e2e
