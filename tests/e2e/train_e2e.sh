#!/usr/bin/env bash
# train_e2e.sh NPUSIM - end-to-end checks of `npusim train`, one process per
# simulation (SimGrid runs once per process):
#   - every parallel plan (dp, tp+sp, pp+vpp (even and per virtual stage), cp as ring, Ulysses, hybrid and
#     all-gather, ep, ep folded over tp,
#     latent attention with multi-token prediction, ZeRO 0-3, recompute,
#     Megatron's and a custom rank order) replays to the end in both
#     fidelities, with the documented JSON fields and a breakdown that adds up
#     to the step;
#   - flow simulates only the ranks whose traffic meets and gives what the
#     flow of every rank gives, with and without contention on shared links;
#   - laws: analytic representatives give the same step as replaying every
#     rank; flow only adds contention; recompute none < selective < full;
#     1F1B's bubble shrinks with micro-batches as (m + p - 1) / m says and
#     interleaving shortens it; DualPipeV's is less than half of 1F1B's; faster scale-up links never slow a TP step;
#   - TP communication fused with its matmuls hides the forward's on large
#     shapes;
#   - overlapped all-to-alls (1F1B merged passes) hide all the EP time of
#     the merged passes;
#   - a plan that does not fit HBM says so with its overshoot;
#   - the same inputs give byte-identical JSON and Chrome traces;
#   - the analytic sweep gives the bytes of the SimGrid actors it replaces;
#   - --emit-trace writes the step's programs as a trace that replay runs to
#     the same step time.
# Run from the repository root.
set -u
npusim=$1
sys=configs/systems/ascend-910b.json
tiny=tests/data/train/tiny.json
moe=tests/data/train/tiny-moe.json
mla=tests/data/train/tiny-mla.json
source "$(dirname "$0")/e2e_lib.sh"
# train OUT WORKLOAD FIDELITY [--set ...]: JSON result in $tmp/OUT.json
train() {
  local out=$1 wl=$2 fid=$3
  shift 3
  "$npusim" train --system $sys --workload "$wl" --fidelity "$fid" --format json "$@" \
    >"$tmp/$out.json" 2>"$tmp/$out.err" || { echo "train $out failed: $(cat "$tmp/$out.err")"; }
}
step() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$tmp/$1.json"; }
# holds A OP B: a float comparison in Python, e.g. holds 1.0 '<' 2.0
holds() { python3 -c "import sys; a, b = eval(sys.argv[1]), eval(sys.argv[3]); sys.exit(0 if eval('a ' + sys.argv[2] + ' b') else 1)" "$@" || { echo "not: $1 $2 $3"; return 1; }; }

plans=(
  "dp8:$tiny:parallel.dp=8 parallel.tp=1 parallel.pp=1 training.global_batch=16"
  "tp_sp:$tiny:parallel.tp=4 parallel.sequence_parallel=true parallel.dp=1 parallel.recompute=selective training.flash_attention=false"
  "vpp_full:$tiny:parallel.pp=4 parallel.vpp=2 parallel.tp=1 parallel.recompute=full training.global_batch=16"
  "vpp_uneven:$tiny:parallel.pp=2 parallel.vpp=2 parallel.tp=1 parallel.stage_layers=1,3,3,1 training.global_batch=16"
  "cp_zero3:$tiny:parallel.cp=2 parallel.dp=1 parallel.zero=3"
  "cp_ulysses:$tiny:parallel.cp=2 parallel.dp=1 parallel.cp_algo=ulysses"
  "cp_hybrid:$tiny:parallel.cp=4 parallel.dp=1 parallel.tp=1 parallel.cp_algo=hybrid parallel.cp_ulysses=2"
  "cp_allgather:$tiny:parallel.cp=2 parallel.dp=1 parallel.cp_algo=allgather"
  "zero1_nooverlap:$tiny:parallel.zero=1 training.overlap_grad_reduce=false"
  "order:$tiny:parallel.order=tp-pp-dp-cp"
  "ep:$moe:"
  "mla_mtp:$mla:parallel.tp=2 parallel.sequence_parallel=true"
  "tp_fused:$tiny:parallel.tp=4 parallel.sequence_parallel=true parallel.dp=1 training.overlap_tp_comm=true"
  "ep_folded:$moe:parallel.sequence_parallel=true parallel.ep=8 parallel.etp=1"
  "dualpipev:$moe:parallel.vpp=2 parallel.pp_schedule=dualpipev training.global_batch=16 training.overlap_moe_a2a=true"
)
for plan in "${plans[@]}"; do
  IFS=: read -r name wl sets <<<"$plan"
  args=()
  for s in $sets; do args+=(--set "$s"); done
  train "$name.analytic" "$wl" analytic "${args[@]}"
  train "$name.flow" "$wl" flow "${args[@]}"
  check "$name: JSON fields and a breakdown that adds up" python3 -c 'import json,sys
