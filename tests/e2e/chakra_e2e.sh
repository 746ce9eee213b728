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
et() { python3 -c "import sys; sys.path.insert(0, 'scripts/tools'); from chakra_et import *; $1"; }

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
expect_line "a node type npusim does not model" "$tmp/mem/x.0.et: node 7: type: expected a node type npusim models (COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE), found MEM_LOAD_NODE (--chakra-skip keeps it as a delay)" \
  $npusim replay --system $sys --trace "$tmp/mem/x"
check "--chakra-skip counts what it keeps" sh -c "$npusim replay --system $sys --trace $tmp/mem/x --chakra-skip \
  2>&1 >/dev/null | grep -q '1 Chakra nodes npusim does not model'"
mk type "et_bytes([{'id': 3, 'type': 42}])"
expect_line "an unknown node type" "$tmp/type/x.0.et: node 3: type: expected a node type of et_def.proto (0-10), found 42" \
  $npusim replay --system $sys --trace "$tmp/type/x"
mk gather "et_bytes([{'id': 5, 'type': 'COMM_COLL_NODE', 'attr': [('comm_type', 'int64', 3), ('comm_size', 'uint64', 8)]}])"
expect_line "GATHER" "$tmp/gather/x.0.et: node 5: comm_type: expected a collective npusim models (ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER), found GATHER" \
  $npusim replay --system $sys --trace "$tmp/gather/x"
mk peer "et_bytes([{'id': 9, 'type': 'COMM_SEND_NODE', 'attr': [('comm_dst', 'int64', 5), ('comm_size', 'uint64', 8)]}])"
expect_line "a peer out of range" "$tmp/peer/x.0.et: node 9: comm_dst: expected another rank of the 1 ranks, found 5" \
  $npusim replay --system $sys --trace "$tmp/peer/x"
mk cycle "et_bytes([{'id': 0, 'name': 'a', 'type': 'COMP_NODE', 'duration_micros': 1, 'ctrl_deps': [2]}, {'id': 1, 'name': 'b', 'type': 'COMP_NODE', 'duration_micros': 1, 'data_deps': [0]}, {'id': 2, 'name': 'c', 'type': 'COMP_NODE', 'duration_micros': 1, 'data_deps': [1]}])"
expect_line "a cycle of dependencies, named by node and field" "$tmp/cycle/x.0.et: node 1 \"b\": data_deps: expected dependencies without a cycle, found one through node 0 \"a\"" \
  $npusim replay --system $sys --trace "$tmp/cycle/x"
mk self "et_bytes([{'id': 4, 'name': 'me', 'type': 'COMP_NODE', 'duration_micros': 1, 'ctrl_deps': [4]}])"
expect_line "a node depending on itself" "$tmp/self/x.0.et: node 4 \"me\": ctrl_deps: expected other nodes than this one, found its own id" \
  $npusim replay --system $sys --trace "$tmp/self/x"
mk dep "et_bytes([{'id': 0, 'type': 'COMP_NODE', 'duration_micros': 1, 'data_deps': [44]}])"
expect_line "a dependency on a missing node" "$tmp/dep/x.0.et: node 0: data_deps: expected ids of nodes in this file, found 44" \
  $npusim replay --system $sys --trace "$tmp/dep/x"
mk dup "et_bytes([{'id': 3, 'name': 'one', 'type': 'COMP_NODE', 'duration_micros': 1}, {'id': 3, 'name': 'two', 'type': 'COMP_NODE', 'duration_micros': 1}])"
expect_line "an id twice" "$tmp/dup/x.0.et: node 3 \"two\": id: expected ids unique in the file, found 3 again" \
  $npusim replay --system $sys --trace "$tmp/dup/x"
mk pg "et_bytes([{'id': 1, 'type': 'COMM_COLL_NODE', 'attr': [('comm_type', 'int64', 0), ('comm_size', 'uint64', 8), ('pg_name', 'string', '3')]}])"
expect_line "a process group without --comm-group" "$tmp/pg/x.0.et: node 1: pg_name: expected a process group of the comm-group JSON (--comm-group FILE), found \"3\" and no such file" \
  $npusim replay --system $sys --trace "$tmp/pg/x"
