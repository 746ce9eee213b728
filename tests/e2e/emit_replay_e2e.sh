#!/usr/bin/env bash
# emit_replay_e2e.sh NPUSIM - a metamorphic law of train's exports: what
# `npusim train --emit-trace FILE --emit-chakra PREFIX` writes, replayed on the
# same system (the same --set of system keys), gives train's step time, and
# the two replays give the same per-rank figures. For several plans (pipeline
# sends, TP with sequence parallelism, context parallelism, a server of
# another chip), without and with stragglers (chip.variation: speed factors,
# a drawn speed spread and per-op jitter), in both fidelities: a straggler's
# slowdown is applied once, by the replaying system, not again on top of
# durations that already hold it. Run from the repository root.
set -u
npusim=${1:?usage: emit_replay_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
sys=configs/systems/ascend-910b.json
wl=configs/workloads/llama2-7b.json

# same_step NAME FIDELITY "PLAN (workload keys)" "SYSTEM KEYS"
n=0
same_step() {
  local name=$1 fid=$2 plan=$3 keys=$4 d="$tmp/run$n"
  n=$((n + 1))
  mkdir "$d"
  # shellcheck disable=SC2086 # the keys are words
  if ! "$npusim" train --system $sys --workload $wl $plan $keys --fidelity "$fid" --format json \
      --emit-trace "$d/t.json" --emit-chakra "$d/c" >"$d/train.json" 2>"$d/err" ||
    ! "$npusim" replay --system $sys $keys --trace "$d/t.json" --fidelity "$fid" --format json \
      >"$d/trace.json" 2>"$d/err" ||
    ! "$npusim" replay --system $sys $keys --trace "$d/c" --comm-group "$d/c.comm_groups.json" \
      --fidelity "$fid" --format json >"$d/chakra.json" 2>"$d/err"; then
    bad "$name: $(cat "$d/err")"
    return
  fi
  check "$name" python3 -c '
import json, sys
t, a, b = (json.load(open(f)) for f in sys.argv[1:4])
steps = (t["step_time_s"], a["step_time_s"], b["step_time_s"])
assert steps[0] == steps[1] == steps[2], "train, --emit-trace, --emit-chakra: %r" % (steps,)
keys = ("compute_s", "comm_s", "exposed_comm_s", "idle_s")
pa = [[r[k] for k in keys] for r in a["per_rank"]]
pb = [[r[k] for k in keys] for r in b["per_rank"]]
assert pa == pb, (pa[:2], pb[:2])' "$d/train.json" "$d/trace.json" "$d/chakra.json"
}

pp="--set training.global_batch=32 --set parallel.pp=4 --set parallel.dp=2"
tp="--set training.global_batch=16 --set parallel.tp=2 --set parallel.pp=2 --set parallel.dp=2 --set parallel.sequence_parallel=true"
cp="--set training.global_batch=16 --set parallel.tp=2 --set parallel.pp=2 --set parallel.dp=2 --set parallel.cp=2"
factors="--set chip.variation.speed_factors=3:0.5,5:1.25"
drawn="--set chip.variation.speed_sigma=0.1 --set chip.variation.jitter_sigma=0.08 --set chip.variation.seed=7"
for plan in pp tp cp; do
  same_step "metamorphic: $plan, uniform" analytic "${!plan}" ""
  same_step "metamorphic: $plan, speed factors" analytic "${!plan}" "$factors"
  same_step "metamorphic: $plan, speed spread and jitter" analytic "${!plan}" "$drawn"
done
same_step "metamorphic: pp, speed factors, flow" flow "$pp" "$factors"
same_step "metamorphic: cp, speed spread and jitter, flow" flow "$cp" "$drawn"
same_step "metamorphic: cp on a 910B and a 910A server, jitter" analytic \
  "$cp --set training.precision=fp16" \
  "--set cluster.node_types=1:configs/systems/ascend-910a.json --set chip.variation.jitter_sigma=0.05"

# other tools read duration_micros: the op as it ran in train, its straggler
# included; npusim reads its own attribute, the op at the chip model's speed
check "duration_micros holds the straggler, npusim_nominal_duration_s not" python3 -c '
import sys
sys.path.insert(0, "scripts/tools")
from chakra_et import split_et, read_node
def comps(path):  # per COMP_NODE id: (duration_micros, nominal seconds)
    nodes = [read_node(m) for m in split_et(open(path, "rb").read())[1:]]
    return {n["id"]: (n["duration_micros"], n["attr"]["npusim_nominal_duration_s"])
            for n in nodes if n["type"] == 4}
slow, fast = comps(sys.argv[1]), comps(sys.argv[2])  # ranks 3 (at half speed) and 2: one program
timed = [i for i in fast if fast[i][0] > 100]
assert slow.keys() == fast.keys() and timed
assert all(abs(slow[i][0] / fast[i][0] - 2) < 0.01 for i in timed)
# the same nominal time, up to the rounding of a span (its end less its start)
assert all(abs(slow[i][1] - fast[i][1]) <= 1e-9 * fast[i][1] for i in timed)
' "$tmp/run1/c.3.et" "$tmp/run1/c.2.et"

finish emit_replay_e2e
