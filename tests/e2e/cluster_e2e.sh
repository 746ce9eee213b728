#!/usr/bin/env bash
# cluster_e2e.sh NPUSIM - several jobs on one fabric (npusim cluster) end to
# end, with known answers, in both fidelities, on configs/systems/ascend-910b-pod64.json
# (8 servers, 2 per leaf, leaves 2:1 oversubscribed): two identical jobs on
# disjoint leaves do not interfere (together = alone, no shared link); spread
# over the same leaves, where each job alone fills its leaf's uplink
# (tests/data/cluster/exchange16.json: 8 NPUs per leaf send 1 GiB each across),
# they share the uplinks and each exchange takes twice as long: together =
# alone + the transfer time; a job alone takes what npusim replay says, step by
# step for any --steps (the metamorphic "one job in cluster = replay"); a job
# half as long runs twice the steps; the same run twice gives the same bytes;
# bad placements and runs past the size bounds are one line, exit 2.
# Run from the repository root.
set -u
npusim=${1:?usage: cluster_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
sys=configs/systems/ascend-910b-pod64.json
x=tests/data/cluster/exchange16.json
half=tests/data/cluster/exchange16_half.json
field() { # field FILE EXPR : a value of the cluster JSON (j = the parsed document)
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"
}
near() { # near A B TOLERANCE: |A - B| <= TOLERANCE x B
  python3 -c 'import sys; a, b, t = map(float, sys.argv[1:]); sys.exit(abs(a - b) > t * b)' "$@"
}
same() { [ "$1" = "$2" ]; }
compute_s=0.001 # the exchange's compute op
for fid in analytic flow; do
  "$npusim" cluster --system $sys --fidelity $fid --format json --job $x@packed --job $x@packed \
    >"$tmp/apart.json"
  a0=$(field "$tmp/apart.json" 'j["jobs"][0]["step_time_alone_s"]')
  t0=$(field "$tmp/apart.json" 'j["jobs"][0]["step_time_together_s"]')
  check "$fid: jobs on disjoint leaves do not interfere ($a0 = $t0 s)" same "$a0" "$t0"
  check "$fid: ... and share no link" same "$(field "$tmp/apart.json" 'len(j["shared_links"])')" 0
  rep=$("$npusim" replay --system $sys --trace $x --fidelity $fid --format json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["step_time_s"])')
  check "$fid: a job alone takes what replay says ($a0, $rep s)" near "$a0" "$rep" 1e-9
  "$npusim" cluster --system $sys --fidelity $fid --format json --job $x@spread --job $x@spread \
    >"$tmp/shared_$fid.json"
  a=$(field "$tmp/shared_$fid.json" 'j["jobs"][1]["step_time_alone_s"]')
  t=$(field "$tmp/shared_$fid.json" 'j["jobs"][1]["step_time_together_s"]')
  want=$(python3 -c "print(2 * $a - $compute_s)")
  check "$fid: sharing 2:1 uplinks doubles each exchange (together $t s, predicted $want)" \
    near "$t" "$want" 0.002
  check "$fid: the shared links are the four leaf uplink directions" \
    same "$(field "$tmp/shared_$fid.json" 'sorted((l["link"], l["dir"], l["jobs"]) for l in j["shared_links"])')" \
    "[('leaf0.up', 0, [0, 1]), ('leaf0.up', 1, [0, 1]), ('leaf1.up', 0, [0, 1]), ('leaf1.up', 1, [0, 1])]"
  eval "t_$fid=$t"
done
check "analytic and flow agree on the shared exchange ($t_analytic, $t_flow s)" \
  near "$t_analytic" "$t_flow" 0.01
"$npusim" cluster --system $sys --format json --job $x@spread --job $half@spread >"$tmp/mixed.json"
check "the job half as long runs twice the steps" \
  same "$(field "$tmp/mixed.json" '[k["steps"] for k in j["jobs"]]')" "[3, 6]"
check "... and is compared over the steps it ran beside the other" \
  same "$(field "$tmp/mixed.json" 'j["jobs"][1]["steps_compared"] < 6 and j["jobs"][0]["steps_compared"] == 3')" True
"$npusim" cluster --system $sys --format json --job $x@spread --job $half@spread >"$tmp/again.json"
check "the same run twice gives the same bytes" cmp "$tmp/mixed.json" "$tmp/again.json"
"$npusim" cluster --system $sys --format csv --job $x@0-7,16-23 --job $x@8-15,24-31 \
  >"$tmp/list.csv"
csv_rows() { # the CSV's npu_list and slowdown columns, one job per line
  python3 -c 'import csv, sys; [print(r["npu_list"], r["slowdown"]) for r in csv.DictReader(open(sys.argv[1]))]' "$1"
}
check "explicit NPU lists place as spread does here (CSV)" same "$(csv_rows "$tmp/list.csv")" \
  "$(field "$tmp/shared_analytic.json" '"\n".join("%s %.6g" % (k["npu_list"], k["slowdown"]) for k in j["jobs"])')"
"$npusim" cluster --system $sys --format json --job $x@1,0,2-7,16-23 --job $x@8-15,24-31 \
  >"$tmp/perm.json"
check "a listed placement that moves peer offsets still pairs every send (slowdown as spread)" \
  near "$(field "$tmp/perm.json" 'j["jobs"][0]["slowdown"]')" \
  "$(field "$tmp/shared_analytic.json" 'j["jobs"][0]["slowdown"]')" 0.01
"$npusim" cluster --system $sys --job configs/workloads/llama3-8b-dp4.json@spread \
  --job configs/workloads/llama3-8b-dp4.json@spread --format json >"$tmp/train.json"
check "two spread training jobs slow each other down (DP traffic on shared uplinks)" \
  same "$(field "$tmp/train.json" 'all(k["slowdown"] > 1.001 for k in j["jobs"]) and len(j["shared_links"]) > 0')" True
"$npusim" cluster --system $sys --job configs/workloads/qwen2-72b.json --format json \
  --set chip.hbm.capacity_GiB=32 --steps 1 >"$tmp/mem.json"
train_peak=$("$npusim" train --system $sys --workload configs/workloads/qwen2-72b.json --format json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["memory"]["peak_GiB"])')
check "a workload job's memory is train's fullest stage ($train_peak GiB)" \
  same "$(field "$tmp/mem.json" 'j["jobs"][0]["peak_memory_GiB"]')" "$train_peak"
check "... and a job over its HBM says it does not fit" \
  same "$(field "$tmp/mem.json" '(j["jobs"][0]["capacity_GiB"], j["jobs"][0]["fits"])')" "(32, False)"
expect_line "a job that would repeat over 1000 times" \
  "$half: expected a step of at least 0.0328159 s (the longest job's 0.0546931 s x --steps / 1000), found 0.0273495 s: it would repeat 1200 times" \
  "$npusim" cluster --system $sys --job $x@spread --job $half@spread --steps 600
# Metamorphic: one job alone in cluster = replay, step by step. Steps follow one
# another as a training loop's do (each waits until every rank of the job has
# ended the one before), so a job alone takes, per step, exactly what npusim
# replay says of one step, for any --steps: traces with overlapping streams,
# point-to-point pipelines and collectives, op ids up to the reader's 2^30, and
# a training workload (dp 2, tp 2, pp 2: its stages end at different times),
# both fidelities, alone and "together" (alone, it is its own together run).
python3 - "$tmp/ids.json" <<'PY'
import json, sys
big = 1 << 30 # the largest id a trace may give
ops = [{"id": big - 1, "kind": "delay", "stream": "a", "duration_us": 3},
       {"id": big, "kind": "allreduce", "stream": "b", "comm": "all", "bytes": 1 << 20,
        "deps": [big - 1]},
       {"id": big - 2, "kind": "delay", "stream": "a", "duration_us": 50}]
json.dump({"format": "npusim-trace", "version": 1, "name": "large ids", "ranks": 8,
           "communicators": [{"name": "all", "groups": ["0-7"]}],
           "programs": [{"ranks": "0-3", "ops": ops},
                        {"ranks": "4-7", "ops": ops[:2]}]}, open(sys.argv[1], "w"))
PY
tiny=tests/data/train/tiny.json
"$npusim" train --system $sys --workload $tiny --emit-trace "$tmp/tiny.json" >/dev/null
for job in traces/tp_overlap.json.gz traces/mixed.json traces/two_ranks_p2p.json \
  traces/pipeline_4stage.json "$tmp/ids.json" $tiny; do
  trace=$job
  [ "$job" = $tiny ] && trace=$tmp/tiny.json
  for fid in analytic flow; do
    rep=$("$npusim" replay --system $sys --trace "$trace" --fidelity $fid --format json |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["step_time_s"])')
    for steps in 1 3 10; do
      "$npusim" cluster --system $sys --job "$job" --fidelity $fid --steps $steps --format json \
        >"$tmp/one.json"
      check "one job in cluster = replay: $(basename "$job") $fid --steps $steps ($rep s a step)" \
        same "$(field "$tmp/one.json" '[(k["steps"], k["step_time_alone_s"], k["step_time_together_s"]) for k in j["jobs"]]')" \
        "[($steps, $rep, $rep)]"
    done
  done
done
check "... and replay of the workload's trace = train" same "$rep" \
  "$("$npusim" train --system $sys --workload $tiny --fidelity flow --format json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["step_time_s"])')"
# The merge's size is bounded before anything runs (jobs_merge.h): 160 Mi ops
# run on all NPUs over all steps, 8 Mi ops in the merged programs.
python3 - "$tmp/wide.json" <<'PY'
import json, sys
ops = [{"id": i, "kind": "compute", "stream": "s", "duration_us": 1} for i in range(4000)]
json.dump({"format": "npusim-trace", "version": 1, "name": "wide", "ranks": 64,
           "communicators": [], "programs": [{"ranks": "0-63", "ops": ops}]},
          open(sys.argv[1], "w"))
PY
expect_line "a job past the bound on ops run on all NPUs, refused before it runs" \
  "$tmp/wide.json: expected at most $((160 << 20)) ops run on its NPUs over its 1000 steps (its programs' ops x their ranks x the steps: npusim cluster simulates every rank), found $((64 * (4000 * 1000 + 999)))" \
  "$npusim" cluster --system $sys --job "$tmp/wide.json" --steps 1000
expect_line "two jobs within it alone, past it together" \
  "npusim cluster: expected at most $((160 << 20)) ops run on all NPUs and $((1 << 23)) in the programs on the cluster over the jobs' steps, found $((2 * 64 * (4000 * 400 + 399))) and $((2 * (4000 * 400 + 399))) (the most from $tmp/wide.json)" \
  "$npusim" cluster --system $sys --set cluster.nodes=16 --job "$tmp/wide.json" --job "$tmp/wide.json" --steps 400
python3 - "$tmp/split.json" <<'PY'
import json, sys
ops = [{"id": i, "kind": "compute", "stream": "s", "duration_us": 1} for i in range(4000)]
json.dump({"format": "npusim-trace", "version": 1, "name": "split", "ranks": 32,
           "communicators": [], "programs": [{"ranks": str(r), "ops": ops} for r in range(32)]},
          open(sys.argv[1], "w"))
PY
expect_line "a job past the bound on ops in the merged programs" \
  "$tmp/split.json: expected at most $((1 << 23)) ops in its programs on the cluster over its 70 steps (its programs' ops x the groups its placement splits their ranks into x the steps), found $((32 * (4000 * 70 + 69)))" \
  "$npusim" cluster --system $sys --job "$tmp/split.json" --steps 70
expect_line "no job" 'npusim cluster: expected --job FILE[@PLACEMENT], found none' \
  "$npusim" cluster --system $sys
expect_line "a bad placement" \
  "--job $x@loose: expected packed, spread or an NPU list such as 0-15,32-47 after @, found \"loose\"" \
  "$npusim" cluster --system $sys --job $x@loose
expect_line "a list of the wrong length" \
  "$x: expected 16 NPUs after @ for its 16 ranks, found 8 in \"0-7\"" \
  "$npusim" cluster --system $sys --job $x@0-7
expect_line "two jobs on one NPU" \
  "$x: expected NPUs no other job holds, found NPU 8 taken (or named twice)" \
  "$npusim" cluster --system $sys --job $x@0-15 --job $x@8-23
expect_line "an NPU outside the cluster" \
  "$x: expected NPUs below 64 (the cluster's), found 64" \
  "$npusim" cluster --system $sys --job $x@49-64
expect_line "no room" \
  "$x: expected room for its 16 ranks (packed, 8 per server), found 0 free NPUs" \
  "$npusim" cluster --system $sys --job $x --job $x --job $x --job $x --job $x
expect_line "a serving workload" \
  'configs/workloads/serve-llama3-8b.json: training: expected a training section (a serving workload runs with npusim serve)' \
  "$npusim" cluster --system $sys --job configs/workloads/serve-llama3-8b.json
expect_line "bad --steps" '--steps: expected a whole number in [1, 1000], found "0"' \
  "$npusim" cluster --system $sys --job $x --steps 0
python3 - "$x" "$tmp/fp8.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["programs"][0]["ops"][0] = {"id": 0, "kind": "matmul", "stream": "compute",
                              "shape": [64, 64, 64], "dtype": "fp8"}