mkdir -p "$tmp/gap"; cp traces/chakra/generator_allreduce.0.et "$tmp/gap/x.0.et"; cp traces/chakra/generator_allreduce.0.et "$tmp/gap/x.2.et"
et "open('$tmp/gap/x.1.et','wb').write(et_bytes([{'id': 0, 'type': 'COMM_SEND_NODE', 'attr': [('comm_dst', 'int64', 2), ('comm_size', 'uint64', 8)]}]))"
rm "$tmp/gap/x.2.et"
expect_line "a missing rank file (its peer out of the job)" "$tmp/gap/x.1.et: node 0: comm_dst: expected another rank of the 2 ranks, found 2" \
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

# nodes in any order: each rank runs them in file order where their
# dependencies (by id) allow, so reversed and shuffled files replay alike
rev() { # rev DIR ORDER: train's ETs of $tmp/c_analytic with each rank's nodes reordered
  mkdir -p "$tmp/$1"
  et "import random, shutil
random.seed(3)
for r in range(8):
    m = split_et(open('$tmp/c_analytic.%d.et' % r, 'rb').read())
    nodes = m[1:]
    if '$2' == 'reversed': nodes.reverse()
    else: random.shuffle(nodes)
    open('$tmp/$1/c.%d.et' % r, 'wb').write(join_et(m[:1] + nodes))
shutil.copy('$tmp/c_analytic.comm_groups.json', '$tmp/$1/c.comm_groups.json')"
}
rev rev reversed
rev shuf shuffled
check "nodes in reverse and shuffled order replay to the same step" python3 -c '
import json, subprocess, sys
base, dirs, cmd = sys.argv[1], sys.argv[2:4], sys.argv[4:]
def step(d):
    out = subprocess.run(cmd + ["--trace", d + "/c", "--comm-group", d + "/c.comm_groups.json"],
                         capture_output=True, check=True).stdout
    return json.loads(out)["step_time_s"]
steps = [step(d) for d in dirs]
assert steps == [json.load(open(base))["step_time_s"]] * 2, steps' \
  "$tmp/rc_analytic.json" "$tmp/rev" "$tmp/shuf" $npusim replay --system $sys --fidelity analytic --format json

# what only the whole job shows, still named by file, node and field
mkdir -p "$tmp/job"
two() { # two NAME RANK0-NODES RANK1-NODES [comm groups]: a two-rank set in $tmp/job/NAME
  et "write_et('$tmp/job/$1.0.et', $2); write_et('$tmp/job/$1.1.et', $3)"
}
snd='{"id": 0, "name": "s", "type": "COMM_SEND_NODE", "attr": [("comm_dst", "int64", 1), ("comm_size", "uint64", 8), ("comm_tag", "int64", 5)]}'
rcv() { echo "{\"id\": $1, \"name\": \"r\", \"type\": \"COMM_RECV_NODE\", \"attr\": [(\"comm_src\", \"int64\", 0), (\"comm_size\", \"uint64\", $2), (\"comm_tag\", \"int64\", 5)]}"; }
cmp='{"id": 0, "name": "c", "type": "COMP_NODE", "duration_micros": 5}'
ar() { echo "{\"id\": 1, \"name\": \"ar\", \"type\": \"COMM_COLL_NODE\", \"attr\": [(\"comm_type\", \"int64\", 0), (\"comm_size\", \"uint64\", $1)${2-}]}"; }
two nosend "[$snd]" "[$cmp]"
expect_line "a send without its receive" "$tmp/job/nosend.0.et: node 0 \"s\": expected a recv on rank 1 for this send, found none" \
  $npusim replay --system $sys --trace "$tmp/job/nosend"
two size "[$snd]" "[$(rcv 0 16)]"
expect_line "a receive of another size" "$tmp/job/size.1.et: node 0 \"r\": comm_size: expected 8 as rank 0 sends (node 0), found 16" \
  $npusim replay --system $sys --trace "$tmp/job/size"
two coll "[$cmp, $(ar 4096)]" "[$cmp, $(ar 8192)]"
expect_line "a collective the group issues unlike" "$tmp/job/coll.1.et: node 1 \"ar\": expected allreduce of 4096 bytes on \"world\" as rank 0 issues it (node 1), found allreduce of 8192 bytes" \
  $npusim replay --system $sys --trace "$tmp/job/coll"
