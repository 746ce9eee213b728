#!/usr/bin/env bash
# replay_e2e.sh NPUSIM - end-to-end checks of `npusim replay` on the sample
# traces, one process per simulation (SimGrid runs once per process):
#   - known answers: compute and send/recv traces against an independent
#     reference (a longest-path walk written here in Python); an allreduce
#     overlapped with an independent matmul costs their max, not their sum,
#     and a matmul marked as running beside it is slowed by the interference;
#     dependencies across streams and events hold in the timeline;
#   - every sample replays in both fidelities with the documented JSON fields;
#   - the same inputs give byte-identical JSON and Chrome traces.
# Run from the repository root.
set -u
npusim=$1
sys=configs/systems/ascend-910b.json
source "$(dirname "$0")/e2e_lib.sh"

for t in traces/*.json traces/*.json.gz; do
  for fid in analytic flow; do
    name=$(basename "$t")
    "$npusim" replay --system $sys --trace "$t" --fidelity $fid --format json \
      --chrome-trace "$tmp/$name.$fid.trace.json.gz" >"$tmp/$name.$fid.json"
    check "$name $fid: JSON fields" python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
for k in ("step_time_s", "per_rank", "communicators", "links", "memory"):
    assert k in r, k
assert r["step_time_s"] > 0 and len(r["per_rank"]) == r["ranks"]
for p in r["per_rank"]:
    assert abs(p["compute_s"] + p["comm_s"] - p["exposed_comm_s"] + p["idle_s"] - r["step_time_s"]) < 1e-9 or p["compute_s"] + p["idle_s"] <= r["step_time_s"] + 1e-9
assert set(r["memory"]) >= {"capacity_GiB", "peak_GiB", "fits"}' "$tmp/$name.$fid.json"
    "$npusim" replay --system $sys --trace "$t" --fidelity $fid --format json \
      --chrome-trace "$tmp/$name.$fid.again.json.gz" >"$tmp/$name.$fid.again.json"
    check "$name $fid: same bytes twice" bash -c "cmp '$tmp/$name.$fid.json' '$tmp/$name.$fid.again.json' && cmp '$tmp/$name.$fid.trace.json.gz' '$tmp/$name.$fid.again.json.gz'"
  done
done

# Reference: walk the program of each rank in order; an op starts when its
# stream, its deps and (for a send/recv) its partner are ready; a transfer
# takes latency + bytes / (line rate x efficiency) of the one HCCS link.
reference() {
  python3 - "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
bw, lat = 28e9 * 0.7, 0.5e-6          # configs/systems/ascend-910b.json HCCS link
progs = {}
for p in t["programs"]:
    spec = p["ranks"]
    for part in spec.split(","):
        a, _, b = part.partition("-")
        for r in range(int(a), int(b or a) + 1):
            progs[r] = p["ops"]
done, pending = {}, {}
def peer(op, r): return op["peer"] if "peer" in op else r + op["peer_offset"]
changed = True
while changed:
    changed = False
    for r, ops in progs.items():
        last = {}
        for op in ops:
            key = (r, op["id"])
            s = op.get("stream", "compute")
            if key in done:
                last[s] = done[key]
                continue
            ready = [last.get(s, 0.0)] + [done.get((r, d)) for d in op.get("deps", [])]
            if None in ready:
                break
            start = max(ready)
            if op["kind"] == "compute":
                done[key] = start + op["duration_us"] * 1e-6
            else:  # send/recv: meet the k-th partner op
                q = peer(op, r)
                k = sum(1 for o in ops[:ops.index(op)] if o["kind"] == op["kind"] and peer(o, r) == q)
                other = "recv" if op["kind"] == "send" else "send"
                partner = [o for o in progs[q] if o["kind"] == other and peer(o, q) == r][k]
                pending[key] = start
                pk = (q, partner["id"])
                if pk not in pending:
                    break
                end = max(start, pending[pk]) + lat + op["bytes"] / bw
                done[key] = done[pk] = end
            last[s] = done[key]
            changed = True
print("%.9f" % max(done.values()))
PY
}
step() { python3 -c 'import json,sys; print("%.9f" % json.load(open(sys.argv[1]))["step_time_s"])' "$1"; }
close() { python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-9 + 1e-6 * b)' "$1" "$2"; }
for t in two_ranks_p2p pipeline_4stage; do
  want=$(reference traces/$t.json)
  for fid in analytic flow; do
    got=$(step "$tmp/$t.json.$fid.json")
    echo "  $t $fid: step ${got}s, reference ${want}s"
    check "$t $fid matches the reference" close "$got" "$want"
  done
done

# Overlap: matmul (compute stream) || allreduce (comm stream), then a matmul
# that needs the allreduce: max(mm1, ar) + mm2, not mm1 + ar + mm2.
# ops in a replayed step run at the clock the chip holds through it
clock=$(python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["chip"]
print(c["freq_GHz"] * c.get("sustained_clock_fraction", 1))' $sys)
op_time() { "$npusim" op --system $sys --set chip.freq_GHz=$clock --op matmul --shape "$1" --format json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["time_s"])'; }
mm1=$(op_time 4096,4096,4096)
mm2=$(op_time 4096,1024,4096)
ar=$("$npusim" coll --system $sys --op allreduce --ranks 8 --sizes 64M --fidelity analytic \
  --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["time_us"] * 1e-6)')
want=$(python3 -c "print('%.9f' % (max($mm1, $ar) + $mm2))")
got=$(step "$tmp/tp_overlap.json.gz.analytic.json")
echo "  tp_overlap: step ${got}s = max(matmul ${mm1}s, allreduce ${ar}s) + matmul ${mm2}s"
check "overlapped allreduce costs the max, not the sum" close "$got" "$want"
check "overlap: the flow step is the same" close "$(step "$tmp/tp_overlap.json.gz.flow.json")" "$want"

# Interference: the first matmul marked as running beside the allreduce takes
# compute_slowdown x min(matmul, allreduce) longer, in every engine.
zcat traces/tp_overlap.json.gz | sed 's/"dtype": "bf16"},$/"dtype": "bf16", "overlaps": 1},/' \
  >"$tmp/interfere.json"
check "interference: the trace marks the matmul" grep -q '"overlaps": 1' "$tmp/interfere.json"
want=$(python3 -c "print('%.9f' % (max($mm1 + 0.5 * min($mm1, $ar), $ar) + $mm2))")
for engine in analytic flow actors; do
  fid=$engine
  [ $engine = actors ] && fid=analytic
  NPUSIM_REPLAY_ACTORS=$([ $engine = actors ] && echo 1 || echo 0) "$npusim" replay --system $sys \
    --trace "$tmp/interfere.json" --fidelity $fid --set collectives.compute_slowdown=0.5 \
    --format json >"$tmp/interfere.$engine.json"
  check "interference ($engine): max(mm1 + 0.5 min(mm1, ar), ar) + mm2" \
    close "$(step "$tmp/interfere.$engine.json")" "$want"
done

# Cross-stream dependencies and events in the timeline of mixed.json (rank 0).
check "waits and deps hold across streams" python3 -c 'import gzip, json, sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
span = {}  # op: [start, end] from its slice, a B/E pair
for e in ev:
    if e.get("ph") in ("B", "E") and e["pid"] == 0 and "op" in e.get("args", {}):
        span.setdefault(e["args"]["op"], []).append(e["ts"])
after = lambda a, b: span[a][0] >= span[b][1] - 1e-6  # microseconds, printed to 3 decimals
assert after(5, 4), "wait before its record"
assert after(7, 6), "dep on the allreduce"
assert after(12, 9), "dep on the reduce-scatter"
assert after(6, 4), "collective before the event it waits for"' "$tmp/mixed.json.flow.trace.json.gz"

check "--trace-ranks limits the Chrome trace" bash -c "'$npusim' replay --system $sys --trace traces/mixed.json --fidelity analytic --chrome-trace '$tmp/few.json' --trace-ranks 2-3 >/dev/null && python3 -c 'import json,sys; assert {e[\"pid\"] for e in json.load(open(sys.argv[1]))[\"traceEvents\"]} == {2, 3}' '$tmp/few.json'"

# The analytic sweep against the SimGrid actors on a trace with events and
# waits (mixed.json without its memory ops, which keep the actors): same bytes.
python3 - "$tmp/events.json" <<'PY'
import json, sys
d = json.load(open("traces/mixed.json"))
for p in d["programs"]:
    p["ops"] = [o for o in p["ops"] if o["kind"] not in ("alloc", "free")]
    ids = {o["id"] for o in p["ops"]}
    for o in p["ops"]:
        o["deps"] = [x for x in o.get("deps", []) if x in ids]
json.dump(d, open(sys.argv[1], "w"))
PY
"$npusim" replay --system $sys --trace "$tmp/events.json" --fidelity analytic --format json \
  >"$tmp/events.sweep.json"
NPUSIM_REPLAY_ACTORS=1 "$npusim" replay --system $sys --trace "$tmp/events.json" \
  --fidelity analytic --format json >"$tmp/events.actors.json"
check "events: the sweep gives the actors' bytes" cmp "$tmp/events.sweep.json" "$tmp/events.actors.json"

# One pairing rule (issue #18 F1): a channel spelled `peer` and `peer_offset`
# (rejected before, though valid), and a channel used from two streams, where
# the later send in program order arrives first: the k-th send meets the k-th
# recv in program order, so the 64 KiB send waits for the second recv. Every
# engine completes; the analytic sweep and actors print the same bytes.
cat >"$tmp/spellings.json" <<'JSON'
{"format": "npusim-trace", "version": 1, "ranks": 2, "communicators": [], "programs": [
 {"ranks": "0", "ops": [{"id": 0, "kind": "send", "peer": 1, "bytes": 1024},
   {"id": 1, "kind": "send", "peer_offset": 1, "bytes": 2048}]},
 {"ranks": "1", "ops": [{"id": 0, "kind": "recv", "peer": 0, "bytes": 1024},
   {"id": 1, "kind": "recv", "peer_offset": -1, "bytes": 2048}]}]}
JSON
cat >"$tmp/two_streams.json" <<'JSON'
{"format": "npusim-trace", "version": 1, "ranks": 2, "communicators": [], "programs": [
 {"ranks": "0", "ops": [{"id": 0, "kind": "delay", "stream": "a", "duration_us": 100},
   {"id": 1, "kind": "send", "stream": "a", "peer": 1, "bytes": 1048576},
   {"id": 2, "kind": "send", "stream": "b", "peer": 1, "bytes": 65536}]},
 {"ranks": "1", "ops": [{"id": 0, "kind": "recv", "peer": 0, "bytes": 1048576},
   {"id": 1, "kind": "recv", "peer": 0, "bytes": 65536}]}]}
JSON
for case in spellings two_streams; do
  "$npusim" replay --system $sys --trace "$tmp/$case.json" --fidelity analytic --format json \
    >"$tmp/$case.sweep.json"
  NPUSIM_REPLAY_ACTORS=1 "$npusim" replay --system $sys --trace "$tmp/$case.json" \
    --fidelity analytic --format json >"$tmp/$case.actors.json"
  check "$case: sweep and actors give the same bytes" cmp "$tmp/$case.sweep.json" \
    "$tmp/$case.actors.json"
  check "$case: flow completes" "$npusim" replay --system $sys --trace "$tmp/$case.json" \
    --fidelity flow --chrome-trace "$tmp/$case.trace.json"
done
check "two streams: the 64 KiB send meets the second recv, after the first" python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
x = {}  # (rank, op): [start, end] from its slice, a B/E pair
for e in ev:
    if e.get("ph") in ("B", "E") and "op" in e.get("args", {}):
        x.setdefault((e["pid"], e["args"]["op"]), []).append(e["ts"])
assert x[(0, 2)][1] >= x[(1, 0)][1], x  # the small send ends after the first recv
assert x[(1, 1)][0] >= x[(1, 0)][1] - 1e-3, x
arrows = {e["id"] for e in ev if e.get("cat") == "p2p"}
assert arrows == {"0>1:0#0", "0>1:0#1"}, arrows' "$tmp/two_streams.trace.json"

# Flow runs the rounds of a collective alone on its links collapsed when each
# round's transfers are alike (coll_flow_collapse), and times it in closed form
# when no two of its transfers compete for a link (coll_flow_close); the result
# must be the plain simulation's, byte for byte, links included: a ring under
# one leaf, the same ring across leaves (latencies differ: closed form only),
# concurrent NHR groups on an oversubscribed spine (not alone: neither), and
# the shipped traces. The third field is how many collectives the closed form
# must time (NPUSIM_FLOW_COLLAPSE=tell), so a test that never closes fails.
python3 scripts/tools/gen_trace.py --ranks 256 --layers 3 --group 256 --compute-us 500 \
  --bytes 67108864 --algo ring --out "$tmp/ring256.json"
python3 scripts/tools/gen_trace.py --ranks 256 --layers 2 --group 32 --stride 8 --compute-us 500 \
  --bytes 67108864 --algo nhr --out "$tmp/nhr256.json"
for run in "ring256.json cluster.scale_out.npus_per_leaf=256 1" \
           "ring256.json cluster.scale_out.oversubscription=1 1" \
           "nhr256.json cluster.scale_out.oversubscription=2 0" \
           "../traces/mixed.json cluster.scale_out.oversubscription=1 12" \
           "../traces/tp_overlap.json.gz cluster.scale_out.oversubscription=1 1"; do
  set -- $run
  trace="$tmp/$1"
  [[ $1 == ../* ]] && trace="${1#../}"
  for c in tell 0; do
    NPUSIM_FLOW_COLLAPSE=$c "$npusim" replay --system $sys --trace "$trace" --fidelity flow \
      --set "$2" --format json --links all >"$tmp/collapse$c.json" 2>"$tmp/collapse$c.err"
  done
  check "flow: collapsed rounds give the plain bytes ($1, $2)" cmp "$tmp/collapsetell.json" "$tmp/collapse0.json"
  check "flow: $3 collectives in closed form ($1, $2)" \
    grep -qx "npusim replay: flow: collectives timed in closed form: $3" "$tmp/collapsetell.err"
done
# Five groups of 16 H100s, each alone on its links but for the leaves' uplinks
# (never binding at 1:1, so shared): the groups' rings cross the rails there,
# and the link figures must still be SimGrid's (the closed form may not sweep
# or walk those links as its own).
python3 scripts/tools/gen_trace.py --ranks 80 --layers 2 --group 16 --compute-us 150 \
  --bytes 16777216 --algo ring --out "$tmp/groups80.json"
for c in tell 0; do
  NPUSIM_FLOW_COLLAPSE=$c "$npusim" replay --system configs/systems/h100-dgx.json \
    --trace "$tmp/groups80.json" --fidelity flow --format json --links all \
    >"$tmp/groups$c.json" 2>"$tmp/groups$c.err"
done
check "flow: closed groups sharing uplinks that never bind give the plain bytes" \
  cmp "$tmp/groupstell.json" "$tmp/groups0.json"
check "flow: 5 collectives in closed form (groups80.json)" \
  grep -qx "npusim replay: flow: collectives timed in closed form: 5" "$tmp/groupstell.err"

finish "replay e2e"
