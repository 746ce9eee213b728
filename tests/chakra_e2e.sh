#!/usr/bin/env bash
# chakra_e2e.sh NPUSIM - Chakra execution traces in and out:
#   - train --emit-chakra, then replay of those ETs, gives train's step time and
#     the per-rank figures replay gives for train's own --emit-trace (analytic
#     and flow): the round trip is exact;
#   - the format is told by the content: PREFIX, a rank file, gzip, and a JSON
#     trace whatever its name;
#   - the shipped sample (Chakra's generator example) replays;
#   - every malformed input gets its one line naming the file and node, exit 2.
# Run from the repository root.
set -u
npusim=${1:?usage: chakra_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
sys=configs/systems/ascend-910b.json
et() { python3 -c "import sys; sys.path.insert(0, 'scripts'); from chakra_et import *; $1"; }

# the round trip, in both fidelities
for fid in analytic flow; do
  $npusim train --system $sys --workload configs/workloads/llama2-7b.json --set training.global_batch=32 \
    --set parallel.pp=4 --set parallel.dp=2 --fidelity $fid --format json \
    --emit-trace "$tmp/t_$fid.json" --emit-chakra "$tmp/c_$fid" >"$tmp/train_$fid.json"
  $npusim replay --system $sys --trace "$tmp/t_$fid.json" --fidelity $fid --format json >"$tmp/rj_$fid.json"
  $npusim replay --system $sys --trace "$tmp/c_$fid" --comm-group "$tmp/c_$fid.comm_groups.json" \
    --fidelity $fid --format json >"$tmp/rc_$fid.json"
  check "$fid: train -> Chakra -> replay = train (step) = replay of --emit-trace (per rank)" python3 -c '
import json, sys
t, a, b = (json.load(open(f)) for f in sys.argv[1:4])
assert t["step_time_s"] == b["step_time_s"], (t["step_time_s"], b["step_time_s"])
keys = ("compute_s", "comm_s", "exposed_comm_s", "idle_s")
pa = [[r[k] for k in keys] for r in a["per_rank"]]
pb = [[r[k] for k in keys] for r in b["per_rank"]]
assert pa == pb, (pa[:2], pb[:2])' "$tmp/train_$fid.json" "$tmp/rj_$fid.json" "$tmp/rc_$fid.json"
done
check "Chakra files: one per rank and the comm groups" test -s "$tmp/c_analytic.7.et" -a -s "$tmp/c_analytic.comm_groups.json"

# told by content: a rank file, gzip, a JSON trace named .et
check "a rank file's name reads the whole set" sh -c "$npusim replay --system $sys --trace traces/chakra/generator_allreduce.3.et \
  --fidelity analytic | grep -q '4 ranks'"
mkdir -p "$tmp/gz"
for r in 0 1 2 3; do gzip -c traces/chakra/generator_allreduce.$r.et >"$tmp/gz/g.$r.et.gz"; done
check "gzip rank files" sh -c "$npusim replay --system $sys --trace $tmp/gz/g --fidelity analytic >/dev/null"
cp traces/two_ranks_p2p.json "$tmp/json.0.et"
check "a JSON trace named .et is read as JSON" sh -c "$npusim replay --system $sys --trace $tmp/json.0.et \
  --fidelity analytic | grep -q 'two'"
check "the sample replays in flow, its all-reduce on all ranks" sh -c "$npusim replay --system $sys \
  --trace traces/chakra/generator_allreduce | grep -q '^  world  *1  *393216'"

# bad input: one line each
good='[{"id": 0, "name": "c", "type": "COMP_NODE", "duration_micros": 5},
       {"id": 1, "type": "COMM_COLL_NODE", "data_deps": [0], "attr": [("comm_type", "int64", 0), ("comm_size", "uint64", 4096)]}]'
mk() { mkdir -p "$tmp/$1"; et "open('$tmp/$1/x.0.et','wb').write($2)"; }
mk trunc "et_bytes($good)[:-3]"
expect_line "truncated node" "$tmp/trunc/x.0.et: node #1 of the file: expected a node's length within the file, found a truncated varint or a length past the end" \
  $npusim replay --system $sys --trace "$tmp/trunc/x"
mk past "et_bytes($good) + varint(1000) + b'\\x08'"
expect_line "length past the end" "$tmp/past/x.0.et: node #2 of the file: expected a node's length within the file, found a truncated varint or a length past the end" \
  $npusim replay --system $sys --trace "$tmp/past/x"
mk mem "et_bytes([{'id': 7, 'type': 'MEM_LOAD_NODE'}])"
expect_line "a node type npusim does not model" "$tmp/mem/x.0.et: node 7: expected a node type npusim models (COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE), found MEM_LOAD_NODE (--chakra-skip keeps it as a delay)" \
  $npusim replay --system $sys --trace "$tmp/mem/x"
check "--chakra-skip counts what it keeps" sh -c "$npusim replay --system $sys --trace $tmp/mem/x --chakra-skip \
  2>&1 >/dev/null | grep -q '1 Chakra nodes npusim does not model'"