two dead "[$(rcv 0 8 | sed 's/"comm_src", "int64", 0/"comm_src", "int64", 1/'), {\"id\": 1, \"name\": \"s\", \"type\": \"COMM_SEND_NODE\", \"data_deps\": [0], \"attr\": [(\"comm_dst\", \"int64\", 1), (\"comm_size\", \"uint64\", 8)]}]" \
  "[$(rcv 0 8 | sed 's/("comm_tag", "int64", 5)/("comm_tag", "int64", 0)/'), {\"id\": 1, \"name\": \"s\", \"type\": \"COMM_SEND_NODE\", \"data_deps\": [0], \"attr\": [(\"comm_dst\", \"int64\", 0), (\"comm_size\", \"uint64\", 8), (\"comm_tag\", \"int64\", 5)]}]"
expect_line "a cycle across ranks" "$tmp/job/dead.0.et: node 1 \"s\": expected ops that can all complete, found it waiting for rank 0 node 0, which never completes (a cycle through streams, events, collectives or send/recv)" \
  $npusim replay --system $sys --trace "$tmp/job/dead"
echo '{"g": [1]}' >"$tmp/job/g1.json"
two pg "[$(ar 8 ", (\"pg_name\", \"string\", \"g\")")]" "[$cmp]"
expect_line "a process group without the rank" "$tmp/job/pg.0.et: node 1 \"ar\": pg_name: expected a process group holding rank 0, found \"g\" without it" \
  $npusim replay --system $sys --trace "$tmp/job/pg" --comm-group "$tmp/job/g1.json"
echo '{"g": [0, 9]}' >"$tmp/job/g9.json"
expect_line "a process group of ranks outside the job" "$tmp/job/g9.json: g: expected ranks of the job's 2 (0 to 1), found 9" \
  $npusim replay --system $sys --trace "$tmp/job/pg" --comm-group "$tmp/job/g9.json"
two algo "[$(ar 8 ", (\"npusim_algo\", \"string\", \"bogus\")")]" "[$(ar 8 ", (\"npusim_algo\", \"string\", \"bogus\")")]"
expect_line "what the replay finds wrong, named by file, node and field" "$tmp/job/algo.0.et: node 1 \"ar\": npusim_algo: expected up to 3 of auto, mesh, ring, hd, nhr, nb, pairwise, tree, pipeline, nvls, oneshot, twoshot separated by ',', found \"bogus\"" \
  $npusim replay --system $sys --trace "$tmp/job/algo.1.et" --fidelity analytic
long="'é' * 300"
mk meta "et_bytes([{'id': 0, 'type': 'METADATA_NODE'}, {'id': 1, 'name': $long, 'type': 'COMP_NODE', 'duration_micros': 7, 'ctrl_deps': [0]}])"
check "a long name and a dependency on a METADATA_NODE" sh -c "$npusim replay --system $sys --trace $tmp/meta/x \
  --fidelity analytic --format json | grep -q '\"step_time_s\": 7e-06'"

# bounds, each one line, quickly, in bounded memory: nodes, dependencies and
# inflated bytes of the set, and a collective whose flow run would post
# transfers by the billion (an all-reduce of 1e15 bytes loops per staging buffer)
limit="ulimit -v 2097152;" # (AddressSanitizer reserves terabytes: no ulimit there)
grep -q __asan_init "$npusim" && limit=""
mkdir -p "$tmp/big"
et "import gzip
one = node_bytes({'id': 0, 'type': 'COMP_NODE'})
gzip.open('$tmp/big/n.0.et.gz', 'wb', 1).write(et_bytes([]) + (varint(len(one)) + one) * ((1 << 22) + 1))
deps = key(1, 0) + varint(1) + key(3, 0) + varint(4) + length_field(5, bytes((1 << 24) + 1))
gzip.open('$tmp/big/d.0.et.gz', 'wb', 1).write(et_bytes([{'id': 0, 'type': 'COMP_NODE'}]) + varint(len(deps)) + deps)
for r in range(2):
    name = node_bytes({'id': 0, 'type': 'COMP_NODE', 'name': 'x' * (130 << 20)})
    gzip.open('$tmp/big/b.%d.et.gz' % r, 'wb', 1).write(et_bytes([]) + varint(len(name)) + name)"