json.dump(t, open(sys.argv[2], "w"))
PY
expect_line "a job its run alone refuses names the job and the reason whole" \
  "$tmp/fp8.json: npusim cluster: rank 0 op 0: dtype: expected a type the cube of ascend-910b2 computes, found fp8 (chip.cube.fp8_macs_per_cycle = 0)" \
  "$npusim" cluster --system $sys --job "$tmp/fp8.json" --job $x
expect_line "a step that takes no time" \
  "$tmp/zero.json: expected a step that takes time, found one of 0 s (nothing to slow down)" \
  bash -c "python3 -c 'import json; print(json.dumps({\"format\": \"npusim-trace\", \"version\": 1, \"name\": \"z\", \"ranks\": 1, \"communicators\": [], \"programs\": [{\"ranks\": \"0\", \"ops\": [{\"id\": 0, \"kind\": \"delay\", \"stream\": \"s\", \"duration_us\": 0}]}]}))' >'$tmp/zero.json' && exec '$npusim' cluster --system $sys --job '$tmp/zero.json'"
gzip -c $x >"$tmp/x.json.gz"
"$npusim" cluster --system $sys --job "$tmp/x.json.gz@spread" --job $x@spread --format json >"$tmp/gz.json"
check "a gzipped trace job runs as the plain one" \
  same "$(field "$tmp/gz.json" 'j["jobs"][0]["step_time_together_s"]')" \
  "$(field "$tmp/shared_analytic.json" 'j["jobs"][0]["step_time_together_s"]')"
"$npusim" cluster --system $sys --job $x@spread --job $half@spread --chrome-trace "$tmp/c.json" \
  --trace-ranks 0-31 >"$tmp/table.txt"
check "the run together as a Chrome trace the checker accepts" python3 tests/e2e/check_chrome_trace.py "$tmp/c.json"
check "... holding the NPUs --trace-ranks names" same "$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sorted({e["pid"] for e in (d["traceEvents"] if isinstance(d, dict) else d) if "pid" in e}))' "$tmp/c.json")" \
  "$(python3 -c 'print(list(range(32)))')"
check "the table names both jobs and the shared uplinks" \
  bash -c "grep -q '^0   exchange across leav' '$tmp/table.txt' && grep -q '^1   exchange across leav' '$tmp/table.txt' && grep -q 'leaf0.up' '$tmp/table.txt'"
"$npusim" cluster --system $sys --job $x@0-7 --output "$tmp/out.txt" 2>/dev/null
check "a refused run writes no --output" test ! -e "$tmp/out.txt"
finish cluster_e2e