for f in sys.argv[1:]:
    r = json.load(open(f))
    for k in ("step_time_s", "tokens_per_s", "tokens_per_s_per_npu", "model_tflops_per_npu",
              "hw_tflops_per_npu", "mfu", "breakdown", "memory"):
        assert k in r, (f, k)
    b = r["breakdown"]
    for k in ("compute", "exposed_tp_comm", "exposed_dp_comm", "exposed_pp_comm",
              "exposed_ep_comm", "exposed_cp_comm", "pipeline_bubble", "optimizer"):
        assert k in b and b[k] >= -1e-9, (f, k, b)
    total = sum(b.values())
    assert abs(total - r["step_time_s"]) <= 1e-6 * r["step_time_s"], (f, total, r["step_time_s"])
    assert [s["stage"] for s in r["stages"]] == list(range(len(r["stages"]))) and r["stages"]
    for s in r["stages"]:  # the parts of every stage add up to the step too
        parts = sum(v for k, v in s.items() if k != "stage")
        assert abs(parts - r["step_time_s"]) <= 1e-6 * r["step_time_s"], (f, s)
    assert 0 < r["mfu"] < 1 and r["hw_tflops_per_npu"] >= r["model_tflops_per_npu"]' \
    "$tmp/$name.analytic.json" "$tmp/$name.flow.json"
  check "$name: flow only adds contention" holds "$(step "$name.flow")" '>=' "$(step "$name.analytic") * 0.97"
done

# 1F1B with the all-to-alls overlapped (no pipeline, 16 micro-batches, the
# all-to-alls shorter than the compute beside them): every pass but the first
# forward and the last backward is merged, so the step is the one without
# overlap less all its exposed EP time but those two passes' share (1/16)
a2a_sets=(--set parallel.pp=1 --set parallel.tp=1 --set parallel.dp=16 --set training.global_batch=256)
train a2a_plain "$moe" analytic "${a2a_sets[@]}"
train a2a_overlap "$moe" analytic "${a2a_sets[@]}" --set training.overlap_moe_a2a=true
train a2a_overlap_flow "$moe" flow "${a2a_sets[@]}" --set training.overlap_moe_a2a=true
check "overlapped all-to-alls: the step less the hidden EP time" python3 -c 'import json,sys
plain, over, flow = (json.load(open(f)) for f in sys.argv[1:])
ep = plain["breakdown"]["exposed_ep_comm"]
want = plain["step_time_s"] - ep * (1 - 1 / 16)
assert abs(over["step_time_s"] - want) <= 0.01 * want, (over["step_time_s"], want)
assert over["breakdown"]["exposed_ep_comm"] <= ep / 8, over["breakdown"]
assert over["breakdown"]["compute"] == plain["breakdown"]["compute"]
assert abs(flow["step_time_s"] - over["step_time_s"]) <= 0.01 * over["step_time_s"]' \
  "$tmp/a2a_plain.json" "$tmp/a2a_overlap.json" "$tmp/a2a_overlap_flow.json"
# on the interleaved pipeline the merged passes hide part of the EP time too
vpp_sets=(--set parallel.pp=2 --set parallel.vpp=2 --set training.global_batch=16)
train a2a_vpp_plain "$moe" analytic "${vpp_sets[@]}"
train a2a_vpp_overlap "$moe" analytic "${vpp_sets[@]}" --set training.overlap_moe_a2a=true
check "overlapped all-to-alls on the interleaved pipeline" python3 -c 'import json,sys
plain, over = (json.load(open(f)) for f in sys.argv[1:])
assert over["breakdown"]["exposed_ep_comm"] < 0.8 * plain["breakdown"]["exposed_ep_comm"], \
  (over["breakdown"], plain["breakdown"])
assert over["step_time_s"] < plain["step_time_s"]' "$tmp/a2a_vpp_plain.json" "$tmp/a2a_vpp_overlap.json"