expect_line "a set of more than 4 Mi nodes" "$tmp/big/n.0.et.gz: expected a Chakra ET set of at most 4194304 nodes (its rank files together), found 4194305 with this file" \
  bash -c "$limit timeout 20 $npusim replay --system $sys --trace $tmp/big/n"
expect_line "a set of more than 16 Mi dependencies" "$tmp/big/d.0.et.gz: node 1: expected a Chakra ET set of at most 16777216 dependencies (ctrl_deps and data_deps of its rank files together), found 16777217 with this node" \
  bash -c "$limit timeout 20 $npusim replay --system $sys --trace $tmp/big/d"
expect_line "a set of more than 256 MiB" "$tmp/big/b.1.et.gz: expected a Chakra ET set of at most 256 MiB (its rank files together, inflated), found more with this file" \
  bash -c "$limit timeout 20 $npusim replay --system $sys --trace $tmp/big/b"
for r in $(seq 0 15); do
  et "write_et('$tmp/big/a.$r.et', [{'id': 0, 'type': 'COMM_COLL_NODE', 'attr': [('comm_type', 'int64', 0), ('comm_size', 'uint64', 10**15)]}])"
done
expect_line "a flow collective of 2.3e9 transfers" "$tmp/big/a: expected flow collectives of at most 67108864 transfers each, found allreduce of 1000000000000000 bytes on \"world\" with 2288818560 (its schedule once per collectives.buffer_MiB of its bytes); use --fidelity analytic" \
  timeout 20 $npusim replay --system $sys --trace "$tmp/big/a"
check "... which analytic costs in one step" timeout 20 $npusim replay --system $sys --trace "$tmp/big/a" --fidelity analytic

