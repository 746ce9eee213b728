#!/usr/bin/env bash
# hetero_e2e.sh NPUSIM - servers of different chips (cluster.node_types) end
# to end, with known answers: a node list giving every server chip B equals
# the system whose default chip is B on the same fabric; in pure data
# parallelism with half the servers on a slower chip the step is the slow
# chip's step (its compute and optimizer plus the gradient reduction), the
# fast ranks show the difference as straggler_wait, energy is the mean of the
# two uniform clusters', memory is checked against the smaller HBM, and the
# analytic and flow fidelities agree; an empty list changes no byte; bad node
# lists are one line, exit 2. Run from the repository root.
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
for k in ("compute_J", "hbm_J"):
    want = (a[k] + b[k]) / 2
    assert abs(h[k] - want) <= 1e-9 * want, (k, h[k], want)
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
  python3 tests/check_chrome_trace.py '$tmp/half.trace.json' >/dev/null &&
  grep -q '\"straggler wait\"' '$tmp/half.trace.json'"
check "one range or two of the same chip give the same bytes" cmp "$tmp/half.json" "$tmp/half2.json"
check "the shipped mixed system trains (pipeline stage 1 on its 910A servers)" bash -c "
  '$npusim' train --system configs/systems/ascend-910-mixed.json \
    --workload configs/workloads/llama2-7b.json --set workload.parallel.dp=16 \
    --set workload.training.precision=fp16 | grep -q 'tightest stage on its chip'"

# bad node lists
mkdir -p "$tmp/sys"
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
  "--set: training.precision: expected a precision every chip computes (chip.cube.bf16_macs_per_cycle = 0 in $A, cluster.node_types of $B), found \"bf16\"" \
  $train --system $B --set cluster.node_types=1:$A --set workload.training.precision=bf16
expect_line "replay names the first rank on the chip that cannot run an op" \
  "traces/mixed.json: rank 8 op 2: dtype: expected a type the cube of ascend-910a computes, found bf16 (chip.cube.bf16_macs_per_cycle = 0)" \
  $npusim replay --system $B --trace traces/mixed.json --set cluster.node_types=1:$A
expect_line "serve refuses node types" \
  "configs/systems/ascend-910-mixed.json: cluster.node_types: expected \"\" with npusim serve (serving costs every instance on the default chip), found servers 2-3 on \"ascend-910a.json\"" \
  $npusim serve --system configs/systems/ascend-910-mixed.json --workload configs/workloads/serve-llama3-8b.json
finish hetero_e2e