# TP communication fused with its matmuls hides the forward's gathers and
# reductions on shapes whose chunks stay large (16K tokens, hidden 4096 over
# tp 4): a shorter step, less exposed TP time, the same FLOPs
big=(--set parallel.tp=4 --set parallel.dp=1 --set parallel.pp=1 --set training.global_batch=1
     --set model.seq_len=16384 --set model.hidden=4096 --set model.heads=32 --set model.kv_heads=8
     --set parallel.sequence_parallel=true)
train tp_plain "$tiny" analytic "${big[@]}"
train tp_fused_big "$tiny" analytic "${big[@]}" --set training.overlap_tp_comm=true
check "fused TP communication hides the forward's" python3 -c 'import json,sys
plain, fused = (json.load(open(f)) for f in sys.argv[1:])
assert fused["step_time_s"] < plain["step_time_s"], (fused["step_time_s"], plain["step_time_s"])
assert fused["breakdown"]["exposed_tp_comm"] < 0.9 * plain["breakdown"]["exposed_tp_comm"]
assert fused["model_tflops_per_npu"] > plain["model_tflops_per_npu"]' \
  "$tmp/tp_plain.json" "$tmp/tp_fused_big.json"

# analytic representatives against flow: with contention-free placement (one
# server) they must agree closely
check "dp8: analytic representatives agree with flow (one server)" \
  holds "$(step dp8.flow)" '<=' "$(step dp8.analytic) * 1.03"

train none "$tiny" analytic --set parallel.recompute=none
train sel "$tiny" analytic --set parallel.recompute=selective
train full "$tiny" analytic --set parallel.recompute=full
check "recompute: none < selective" holds "$(step none)" '<' "$(step sel)"
check "recompute: selective < full" holds "$(step sel)" '<' "$(step full)"
check "recompute: full repeats the forward, < 1.45 x none" holds "$(step full)" '<' "$(step none) * 1.45"

pp="--set parallel.pp=4 --set parallel.tp=1 --set parallel.dp=1"
train m4 "$tiny" analytic $pp --set training.global_batch=4
train m16 "$tiny" analytic $pp --set training.global_batch=16
train v2 "$tiny" analytic $pp --set training.global_batch=4 --set parallel.vpp=2
ratio=$(python3 -c "print($(step m16) / $(step m4))")
check "1F1B: 16 vs 4 micro-batches on 4 stages near (16+3)/(4+3) = 2.71 (got $ratio)" \
  bash -c "holds() { python3 -c 'import sys; sys.exit(0 if 2.71 * 0.9 < float(sys.argv[1]) < 2.71 * 1.1 else 1)' \"\$1\"; }; holds $ratio"
check "interleaving shortens the bubble" holds "$(step v2)" '<' "$(step m4)"
# DualPipeV on 4 stages (8 micro-batches; a small vocabulary so that no stage
# is held up by the LM head): its bubble, (pp - 1)(F&B + B - 3W) per chunk,
# is less than half of 1F1B's (pp - 1)(F + B) per stage, so the step is shorter
# (the exact bubble is pipeline_dualpipev's unit test)
even="--set model.seq_len=8192 --set model.vocab=1024 --set training.overlap_p2p_comm=true --set training.global_batch=8"
train ones "$tiny" analytic $pp $even
train dpv "$tiny" analytic $pp $even --set parallel.vpp=2 --set parallel.pp_schedule=dualpipev
train dpv_flow "$tiny" flow $pp $even --set parallel.vpp=2 --set parallel.pp_schedule=dualpipev
check "DualPipeV: less than half of 1F1B's bubble, a shorter step, flow agrees" python3 -c 'import json,sys
one, dpv, flow = (json.load(open(f)) for f in sys.argv[1:])
bubble = lambda r: r["breakdown"]["pipeline_bubble"]
assert bubble(dpv) < 0.5 * bubble(one), (bubble(dpv), bubble(one))
assert dpv["step_time_s"] < one["step_time_s"], (dpv["step_time_s"], one["step_time_s"])
assert abs(flow["step_time_s"] - dpv["step_time_s"]) <= 0.01 * dpv["step_time_s"]' \
  "$tmp/ones.json" "$tmp/dpv.json" "$tmp/dpv_flow.json"