# ASTRA-sim's own example ETs (tests/data/chakra/astra-sim/, commit in its
# SOURCE): written by Chakra's proto3 encoder, so rank 0's node 0 carries no id
# field (a proto3 default stays off the wire). Each microbenchmark replays in
# both fidelities. The custom ring all-reduce sends before it receives on every
# rank: with eager sends (its 128 KiB chunks under collectives.p2p_eager_max_MiB)
# it replays, on ASTRA-sim's Ring_8npus network (astra-sim-ring8.json), in the
# time ASTRA-sim 518bd51 gives (90.174 us, docs/interop.md); where every send waits
# for its recv (HCCL's rendezvous, the Ascend systems) it is refused as the
# cycle it is there.
astra=tests/data/chakra/astra-sim
for set in $astra/*_*npus_1MB; do
  name=$(basename "$set")
  prefix=$(ls "$set"/*.0.et)
  prefix=${prefix%.0.et}
  sys_set=$sys
  [ "$name" = custom_ring_allreduce_8npus_1MB ] && sys_set=tests/data/chakra/astra-sim-ring8.json
  for fid in analytic flow; do
    ranks=${name%npus_1MB}
    ranks=${ranks##*_}
    check "ASTRA-sim example $name replays ($fid)" python3 -c '
import json, subprocess, sys
ranks, cmd = int(sys.argv[1]), sys.argv[2:]
r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
assert r["step_time_s"] > 0 and len(r["per_rank"]) == ranks, (r["step_time_s"], len(r["per_rank"]))
' "$ranks" $npusim replay --system $sys_set --trace "$prefix" --fidelity $fid --format json
  done
done
ring=$astra/custom_ring_allreduce_8npus_1MB/custom_allreduce
for fid in analytic flow; do
  check "ASTRA-sim's custom ring all-reduce, eager sends ($fid): 14 x (2.5 + 0.5) + 7 x 7 us = 90.18 us (ASTRA-sim 518bd51: 90.174 us, docs/interop.md)" python3 -c '
import json, subprocess, sys
r = json.loads(subprocess.run(sys.argv[1:], check=True, capture_output=True, text=True).stdout)
assert abs(r["step_time_s"] - 90.18e-6) < 0.01e-6, r["step_time_s"]
' $npusim replay --system tests/data/chakra/astra-sim-ring8.json --trace $ring --fidelity $fid --format json
  echo "  custom ring all-reduce ($fid): npusim $($npusim replay --system tests/data/chakra/astra-sim-ring8.json \
    --trace $ring --fidelity $fid | sed -n 's/^step time: //p'), ASTRA-sim 518bd51 90.174 us"
done
expect_line "... and with every send waiting for its recv (HCCL), the cycle it then is" \
  "$ring.0.et: node 1 \"COMM_RECV_NODE_tb0_step1\": expected ops that can all complete, found it waiting for rank 0 node 0, which never completes (a cycle through streams, events, collectives or send/recv)" \
  $npusim replay --system $sys --trace $ring
expect_line "... and so it is just above the eager limit" \
  "$ring.0.et: node 1 \"COMM_RECV_NODE_tb0_step1\": expected ops that can all complete, found it waiting for rank 0 node 0, which never completes (a cycle through streams, events, collectives or send/recv)" \
  $npusim replay --system tests/data/chakra/astra-sim-ring8.json --set collectives.p2p_eager_max_MiB=0.124 --trace $ring

# eager against rendezvous where the recv comes late (rank 1 computes 50 us
# first): the eager send ends after its path time, the rendezvous one waits
# for the recv; every engine agrees (sweep, contended sweep, actors, flow)
cat >"$tmp/late.json" <<'JSON'
{"format": "npusim-trace", "version": 1, "name": "late recv", "ranks": 2, "communicators": [],
 "programs": [
  {"ranks": "0", "ops": [{"id": 0, "kind": "send", "peer": 1, "bytes": 131072},
                         {"id": 1, "kind": "delay", "duration_us": 1}]},
  {"ranks": "1", "ops": [{"id": 0, "kind": "delay", "duration_us": 50},
                         {"id": 1, "kind": "recv", "peer": 0, "bytes": 131072}]}]}
JSON
late() { # late EAGER_MIB: rank 0's end in us, in each engine, one line
  for e in "NPUSIM_ANALYTIC_CONTENTION=0" "X=0" "NPUSIM_REPLAY_ACTORS=1"; do
    env $e $npusim replay --system tests/data/chakra/astra-sim-ring8.json --trace "$tmp/late.json" \
      --set collectives.p2p_eager_max_MiB=$1 --fidelity analytic --format json
  done
  $npusim replay --system tests/data/chakra/astra-sim-ring8.json --trace "$tmp/late.json" \
    --set collectives.p2p_eager_max_MiB=$1 --fidelity flow --format json
}
check "a late recv: an eager send ends without it, a rendezvous one waits (every engine)" python3 -c '
import json, sys
def runs(text):
    dec, i, out = json.JSONDecoder(), 0, []
    while text[i:].strip():
        while text[i].isspace(): i += 1
        r, i = dec.raw_decode(text, i)
        out.append(tuple(round(r["per_rank"][k]["comm_s"] * 1e6, 3) for k in (0, 1)) + (round(r["step_time_s"] * 1e6, 3),))
    return out
eager, rdv = runs(sys.argv[1]), runs(sys.argv[2])
assert eager == [(2.941, 0.0, 50.0)] * 4, eager  # the data waits in rank 1s buffer
assert len(set(rdv)) == 1 and rdv[0][2] == 53.941, rdv  # the send waits 50 us for its recv
' "$(late 4)" "$(late 0)"

# An ALL_GATHER's comm_size is each rank's input by default (ASTRA-sim's
# reading: its 8-NPU example gathers 1 MB from each rank, 8 MB in all), and
# all ranks' data with --chakra-allgather total (npusim coll's count): the
# world communicator moves 8 times the bytes under the first.
ag=$astra/all_gather_8npus_1MB/all_gather
ag_bytes() { $npusim replay --system $sys --trace $ag --format json "$@" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["communicators"][0]["bytes"])'; }
check "ASTRA-sim's all-gather example: comm_size per rank by default, x 8 over --chakra-allgather total" \
  sh -c "[ \"\$1\" = \"\$2\" ] && [ \"\$1\" = \$((\$3 * 8)) ]" _ \
  "$(ag_bytes)" "$(ag_bytes --chakra-allgather input)" "$(ag_bytes --chakra-allgather total)"
expect_line "--chakra-allgather: a name it does not know" \
  "--chakra-allgather: expected input or total, found \"output\"" \
  $npusim replay --system $sys --trace $ag --chakra-allgather output
expect_line "--chakra-allgather on an npusim trace" \
  "--chakra-allgather: expected a Chakra trace with it, found the npusim trace traces/mixed.json" \
  $npusim replay --system $sys --trace traces/mixed.json --chakra-allgather total
expect_line "train --chakra-allgather without --emit-chakra" \
  "--chakra-allgather: expected --emit-chakra with it, found none" \
  $npusim train --system $sys --workload tests/data/train/tiny.json --chakra-allgather total
expect_line "ASTRA-sim's custom ring all-reduce: sends that wait for their receives" \
  "$astra/custom_ring_allreduce_8npus_1MB/custom_allreduce.0.et: node 1 \"COMM_RECV_NODE_tb0_step1\": expected ops that can all complete, found it waiting for rank 0 node 0, which never completes (a cycle through streams, events, collectives or send/recv)" \
  $npusim replay --system $sys --trace $astra/custom_ring_allreduce_8npus_1MB/custom_allreduce

# Chakra's own sets (tests/data/chakra/chakra/, commit in its SOURCE): every
# set its ET generator writes, each replaying in both fidelities, kept as
# zero-time delays with --chakra-skip, or refused for the reason docs/interop.md
# gives (ASTRA-sim cannot run those either).
gen=tests/data/chakra/chakra/generator
replays="ALL_GATHER ALL_REDUCE ALL_TO_ALL BROADCAST REDUCE_SCATTER one_comp_node one_metadata_node_all_types two_comp_nodes_dependent two_comp_nodes_independent"
skipped="BARRIER one_remote_mem_load_node one_remote_mem_store_node"
refused="one_comm_send_node one_comm_recv_node"
check "every Chakra generator set is tested here" test "$(ls $gen | sort | tr '\n' ' ')" = \
  "$(echo $replays $skipped $refused | tr ' ' '\n' | sort | tr '\n' ' ')"
gen_step() { # gen_step SET STEP_US FIDELITY [OPTION]: the set replays on 8 ranks in STEP_US (None: > 0)
  python3 -c '
import json, subprocess, sys
want, cmd = sys.argv[1], sys.argv[2:]
r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
us = r["step_time_s"] * 1e6
assert len(r["per_rank"]) == 8 and (us > 0 if want == "None" else abs(us - float(want)) < 1e-9), (us, len(r["per_rank"]))
' "$2" $npusim replay --system $sys --trace "$gen/$1/$1" --fidelity "$3" --format json ${4-}
}
for set in $replays; do
  case $set in
  one_comp_node) us=5 ;; two_comp_nodes_*) us=10 ;; one_metadata_node_all_types) us=0 ;; *) us=None ;;
  esac
  for fid in analytic flow; do
    check "Chakra generator set $set replays ($fid)" gen_step $set $us $fid
  done
done
for set in $skipped; do
  check "Chakra generator set $set: --chakra-skip keeps its 8 nodes as zero-time delays" gen_step $set 0 analytic --chakra-skip
  check "... and says so" sh -c "$npusim replay --system $sys --trace $gen/$set/$set --chakra-skip 2>&1 >/dev/null \
    | grep -q '^npusim replay: --chakra-skip: 8 Chakra nodes npusim does not model'"
done
expect_line "Chakra generator BARRIER, without --chakra-skip" \
  "$gen/BARRIER/BARRIER.0.et: node 104 \"BARRIER\": comm_type: expected a collective npusim models (ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER), found BARRIER" \
  $npusim replay --system $sys --trace $gen/BARRIER/BARRIER
expect_line "Chakra generator remote memory, without --chakra-skip" \
  "$gen/one_remote_mem_load_node/one_remote_mem_load_node.0.et: node 8 \"MEM_LOAD_NODE\": type: expected a node type npusim models (COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE), found MEM_LOAD_NODE (--chakra-skip keeps it as a delay)" \
  $npusim replay --system $sys --trace $gen/one_remote_mem_load_node/one_remote_mem_load_node
expect_line "Chakra generator send: no comm_dst (nor comm_size; ASTRA-sim refuses it too)" \
  "$gen/one_comm_send_node/one_comm_send_node.0.et: node 112 \"COMM_SEND_NODE\": comm_dst: expected another rank of the 8 ranks, found none" \
  $npusim replay --system $sys --trace $gen/one_comm_send_node/one_comm_send_node --chakra-skip
expect_line "Chakra generator recv: no comm_src" \
  "$gen/one_comm_recv_node/one_comm_recv_node.0.et: node 120 \"COMM_RECV_NODE\": comm_src: expected another rank of the 8 ranks, found none" \
  $npusim replay --system $sys --trace $gen/one_comm_recv_node/one_comm_recv_node --chakra-skip
mk gskip "et_bytes([{'id': 5, 'type': 'COMM_COLL_NODE', 'attr': [('comm_type', 'int64', 3), ('comm_size', 'uint64', 8)]}, {'id': 6, 'type': 'COMM_COLL_NODE', 'data_deps': [5], 'attr': [('comm_type', 'int64', 4), ('comm_size', 'uint64', 8)]}, {'id': 7, 'type': 'COMP_NODE', 'duration_micros': 3, 'data_deps': [6]}])"
check "--chakra-skip keeps GATHER and SCATTER as zero-time delays, their dependants waiting" sh -c "$npusim replay \
  --system $sys --trace $tmp/gskip/x --chakra-skip --fidelity analytic --format json 2>/dev/null | grep -q '\"step_time_s\": 3e-06'"

# Chakra's PyTorch-converted feeder test trace: told an ET by its structure (its
# metadata has no version), its host-side nodes kept as ASTRA-sim keeps them,
# then refused on the converter's dangling ctrl_deps (nodes it dropped).
feeder=tests/data/chakra/chakra/feeder_tests_trace/chakra.0.et.gz
expect_line "Chakra's feeder trace: an ET without a version, refused on a dependency the converter dropped" \
  "$feeder: node 216 \"aten::flatten_dense_tensors(0)\": ctrl_deps: expected ids of nodes in this file, found 3" \
  $npusim replay --system $sys --trace $feeder
mk nover "join_et([b''] + split_et(et_bytes([{'id': 1, 'type': 'COMP_NODE', 'duration_micros': 4}]))[1:])"
check "an ET file whose metadata is empty is an ET" sh -c "$npusim replay --system $sys --trace $tmp/nover/x.0.et \
  --fidelity analytic --format json | grep -q '\"step_time_s\": 4e-06'"
mk brace "join_et([length_field(1, b'v' * 121)] + split_et(et_bytes([{'id': 1, 'type': 'COMP_NODE', 'duration_micros': 4}]))[1:])"
check "... and one whose first byte is '{' (metadata of 123 bytes)" sh -c "head -c 1 $tmp/brace/x.0.et | grep -q '{' && \
  $npusim replay --system $sys --trace $tmp/brace/x.0.et --fidelity analytic --format json | grep -q '\"step_time_s\": 4e-06'"

# host-side nodes (is_cpu_op true) as ASTRA-sim runs them: no device work, no
# communication, their duration_micros on one host stream, never a roofline
host="[{'id': 1, 'name': 'c10d::allreduce_', 'type': 'COMM_COLL_NODE', 'duration_micros': 7, 'attr': [('is_cpu_op', 'bool', True)]},
       {'id': 2, 'name': 'aten::mm', 'type': 'COMP_NODE', 'duration_micros': 7, 'attr': [('is_cpu_op', 'bool', True), ('num_ops', 'int64', 10**15)]},
       {'id': 3, 'name': 'kernel', 'type': 'COMP_NODE', 'duration_micros': 5, 'data_deps': [1], 'attr': [('is_cpu_op', 'bool', False)]},
       {'id': 4, 'type': 'COMM_SEND_NODE', 'attr': [('is_cpu_op', 'bool', True)]}]"
mk host "et_bytes($host)"
check "host-side nodes: their durations on one host stream, a kernel waiting for its host node" sh -c "$npusim replay \
  --system $sys --trace $tmp/host/x --fidelity analytic --format json | grep -q '\"step_time_s\": 1.4e-05'"

finish chakra_e2e