mk type "et_bytes([{'id': 3, 'type': 42}])"
expect_line "an unknown node type" "$tmp/type/x.0.et: node 3: expected a node type of et_def.proto (0-10), found 42" \
  $npusim replay --system $sys --trace "$tmp/type/x"
mk gather "et_bytes([{'id': 5, 'type': 'COMM_COLL_NODE', 'attr': [('comm_type', 'int64', 3), ('comm_size', 'uint64', 8)]}])"
expect_line "GATHER" "$tmp/gather/x.0.et: node 5: expected a collective npusim models (ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER), found GATHER" \
  $npusim replay --system $sys --trace "$tmp/gather/x"
mk peer "et_bytes([{'id': 9, 'type': 'COMM_SEND_NODE', 'attr': [('comm_dst', 'int64', 5), ('comm_size', 'uint64', 8)]}])"
expect_line "a peer out of range" "$tmp/peer/x.0.et: node 9: expected comm_dst naming another rank of the 1 ranks" \
  $npusim replay --system $sys --trace "$tmp/peer/x"
mk cycle "et_bytes([{'id': 0, 'type': 'COMP_NODE', 'duration_micros': 1, 'data_deps': [1]}, {'id': 1, 'type': 'COMP_NODE', 'duration_micros': 1, 'data_deps': [0]}])"
expect_line "a cycle" "$tmp/cycle/x: rank 0 op 0: expected ops that can all complete, found it waiting for rank 0 op 1, which never completes (a cycle through streams, events, collectives or send/recv)" \
  $npusim replay --system $sys --trace "$tmp/cycle/x"
mk dep "et_bytes([{'id': 0, 'type': 'COMP_NODE', 'duration_micros': 1, 'data_deps': [44]}])"
expect_line "a dependency on a missing node" "$tmp/dep/x: rank 0 op 0: deps: expected ids of ops in this program, found 44" \
  $npusim replay --system $sys --trace "$tmp/dep/x"
mk pg "et_bytes([{'id': 1, 'type': 'COMM_COLL_NODE', 'attr': [('comm_type', 'int64', 0), ('comm_size', 'uint64', 8), ('pg_name', 'string', '3')]}])"
expect_line "a process group without --comm-group" "$tmp/pg/x.0.et: node 1: expected process group \"3\" in the comm-group JSON (--comm-group FILE), found no file" \
  $npusim replay --system $sys --trace "$tmp/pg/x"
mkdir -p "$tmp/gap"; cp traces/chakra/generator_allreduce.0.et "$tmp/gap/x.0.et"; cp traces/chakra/generator_allreduce.0.et "$tmp/gap/x.2.et"
et "open('$tmp/gap/x.1.et','wb').write(et_bytes([{'id': 0, 'type': 'COMM_SEND_NODE', 'attr': [('comm_dst', 'int64', 2), ('comm_size', 'uint64', 8)]}]))"
rm "$tmp/gap/x.2.et"
expect_line "a missing rank file (its peer out of the job)" "$tmp/gap/x.1.et: node 0: expected comm_dst naming another rank of the 2 ranks" \
  $npusim replay --system $sys --trace "$tmp/gap/x"
mkdir -p "$tmp/badgz"; head -c 40 "$tmp/gz/g.0.et.gz" >"$tmp/badgz/x.0.et.gz"
check "a corrupt gzip is one line" sh -c "$npusim replay --system $sys --trace $tmp/badgz/x 2>&1 | grep -c . | grep -qx 1"
cp traces/chakra/generator_allreduce.0.et "$tmp/noname.bin"
expect_line "a Chakra file whose name gives no prefix" "$tmp/noname.bin: expected a Chakra ET file named PREFIX.<rank>.et or .et.gz (the ranks are read by their prefix), found another name" \
  $npusim replay --system $sys --trace "$tmp/noname.bin"
expect_line "Chakra options with a JSON trace" "--chakra-compute, --comm-group, --chakra-skip: expected a Chakra trace with them, found the npusim trace traces/mixed.json" \
  $npusim replay --system $sys --trace traces/mixed.json --chakra-skip

# the roofline: num_ops at the chip's peak
mk roof "et_bytes([{'id': 0, 'type': 'COMP_NODE', 'duration_micros': 1, 'attr': [('num_ops', 'int64', 10**12)]}])"
check "--chakra-compute: roofline from num_ops, duration from duration_micros" python3 -c '
import json, subprocess, sys
def step(mode):
    out = subprocess.run(sys.argv[1:] + ["--chakra-compute", mode, "--format", "json"], capture_output=True, check=True).stdout
    return json.loads(out)["step_time_s"]
assert step("duration") == 1e-6, step("duration")
assert step("roofline") > 1e-3 and step("auto") == step("roofline"), (step("roofline"), step("auto"))' \
  $npusim replay --system $sys --trace "$tmp/roof/x" --fidelity analytic

finish chakra_e2e
