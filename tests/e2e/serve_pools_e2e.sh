#!/usr/bin/env bash
# serve_pools_e2e.sh NPUSIM - serving pools on different chips (a system's
# cluster.node_types, serving.*.node_type) end to end, with known answers: a
# mixed system whose two node types carry identical chips gives the plain
# disaggregated run's numbers; each pool's KV blocks follow its chip's HBM by
# the formula; a KV transfer between node types is the bytes over the NIC
# path's bandwidth plus its latency; TTFT depends on the prefill pool's chip
# only; pools on one node type follow each other; bad node types are one
# line, exit 2. Run from the repository root.
set -u
npusim=${1:?usage: serve_pools_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
M=configs/systems/h100-h200-mixed.json
W=configs/workloads/serve-llama3-70b-pd-h100-h200.json
plain="--set workload.serving.prefill.node_type= --set workload.serving.decode.node_type="
small="--set workload.serving.requests.count=40"
# h100-dgx.json's chip under another name: the node type of server 1
printf '{"extends": "%s", "chip": {"name": "h100-copy"}}\n' "$PWD/configs/systems/h100-dgx.json" \
  >"$tmp/h100copy.json"

# Every field but the system's name and where each pool lies (chip, first rank).
same_run() { python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for r in (a, b):
    r.pop("system")
    for p in r["pools"]:
        p.pop("chip", None)
        p.pop("first_rank", None)
assert a == b, "the runs differ"
PY
}

$npusim serve --system configs/systems/h100-dgx.json --workload $W $plain $small --format json \
  >"$tmp/plain.json"
$npusim serve --system configs/systems/h100-dgx.json --set cluster.node_types=1:$tmp/h100copy.json \
  --workload $W $small --set workload.serving.prefill.node_type= \
  --set workload.serving.decode.node_type=h100-copy --format json >"$tmp/copy.json"
check "two node types of identical chips give the plain disaggregated run" \
  same_run "$tmp/plain.json" "$tmp/copy.json"
check "the decode pool lies on the other node type's server" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["pools"]
assert [(x["chip"], x["first_rank"]) for x in p] == [("h100-sxm5-80gb", 0), ("h100-copy", 8)], p' \
  "$tmp/copy.json"

# H100 prefill, H200 decode: each pool's KV blocks from its own HBM. Llama-3-70B
# at TP4: weights per GPU, 80 layers of q, k, v, o and the gated MLP plus the
# embedding and LM head (bf16); activations at 8192 batched tokens and 256
# sequences (serve_cost.c's fill_memory); 80 KiB of KV per token and GPU.
$npusim serve --system $M --workload $W $small --format json >"$tmp/mixed.json"
check "each pool's KV blocks follow its chip's HBM (80 and 141 GiB x 0.9)" python3 -c '
import json, math, sys
p = json.load(open(sys.argv[1]))["pools"]
h, ffn, hd, tp, L, V = 8192, 28672, 128, 4, 80, 128256
layer = (h * 64 * hd * 2 + 2 * h * 8 * hd + 3 * h * ffn) / tp
weights = (L * layer + 2 * V * h / tp) * 2
act = 8192 * (4.0 * h + 3 * ffn / tp) * 2 + 256.0 * V / tp * 4
per_token = 2.0 * L * (8 / tp) * hd * 2
def blocks(gib):
    return math.floor((gib * 2**30 * 0.9 - weights - act) / per_token / 16)
got = [(x["chip"], x["kv_blocks_per_group"]) for x in p]
want = [("h100-sxm5-80gb", blocks(80)), ("h200-sxm-141gb", blocks(141))]
assert got == want and want[1][1] > 2 * want[0][1], (got, want)' "$tmp/mixed.json"

# One request of 2048 tokens: its KV cache, 2048 x 80 KiB per GPU of the TP4
# group, crosses GPU i's NIC on server 0 and GPU i's on server 2 (one rail
# leaf): 2 x 2.7 us + bytes / (50 GB/s x 0.94).
one="--set workload.serving.requests.count=1
  --set workload.serving.requests.prompt.distribution=fixed
  --set workload.serving.requests.output.distribution=fixed"
$npusim serve --system $M --workload $W $one --format json >"$tmp/one.json"
check "a KV transfer between node types is bytes / the NIC path's bandwidth + its latency" \
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
want = 2 * 2.7e-6 + 2048 * 81920 / (50e9 * 0.94)
assert r["kv_transfers"] == 1 and abs(r["kv_transfer_mean_s"] / want - 1) < 1e-8, (r["kv_transfer_mean_s"], want)' \
  "$tmp/one.json"

# TTFT is the prefill pool's: H100 prefill as on an all-H100 system; the
# decode steps are the H200's (faster: HBM at 4.8 against 3.35 TB/s).
$npusim serve --system configs/systems/h200-dgx.json --workload $W $plain $small --format json \
  >"$tmp/h200.json"
check "TTFT as all-H100 (the prefill pool's chip), TPOT below all-H100's" python3 -c '
import json, sys
m, a, b = (json.load(open(f)) for f in sys.argv[1:4])
assert m["ttft_s"] == a["ttft_s"], (m["ttft_s"], a["ttft_s"])
# below all-H100 by the decode step'"'"'s HBM time (the same all-reduces on both, NCCL'"'"'s)
assert m["tpot_s"]["mean"] < 0.9 * a["tpot_s"]["mean"], (m["tpot_s"], a["tpot_s"])
assert abs(m["tpot_s"]["mean"] / b["tpot_s"]["mean"] - 1) < 0.02, (m["tpot_s"], b["tpot_s"])' \
  "$tmp/mixed.json" "$tmp/plain.json" "$tmp/h200.json"
check "pools on one node type follow each other" bash -c "
  $npusim serve --system $M --workload $W $small --set workload.serving.prefill.node_type=h200-sxm-141gb |
    grep -qx 'chips     prefill on h200-sxm-141gb (ranks 16-23), decode on h200-sxm-141gb (ranks 24-31)'"
check "a pool passes over a run of its chip's servers too short for it" bash -c "
  $npusim serve --system configs/systems/h100-dgx.json --set cluster.nodes=4 \
    --set cluster.node_types=1:configs/systems/h200-dgx.json --workload $W $small \
    --set workload.serving.prefill.node_type= --set workload.serving.prefill.instances=4 \
    --set workload.serving.decode.instances=1 |
    grep -qx 'chips     prefill on h100-sxm5-80gb (ranks 16-31), decode on h200-sxm-141gb (ranks 8-11)'"

expect_line "an unknown node type, with the list" \
  "$W: serving.decode.node_type: expected a chip of the servers of $M, one of \"h100-sxm5-80gb\", \"h200-sxm-141gb\", found \"h300\"" \
  $npusim serve --system $M --workload $W --set workload.serving.decode.node_type=h300
expect_line "a pool that does not fit its node type's servers" \
  "$W: serving.decode: expected its 20 NPUs (5 instances of 4) on consecutive servers of node type \"h200-sxm-141gb\" in $M, found at most 16 free there" \
  $npusim serve --system $M --workload $W --set workload.serving.decode.instances=5
expect_line "node_type on a system without node types" \
  "$W: serving.prefill.node_type: expected \"\" on a system without cluster.node_types (configs/systems/h100-dgx.json: every server carries \"h100-sxm5-80gb\"), found \"h100-sxm5-80gb\"" \
  $npusim serve --system configs/systems/h100-dgx.json --workload $W
finish serve_pools_e2e