# FlagScale's DualPipeV test model (tests/data/train/flagscale-11b-a2b.json):
# its PR measured +4% to +11% throughput with DualPipeV and overlapped
# all-to-alls, against a baseline it does not name; npusim's gain over plain
# 1F1B and over interleaved 1F1B with overlapped all-to-alls both fall in it
fs=tests/data/train/flagscale-11b-a2b.json
"$npusim" train --system configs/systems/h100-dgx.json --workload $fs --format json >"$tmp/fs_1f1b.json"
"$npusim" train --system configs/systems/h100-dgx.json --workload $fs --format json --set parallel.vpp=2 \
  --set training.overlap_moe_a2a=true >"$tmp/fs_vpp.json"
"$npusim" train --system configs/systems/h100-dgx.json --workload $fs --format json --set parallel.vpp=2 \
  --set training.overlap_moe_a2a=true --set parallel.pp_schedule=dualpipev >"$tmp/fs_dpv.json"
check "DualPipeV on FlagScale's 11B-A2B: +4% to +11% as its PR measured" python3 -c 'import json,sys
one, vpp, dpv = (json.load(open(f))["step_time_s"] for f in sys.argv[1:])
for base in (one, vpp):
    gain = base / dpv - 1
    print(f"  DualPipeV gain {gain:+.1%} (published +4% .. +11%)")
    assert 0.04 <= gain <= 0.11, gain' "$tmp/fs_1f1b.json" "$tmp/fs_vpp.json" "$tmp/fs_dpv.json"

tp8="--set model.kv_heads=8 --set parallel.tp=8 --set parallel.sequence_parallel=true --set parallel.pp=1 --set parallel.dp=1 --set training.global_batch=2"
train hccs "$tiny" flow $tp8
train hccs2 "$tiny" flow $tp8 --set node.scale_up.link_bandwidth_GBps=56
check "faster HCCS links shorten a TP step" holds "$(step hccs2)" '<' "$(step hccs)"

train big configs/workloads/llama2-70b.json analytic --set parallel.pp=1 --set parallel.vpp=1 \
  --set parallel.dp=4 --set training.global_batch=4
check "a plan that does not fit says so, with its overshoot" python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))["memory"]
assert m["fits"] is False and m["overshoot_GiB"] > 0, m
assert abs(m["peak_GiB"] - m["capacity_GiB"] - m["overshoot_GiB"]) < 1e-3, m' "$tmp/big.json"
"$npusim" train --system $sys --workload configs/workloads/llama2-70b.json --fidelity analytic \
  --set parallel.pp=1 --set parallel.vpp=1 --set parallel.dp=4 --set training.global_batch=4 \
  >"$tmp/big.txt"
check "the table says it does NOT fit" grep -q "does NOT fit, .* GiB over" "$tmp/big.txt"

for k in 1 2; do
  "$npusim" train --system $sys --workload "$tiny" --format json \
    --chrome-trace "$tmp/run$k.trace.json.gz" >"$tmp/run$k.json"
done
check "same inputs, byte-identical JSON" cmp "$tmp/run1.json" "$tmp/run2.json"
check "same inputs, byte-identical Chrome trace" cmp "$tmp/run1.trace.json.gz" "$tmp/run2.trace.json.gz"
check "the Chrome trace opens and holds every rank" python3 -c 'import gzip,json,sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
assert len({e["pid"] for e in ev if e.get("ph") == "B"}) == 8' "$tmp/run1.trace.json.gz"

# flow with representatives (replay_scope.c) against the flow of every rank:
# the same contention, so the same figures. Two servers on two leaves of 8:
# through non-blocking uplinks (1:1) the rails never meet and one rank per
# program's rail runs; at 4:1 the uplinks bind and every rank runs, slower.
for case in rails:1:2 blocking:4:16; do
  IFS=: read -r name over want <<<"$case"
  sets=(--set parallel.dp=4 --set training.global_batch=16 --set cluster.scale_out.npus_per_leaf=8
        --set cluster.scale_out.oversubscription="$over")
  train "scope.$name" "$tiny" flow "${sets[@]}"
  NPUSIM_FLOW_ALL_RANKS=1 train "all.$name" "$tiny" flow "${sets[@]}"
  check "$name: flow of the ranks that meet = flow of every rank ($want of 16 simulated)" \
    python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a.pop("simulated_npus") == int(sys.argv[3]) and b.pop("simulated_npus") == 16, sys.argv
