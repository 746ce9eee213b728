#!/usr/bin/env bash
# variation_e2e.sh NPUSIM - stragglers (chip.variation) end to end, with known
# answers: in pure data parallelism one rank at half speed takes the step to
# the uniform step plus the slow rank's extra compute (its compute and
# optimizer time again), the other ranks wait for it at the gradient
# reduction (straggler_wait) and the analytic and flow fidelities agree; a
# uniform run waits for nobody; seeded jitter and speed draws give the same
# bytes for the same seed and other bytes for another; a range beyond the job
# is one line, exit 2; the Chrome trace nests each wait inside its collective.
# Run from the repository root.
set -u
npusim=${1:?usage: variation_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
train="$npusim train --system configs/systems/ascend-910b.json --workload configs/workloads/llama2-7b.json
  --set workload.parallel.tp=1 --set workload.parallel.pp=1 --set workload.parallel.dp=8
  --set workload.parallel.sequence_parallel=false --set workload.training.global_batch=64
  --format json"
$train >"$tmp/uniform.json"
$train --set chip.variation.speed_factors=3:0.5 >"$tmp/slow.json"
$train --set chip.variation.speed_factors=3:0.5 --fidelity flow >"$tmp/slow_flow.json"
$train --set chip.variation.speed_factors=0-7:1 >"$tmp/all_ranks.json"
check "every rank replayed at speed 1 gives the representatives' step" python3 -c '
import json, sys
u, a = (json.load(open(f)) for f in sys.argv[1:3])
assert a["simulated_npus"] == 8 and a["step_time_s"] == u["step_time_s"], (a["step_time_s"], u["step_time_s"])
' "$tmp/uniform.json" "$tmp/all_ranks.json"
check "energy: its parts add up, the power lies between idle and the limit, tokens/J = tokens/J" python3 -c '
import json, sys
u, a, s = (json.load(open(f)) for f in sys.argv[1:4])
e = u["energy"]
assert e["modelled"] and e["step_J"] > 0
parts = e["idle_J"] + e["compute_J"] + e["hbm_J"] + e["links_J"]
assert abs(parts - e["step_J"]) <= 1e-6 * e["step_J"], (parts, e["step_J"])
w = e["avg_power_W_per_npu"]
assert 90 < w <= 350, w  # ascend-910b.json: idle_W 90, max_W 350
assert abs(e["tokens_per_J"] - u["tokens_per_s"] * u["step_time_s"] / e["step_J"]) <= 1e-4 * e["tokens_per_J"]
assert a["energy"] == e, "replaying every rank changed the energy"
# a straggler costs the idle power of everyone waiting for it
assert s["energy"]["step_J"] > e["step_J"] and s["energy"]["compute_J"] == e["compute_J"]
' "$tmp/uniform.json" "$tmp/all_ranks.json" "$tmp/slow.json"
check "one rank at half speed: the uniform step plus that rank's compute again" python3 -c '
import json, sys
u, s = (json.load(open(f)) for f in sys.argv[1:3])
b = u["breakdown"]
want = u["step_time_s"] + (b["compute"] + b["optimizer"]) * (1 / 0.5 - 1)
assert abs(s["step_time_s"] - want) <= 1e-3 * want, (s["step_time_s"], want)
assert s["simulated_npus"] == 8 and u["simulated_npus"] == 1
' "$tmp/uniform.json" "$tmp/slow.json"
check "the fast ranks wait for it at the gradient reduction" python3 -c '
import json, sys
u, s = (json.load(open(f)) for f in sys.argv[1:3])
grow = s["step_time_s"] - u["step_time_s"]
bu, bs = u["breakdown"], s["breakdown"]
assert bu["straggler_wait"] == 0
extra = bs["straggler_wait"] + bs["exposed_dp_comm"] - bu["exposed_dp_comm"]
assert bs["straggler_wait"] > 0.9 * grow and abs(extra - grow) <= 1e-3 * grow, (extra, grow)
' "$tmp/uniform.json" "$tmp/slow.json"
check "analytic and flow agree on the straggler (step and wait within 1%)" python3 -c '
import json, sys
a, f = (json.load(open(x)) for x in sys.argv[1:3])
for k in ("step_time_s",):
    assert abs(a[k] - f[k]) <= 0.01 * a[k], (a[k], f[k])
wa, wf = a["breakdown"]["straggler_wait"], f["breakdown"]["straggler_wait"]
assert abs(wa - wf) <= 0.01 * wa, (wa, wf)
' "$tmp/slow.json" "$tmp/slow_flow.json"
for seed in 1 1 2; do
  $train --set chip.variation.jitter_sigma=0.05 --set chip.variation.speed_sigma=0.03 \
    --set chip.variation.seed=$seed >>"$tmp/seed$seed.json"
done
check "the same seed gives the same bytes" python3 -c '
import sys
t = open(sys.argv[1]).read()
half = len(t) // 2
assert t[:half] == t[half:], "two runs of seed 1 differ"
' "$tmp/seed1.json"
check "another seed gives another step" sh -c "! cmp -s '$tmp/seed2.json' '$tmp/uniform.json' &&
  python3 -c 'import json,sys; a=json.loads(open(sys.argv[1]).read()[:len(open(sys.argv[1]).read())//2]); b=json.load(open(sys.argv[2])); assert a[\"step_time_s\"] != b[\"step_time_s\"]' '$tmp/seed1.json' '$tmp/seed2.json'"
check "jitter makes the ranks wait for each other" python3 -c '
import json, sys
u = json.load(open(sys.argv[1]))
j = json.loads(open(sys.argv[2]).read()[: len(open(sys.argv[2]).read()) // 2])
assert j["breakdown"]["straggler_wait"] > 0
' "$tmp/uniform.json" "$tmp/seed1.json"
$train --set chip.variation.speed_factors=3:0.5 --chrome-trace "$tmp/slow.trace.json" >/dev/null
check "the Chrome trace is valid and shows the waits inside the collectives" sh -c "
  python3 tests/e2e/check_chrome_trace.py '$tmp/slow.trace.json' >/dev/null &&
  grep -q '\"straggler wait\"' '$tmp/slow.trace.json'"
expect_line "a range beyond the job" \
  "configs/systems/ascend-910b.json: chip.variation.speed_factors: expected ranks below the job's 8 (configs/workloads/llama2-7b.json), found 8" \
  $train --set chip.variation.speed_factors=8:0.5
expect_line "a factor of 0" \
  '--set: chip.variation.speed_factors: expected ranks and speed factors, "R[-R]:FACTOR,..." (FACTOR in [0.01, 100]), found "3:0"' \
  $train --set chip.variation.speed_factors=3:0
finish variation_e2e