a.pop("links"), b.pop("links")  # link figures cover the simulated traffic only...
for e in (a["energy"], b["energy"]):  # ...and so does the links energy built on them
    for k in ("links_J", "step_J", "avg_power_W_per_npu", "tokens_per_J"):
        e.pop(k)
assert a == b, (a, b)' "$tmp/scope.$name.json" "$tmp/all.$name.json" "$want"
done
check "4:1 uplinks slow the step (contention kept)" holds "$(step scope.blocking)" '>' "$(step scope.rails)"

# dense layers among MoE ones (model.moe.dense_layers, DeepSeek-V3's first 3):
# layer by layer from workloads/transformer.h; every layer dense is the dense model
train dense1 "$moe" analytic --set model.moe.dense_layers=1
train dense8 "$moe" analytic --set model.moe.dense_layers=8
train moe0 "$moe" analytic
train tiny_dp4 "$tiny" analytic --set parallel.dp=4
check "dense_layers 1: trains, its first layer a dense MLP (another step than all MoE)" \
  holds "$(step dense1)" '!=' "$(step moe0)"
check "dense_layers = layers: the MoE model trains as the dense one" python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for k in ("step_time_s", "model_tflops_per_npu", "memory"):
    assert a[k] == b[k], (k, a[k], b[k])' "$tmp/dense8.json" "$tmp/tiny_dp4.json"

# the analytic sweep against the SimGrid actors it stands in for: same bytes
for wl in "$tiny" "$moe" configs/workloads/llama2-70b.json; do
  name=$(basename "$wl" .json)
  "$npusim" train --system $sys --workload "$wl" --fidelity analytic --format json >"$tmp/$name.sweep"
  NPUSIM_REPLAY_ACTORS=1 "$npusim" train --system $sys --workload "$wl" --fidelity analytic \
    --format json >"$tmp/$name.actors"
  check "$name: the sweep gives the actors' bytes" cmp "$tmp/$name.sweep" "$tmp/$name.actors"
done

# --emit-trace: the step's rank programs as a trace, which replay runs to the
# same step time (only the step: throughput, MFU, the breakdown by part and the
# memory model are train's own and not in a trace); .gz is the same text
# compressed; a trace too large to read back is not written.
for plan in "${plans[@]}"; do
  IFS=: read -r name wl sets <<<"$plan"
  args=()
  for s in $sets; do args+=(--set "$s"); done
  train "$name.emit" "$wl" analytic "${args[@]}" --emit-trace "$tmp/$name.step.json.gz"
  "$npusim" replay --system $sys --trace "$tmp/$name.step.json.gz" --fidelity analytic \
    --format json >"$tmp/$name.replayed.json" 2>"$tmp/$name.replayed.err"
  check "$name: the emitted trace replays to train's step time" python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["step_time_s"] == b["step_time_s"] and a["npus"] == b["ranks"], (a, b)' \
    "$tmp/$name.emit.json" "$tmp/$name.replayed.json"
done
train emit_flow "$tiny" flow --emit-trace "$tmp/emit_flow.step.json"
"$npusim" replay --system $sys --trace "$tmp/emit_flow.step.json" --format json \
  >"$tmp/emit_flow.replayed.json" 2>"$tmp/emit_flow.replayed.err"
check "flow: the emitted trace replays to train's step time" python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["step_time_s"] == b["step_time_s"], (a, b)' \
  "$tmp/emit_flow.json" "$tmp/emit_flow.replayed.json"
train emit_gz "$tiny" analytic --emit-trace "$tmp/emit_gz.step.json.gz"
check "--emit-trace FILE.gz is the same text, gzip-compressed" \
  bash -c 'gzip -dc "$1" | cmp - "$2"' _ "$tmp/emit_gz.step.json.gz" "$tmp/emit_flow.step.json"
"$npusim" train --system $sys --workload configs/workloads/llama2-70b.json \
  --emit-trace "$tmp/huge.json.gz" >"$tmp/huge.out" 2>"$tmp/huge.err"
echo $? >"$tmp/huge.rc"
check "a trace too large to read back is not written: exit 1, one line, no file" bash -c '
[ "$(cat "$1.rc")" = 1 ] && [ ! -s "$1.out" ] && [ ! -e "$1.json.gz" ] && [ "$(wc -l <"$1.err")" = 1 ] &&
  grep -q "^$1.json.gz: cannot write: the trace is [0-9]* MiB of JSON; a trace must stay under 256 MiB" "$1.err"' \
  _ "$tmp/huge"
finish "train_e2e"
