#!/usr/bin/env bash
# sweep_e2e.sh NPUSIM - end-to-end checks of scripts/tools/npusim-sweep, npusim-plot
# and npusim-plan:
#   - bad specs (not JSON, unknown config path, empty axis, bad filter name)
#     exit 2 with one line before any point runs; so do the F11 reproducers
#     (bad UTF-8, deep nesting, NaN/Infinity, a range to 1e12, 9**9**9 in a
#     filter, a filter that fails, a FIFO spec, --out a file or read-only)
#     and bad flags of all three scripts, each with its exact line;
#   - a 9-point train sweep (tiny model, grid + filter + one failing point)
#     gives one row per point with the axis values npusim really simulated,
#     the failure's error line, and the same bytes with -j1 and -j2;
#   - a rerun runs no simulation (npusim is wrapped to count its runs), and
#     deleting one point's record reruns exactly that point;
#   - a coll sweep over a command option records a point npusim rejects at
#     run time without stopping;
#   - --slurm --dry-run writes an array job and a merge job; run here as plain
#     bash they reproduce the local tables; with root and Debian's slurmctld
#     and slurmd, a private single-node cluster runs them for real;
#   - sweep.json records the spec and each axis column's config key;
#   - plots are valid PNGs (tests/unit/scripts/test_sweep_lib.py inspects their figures);
#     npusim-plan ranks fitting plans by throughput.
# Run from the repository root.
set -u
npusim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(pwd)
sweep=$root/scripts/tools/npusim-sweep
source "$(dirname "$0")/e2e_lib.sh"

# npusim wrapped: every simulation (not validate/schema/--help) is logged
cat >"$tmp/npusim" <<EOF
#!/bin/sh
case "\$1" in validate|schema) ;; *) case " \$* " in *" --help "*) ;; *) echo "\$*" >>"$tmp/runs.log";; esac;; esac
exec "$npusim" "\$@"
EOF
chmod +x "$tmp/npusim"
export NPUSIM=$tmp/npusim
runs() { [ -f "$tmp/runs.log" ] && wc -l <"$tmp/runs.log" || echo 0; }

# bad_spec NAME JSON EXPECTED-SUBSTRING: exit 2, one line naming it, nothing run
bad_spec() {
  printf '%s' "$2" >"$tmp/$1.json"
  local before rc
  before=$(runs)
  (cd "$tmp" && "$sweep" "$1.json" >"$1.stdout" 2>"$1.err")
  rc=$?
  check "bad spec $1: exit 2" test "$rc" -eq 2
  check "bad spec $1: one line naming the problem" \
    bash -c "[ \$(wc -l <'$tmp/$1.err') -eq 1 ] && grep -qF -- '$3' '$tmp/$1.err' && ! grep -q Traceback '$tmp/$1.err'"
  check "bad spec $1: nothing run, nothing written" \
    bash -c "[ $(runs) -eq $before ] && [ ! -e '$tmp/$1.out' ]"
}
base='"system": "'$root'/configs/systems/ascend-910b.json", "workload": "'$root'/tests/data/train/tiny.json"'
bad_spec notjson '{"command": "train", "axes": [' "notjson.json:1:"
bad_spec unknownpath "{$base, \"axes\": [{\"path\": \"parallel.tpp\", \"values\": [1, 2]}]}" \
  'axes[0].path: expected a config key'
bad_spec emptyaxis "{$base, \"axes\": [{\"path\": \"parallel.tp\", \"values\": []}]}" \
  'axes[0].values: expected a non-empty array, found []'
bad_spec badfilter "{$base, \"axes\": [{\"path\": \"parallel.tp\", \"values\": [1]}], \"filter\": \"tq == 1\"}" \
  'unknown name'
bad_spec badoption "{$base, \"axes\": [{\"path\": \"--ranks\", \"values\": [8]}]}" \
  'expected an option of npusim train'

# bad_line NAME EXPECTED-LINE COMMAND...: run in $tmp, exit 2, stderr exactly
# that one line, no traceback, nothing simulated, no NAME.out written
bad_line() {
  local name=$1 line=$2 before rc
  shift 2
  before=$(runs)
  (cd "$tmp" && timeout 60 "$@" >"$name.stdout" 2>"$name.err")
  rc=$?
  check "$name: exit 2 (found $rc)" test "$rc" -eq 2
  check "$name: stderr is exactly: $line" \
    bash -c '[ "$(cat "$1")" = "$2" ] || { echo "found:"; cat "$1"; exit 1; }' _ "$tmp/$name.err" "$line"
  check "$name: nothing run, nothing written" \
    bash -c "[ $(runs) -eq $before ] && [ ! -e '$tmp/$name.out' ]"
}
# F11 reproducers: each once a traceback, a hang or an out-of-memory
printf '{"axes": "\377"}' >"$tmp/badutf.json"
bad_line badutf 'npusim-sweep: badutf.json:1:11: expected UTF-8 text, found byte 0xff' "$sweep" badutf.json
python3 -c 'print("[" * 100000 + "]" * 100000)' >"$tmp/deep.json"
bad_line deep 'npusim-sweep: deep.json: expected a JSON sweep spec nested at most 32 deep, found deeper' \
  "$sweep" deep.json
for c in Infinity NaN; do
  echo "{$base, \"axes\": [{\"path\": \"parallel.tp\", \"range\": [1, $c, 1]}]}" >"$tmp/range$c.json"
  bad_line "range$c" "npusim-sweep: range$c.json: expected finite numbers (JSON has no NaN or Infinity), found $c" \
    "$sweep" "range$c.json"
done
echo "{$base, \"axes\": [{\"path\": \"parallel.tp\", \"range\": [1, 1e12, 1]}]}" >"$tmp/range1e12.json"
bad_line range1e12 'npusim-sweep: range1e12.json: axes[0].range: expected at most 1000000 values, found 1000000000000 ([1, 1000000000000.0, 1])' \
  "$sweep" range1e12.json
echo "{$base, \"axes\": [{\"path\": \"parallel.tp\", \"name\": \"tp\", \"values\": [1, 2]}], \"filter\": \"9**9**9 == 1\"}" >"$tmp/pow.json"
bad_line pow "npusim-sweep: pow.json: filter[0]: '9**9**9 == 1': expected integers within 64 bits, found 9 ** 387420489 at [tp=1]" \
  "$sweep" pow.json
echo "{$base, \"axes\": [{\"path\": \"parallel.tp\", \"name\": \"tp\", \"values\": [1, 0]}], \"filter\": \"8 // tp == 8\"}" >"$tmp/divzero.json"
bad_line divzero "npusim-sweep: divzero.json: filter[0]: '8 // tp == 8': expected a value at every point, found integer division or modulo by zero at [tp=0]" \
  "$sweep" divzero.json
echo "{$base, \"axes\": [{\"path\": \"parallel.tp\", \"values\": [1]}], \"filter\": \"'%999999999d' % 1 == 'x'\"}" >"$tmp/strfmt.json"
bad_line strfmt "npusim-sweep: strfmt.json: filter[0]: \"'%999999999d' % 1 == 'x'\": expected numbers for %, found str %999999999d at [parallel.tp=1]" \
  "$sweep" strfmt.json
mkfifo "$tmp/fifo.json"
bad_line fifo 'npusim-sweep: fifo.json: expected a JSON sweep spec (a regular file), found a FIFO' "$sweep" fifo.json
echo "{$base, \"axes\": [{\"path\": \"parallel.tp\", \"values\": [1]}]}" >"$tmp/one.json"
touch "$tmp/afile"
bad_line outfile 'npusim-sweep: --out afile: expected a folder, found a file' "$sweep" one.json --out afile
mkdir "$tmp/ro"
chmod 555 "$tmp/ro"
if [ "$(id -u)" -ne 0 ]; then
  bad_line outro 'npusim-sweep: --out ro/x: expected a folder it can write, found Permission denied' \
    "$sweep" one.json --out ro/x
elif (cd "$tmp" && unshare -m sh -c 'mount --bind ro ro && mount -o remount,ro,bind ro ro && ! touch ro/probe') 2>/dev/null; then
  # root ignores modes: a read-only bind mount in a private mount namespace instead
  bad_line outro 'npusim-sweep: --out ro: expected a folder it can write, found Read-only file system' \
    unshare -m sh -c 'mount --bind ro ro && mount -o remount,ro,bind ro ro && exec "$0" one.json --out ro' "$sweep"
else
  echo "sweep_e2e: read-only --out skipped (root without mount namespaces)"
fi
# F7: bad flags are one line, exit 2, no usage block; --help still works
bad_line flag_sweep 'npusim-sweep: unrecognized arguments: --nope' "$sweep" one.json --nope
bad_line flag_sweep_j "npusim-sweep: argument -j/--jobs: expected an integer from 1 to 1024, found 'x'" \
  "$sweep" one.json -j x
bad_line flag_sweep_timeout "npusim-sweep: argument --timeout: expected seconds from 0 (no limit) to 1e9, found '-1'" \
  "$sweep" one.json --timeout -1
bad_line flag_sweep_nospec 'npusim-sweep: the following arguments are required: spec' "$sweep"
bad_line flag_plan 'npusim-plan: the following arguments are required: --system, --workload, --npus' \
  "$root/scripts/tools/npusim-plan" --nope
bad_line flag_plan_npus "npusim-plan: argument --npus: expected an integer from 1 to 9223372036854775807, found '0'" \
  "$root/scripts/tools/npusim-plan" --system s --workload w --npus 0
bad_line flag_plot "npusim-plot: argument --kind: invalid choice: 'pie' (choose from 'line', 'bar', 'stacked')" \
  "$root/scripts/tools/npusim-plot" x --x a --y b --kind pie
for s in npusim-sweep npusim-plan npusim-plot; do
  check "$s --help: exit 0, usage on stdout" bash -c "'$root/scripts/tools/$s' --help | grep -q '^usage: $s'"
done

# the CI sweep: the 8 plans of tp x pp x dp = 8 (filter) plus tp=3 (npusim rejects it)
cat >"$tmp/grid.json" <<EOF
{ "command": "train", $base,
  "set": {"training.global_batch": 16},
  "axes": [
    {"path": "parallel.tp", "name": "tp", "values": [1, 2, 4, 3]},
    {"path": "parallel.pp", "name": "pp", "values": [1, 2, 4]},
    {"path": "parallel.dp", "values": [1, 2, 4, 8]}
  ],
  "filter": "tp * pp * parallel.dp == 8 or (tp == 3 and pp == 1 and dp == 1)" }
EOF
(cd "$tmp" && "$sweep" grid.json -j2 --out j2 >/dev/null 2>"$tmp/j2.err")
check "sweep with a failing point exits 1" test $? -eq 1
check "the sweep ran 8 simulations" test "$(runs)" -eq 8
check "9 rows: axes are what npusim simulated, ok rows complete, failure's line recorded" \
  python3 - "$tmp/j2/results.csv" "$tmp/j2/results.jsonl" <<'EOF'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
lines = [json.loads(l) for l in open(sys.argv[2])]
assert len(rows) == 9 and len(lines) == 9, (len(rows), len(lines))
seen = [(int(r["tp"]), int(r["pp"]), int(r["parallel.dp"])) for r in rows]
assert seen == sorted(seen, key=lambda t: ([1, 2, 4, 3].index(t[0]), t[1], t[2])), seen
for r, l in zip(rows, lines):
    assert int(r["point"]) == l["point"] and r["key"] == l["key"]
    if r["tp"] == "3":
        assert r["status"] == "failed" and "parallel.tp: expected a divisor" in r["error"], r
        assert r["step_time_s"] == "", r
        continue
    assert r["status"] == "ok" and r["error"] == "", r
    tp, pp, dp = int(r["tp"]), int(r["pp"]), int(r["parallel.dp"])
    assert int(r["npus"]) == tp * pp * dp == 8, r
    assert int(r["microbatches"]) == 16 // dp, r
    step = float(r["step_time_s"])
    parts = sum(float(r[c]) for c in r if c.startswith("breakdown."))
    assert abs(parts - step) <= 1e-6 * step, (parts, step)
    assert 0 < float(r["mfu"]) < 1 and r["memory.fits"] == "true", r
    assert l["step_time_s"] == step and l["memory.fits"] is True, l
assert len({r["key"] for r in rows}) == 9
EOF
check "failures.txt has one line for the failing point" \
  bash -c "[ \$(wc -l <'$tmp/j2/failures.txt') -eq 1 ] && grep -q '^point 8 \[tp=3 pp=1 parallel.dp=1\]: --set: parallel.tp: expected' '$tmp/j2/failures.txt'"
check "progress line counts done, failed and the ETA" grep -q '^sweep: 9/9 done, 1 failed, ETA' "$tmp/j2.err"

before=$(runs)
(cd "$tmp" && "$sweep" grid.json -j2 --out j2 >/dev/null 2>"$tmp/rerun.err")
check "a rerun runs nothing new" test "$(runs)" -eq "$before"
check "a rerun says all points are done" grep -q '9 already done, 0 to run' "$tmp/rerun.err"
cp "$tmp/j2/results.csv" "$tmp/first.csv"
rm "$tmp/j2/points/$(sed -n 3p "$tmp/j2/results.csv" | cut -d, -f2).json"
(cd "$tmp" && "$sweep" grid.json -j2 --out j2 >/dev/null 2>&1)
check "a lost record reruns exactly that point, same table" \
  bash -c "[ $(runs) -eq $((before + 1)) ] && cmp '$tmp/first.csv' '$tmp/j2/results.csv'"
(cd "$tmp" && "$sweep" grid.json -j1 --out j1 >/dev/null 2>&1)
check "-j1 and -j2 give byte-identical CSV" cmp "$tmp/j1/results.csv" "$tmp/j2/results.csv"
check "sweep.json names the spec and the config key behind each axis column (for plots)" \
  python3 - "$tmp/j1/sweep.json" "$tmp/grid.json" <<'EOF'
import json, sys
about = json.load(open(sys.argv[1]))
assert about == {"spec": sys.argv[2], "description": "", "command": "train",
                 "columns": {"tp": "parallel.tp", "pp": "parallel.pp",
                             "parallel.dp": "parallel.dp"}}, about
EOF
check "-j1 and -j2 give byte-identical JSONL" cmp "$tmp/j1/results.jsonl" "$tmp/j2/results.jsonl"

# a command option as an axis; npusim rejects one value when it runs
cat >"$tmp/coll.json" <<EOF
{ "command": "coll", "system": "$root/configs/systems/ascend-910b.json",
  "options": {"fidelity": "analytic", "sizes": "64M"},
  "axes": [ {"path": "--op", "values": ["allreduce", "allfoo", "allgather"]},
            {"zip": [ {"path": "--ranks", "values": [8, 16]},
                      {"path": "node.scale_up.link_bandwidth_GBps", "name": "hccs", "values": [28, 56]} ]} ] }
EOF
(cd "$tmp" && "$sweep" coll.json --out coll >/dev/null 2>&1)
check "coll sweep: a run-time failure is recorded, the other points run" \
  python3 - "$tmp/coll/results.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(r["op"], r["ranks"], r["hccs"]) for r in rows] == [
    (o, r, h) for o in ("allreduce", "allfoo", "allgather") for r, h in (("8", "28"), ("16", "56"))], rows
for r in rows:
    if r["op"] == "allfoo":
        assert r["status"] == "failed" and r["error"].startswith("--op: expected one of"), r
    else:
        assert r["status"] == "ok" and r["bytes"] == str(64 << 20) and float(r["busbw_GBps"]) > 0, r
EOF

# Slurm: the generated scripts, run as plain bash (the #SBATCH lines are comments)
(cd "$tmp" && "$sweep" grid.json --out slurm --slurm --chunks 3 --dry-run >"$tmp/dry.out" 2>&1)
check "--slurm --dry-run writes scripts and submits nothing" \
  bash -c "grep -q '^sbatch --parsable .*/slurm/slurm/sweep.sbatch' '$tmp/dry.out' && grep -q 'dependency=afterany' '$tmp/dry.out' && [ ! -e '$tmp/slurm/results.csv' ]"
check "the array job has 3 tasks, runs its chunk, and the merge step gathers" \
  bash -c "grep -qx '#SBATCH --array=0-2' '$tmp/slurm/slurm/sweep.sbatch' && grep -q -- '--chunk \"\$SLURM_ARRAY_TASK_ID/3\"' '$tmp/slurm/slurm/sweep.sbatch' && grep -q -- '--merge\$' '$tmp/slurm/slurm/merge.sbatch' && grep -q '^export NPUSIM=' '$tmp/slurm/slurm/merge.sbatch'"
for k in 0 1 2; do SLURM_ARRAY_TASK_ID=$k bash "$tmp/slurm/slurm/sweep.sbatch" >/dev/null 2>&1; done
bash "$tmp/slurm/slurm/merge.sbatch" >/dev/null 2>&1
check "chunks plus merge give the local sweep's table" cmp "$tmp/j1/results.csv" "$tmp/slurm/results.csv"

# a real single-node Slurm, private to this test (own config, ports, state)
# (opt-in, NPUSIM_TEST_SLURM=1 as .ci/run sets it: the daemons run as root with
# auth/none for the seconds the test takes)
if [ "${NPUSIM_TEST_SLURM:-0}" = 1 ] && [ "$(id -u)" -eq 0 ] && command -v slurmctld >/dev/null \
   && command -v slurmd >/dev/null \
   && command -v sbatch >/dev/null; then
  s=$tmp/slurmd-cluster
  mkdir -p "$s/state" "$s/spool"
  host=$(hostname -s)
  port=$((20000 + $$ % 20000))
  cat >"$s/slurm.conf" <<EOF
ClusterName=npusimtest
SlurmctldHost=$host
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$s/slurmctld.log
SlurmdLogFile=$s/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=npusimtest Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$s/slurm.conf
  # in the foreground (-D) as children of this shell, so they are stopped and
  # reaped by their own ids
  slurmctld -D -i >/dev/null 2>&1 &
  ctld=$!
  slurmd -D >/dev/null 2>&1 &
  sd=$!
  stop_slurm() {
    kill "$sd" "$ctld" 2>/dev/null
    wait "$sd" "$ctld" 2>/dev/null
    rm -rf "$tmp"
  }
  trap stop_slurm EXIT
  for _ in $(seq 50); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.2; done
  (cd "$tmp" && "$sweep" grid.json --out real --slurm --chunks 3 >"$tmp/real.out" 2>&1)
  check "slurm: the array and the merge job are submitted" grep -q '^submitted array job' "$tmp/real.out"
  for _ in $(seq 300); do [ -f "$tmp/real/results.csv" ] && ! squeue -h 2>/dev/null | grep -q . && break; sleep 0.2; done
  check "slurm: the merged table equals the local sweep's" cmp "$tmp/j1/results.csv" "$tmp/real/results.csv"
else
  echo "sweep_e2e: real Slurm part skipped (needs NPUSIM_TEST_SLURM=1, root and Debian's slurmctld, slurmd, slurm-client)"
fi

# plots: valid PNGs (signature, IHDR, non-trivial size)
png_ok() { python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n" and d[12:16] == b"IHDR" and len(d) > 5000, len(d)' "$1"; }
plot=$root/scripts/tools/npusim-plot
"$plot" "$tmp/j1" --x tp --y step_time_s --hue pp --out "$tmp/line.png" >/dev/null 2>&1
check "line chart: step time against tp, one line per pp" png_ok "$tmp/line.png"
"$plot" "$tmp/j1/results.jsonl" --x tp,pp --y mfu --kind bar --where parallel.dp=2 --out "$tmp/bar.png" >/dev/null 2>&1
check "bar chart: MFU against tp/pp from the JSONL" png_ok "$tmp/bar.png"
"$plot" "$tmp/j1" --x tp,pp,parallel.dp --y 'breakdown.*' --kind stacked --out "$tmp/stack.png" >/dev/null 2>&1
check "stacked breakdown bars" png_ok "$tmp/stack.png"
"$plot" "$tmp/j1" --x tp --y step_time_s --hue pp --slowdown 1 --out "$tmp/slow.png" >/dev/null 2>&1
check "slowdown chart: step time over its value at tp = 1, per pp" png_ok "$tmp/slow.png"
"$plot" "$tmp/j1" --x tp --y step_time_s --hue pp --slowdown 3 --out "$tmp/slow3.png" >/dev/null 2>"$tmp/slow.err"
check "slowdown against an x the sweep lacks: exit 2, one line naming the values, no file" \
  bash -c "[ $? -eq 2 ] && grep -q -- '--slowdown: expected a value of tp (1, 2' '$tmp/slow.err' && [ ! -e '$tmp/slow3.png' ]"
"$plot" "$tmp/j1" --x tp --y nope --out "$tmp/nope.png" >/dev/null 2>"$tmp/plot.err"
check "plot of an unknown field: exit 2, one line, no file" \
  bash -c "[ $? -eq 2 ] && [ \$(wc -l <'$tmp/plot.err') -eq 1 ] && [ ! -e '$tmp/nope.png' ]"

# plan search on the tiny model: 8 NPUs, every valid plan, best first
"$root/scripts/tools/npusim-plan" --system configs/systems/ascend-910b.json --workload tests/data/train/tiny.json \
  --set training.global_batch=16 --npus 8 --format csv --top 100 >"$tmp/plan.csv" 2>"$tmp/plan.err"
check "plan: every tp x pp x dp = 8 the model admits, ranked by throughput, fitting first" \
  python3 - "$tmp/plan.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
plans = {(int(r["tp"]), int(r["pp"]), int(r["dp"])) for r in rows}
# tp | gcd(heads 8, kv 4) and <= 8; pp | 8 layers; dp = 8 / (tp pp); 16 % dp == 0
want = {(tp, pp, 8 // (tp * pp)) for tp in (1, 2, 4) for pp in (1, 2, 4, 8) if 8 % (tp * pp) == 0}
assert plans == want, (sorted(plans), sorted(want))
tput = [float(r["tokens_per_s_per_npu"]) for r in rows]
fits = [r["fits"] == "yes" for r in rows]
assert fits == sorted(fits, reverse=True)
for a, b, fa, fb in zip(tput, tput[1:], fits, fits[1:]):
    assert fa != fb or a >= b, (a, b)
assert [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1))
EOF
check "plan: says how many plans it evaluated" grep -q '^npusim-plan: 9 plans evaluated on 8 NPUs' "$tmp/plan.err"

# serve and cluster sweeps: the shipped specs run, their figures are columns,
# and they say what the models say (goodput never above the offered rate, more
# GPUs per instance sustain more; packed jobs do not interfere, spread ones slow
# down less as the NIC gets faster), and plot.
for spec in llama3-8b-h100-serve-rate llama3-8b-910b-pod64-cluster; do
  "$sweep" "$root/configs/sweeps/$spec.json" --out "$tmp/$spec.out" -j 2 >/dev/null 2>"$tmp/$spec.err"
done
check "serve sweep: 15 points, tp 4 sustains more goodput than tp 1 at 80/s" \
  python3 - "$tmp/llama3-8b-h100-serve-rate.out/results.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 15 and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
for r in rows:
    assert 0 < float(r["goodput_per_s"]) <= float(r["requests_per_s"]), r
    assert r["pools.0.tp"] == r["tp"], r
at80 = {r["tp"]: float(r["goodput_per_s"]) for r in rows if r["rate_per_s"] == "80"}
assert at80["4"] > at80["1"], at80
EOF
check "cluster sweep: packed slowdown 1, spread > 1 and falling with the NIC bandwidth" \
  python3 - "$tmp/llama3-8b-910b-pod64-cluster.out/results.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 6 and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
packed = [float(r["jobs.1.slowdown"]) for r in rows if r["placement"] == "packed"]
spread = [float(r["jobs.1.slowdown"]) for r in rows if r["placement"] == "spread"]
assert packed == [1.0] * 3, packed
assert spread[0] > spread[1] > spread[2] > 1, spread
EOF
"$root/scripts/tools/npusim-plot" "$tmp/llama3-8b-h100-serve-rate.out" --x rate_per_s \
  --y goodput_per_s --hue tp --out "$tmp/serve.png" >/dev/null 2>&1
"$root/scripts/tools/npusim-plot" "$tmp/llama3-8b-910b-pod64-cluster.out" --x roce_GBps \
  --y jobs.1.slowdown --hue placement --out "$tmp/cluster.png" >/dev/null 2>&1
check "serve and cluster sweeps plot" sh -c "[ -s '$tmp/serve.png' ] && [ -s '$tmp/cluster.png' ]"

finish sweep_e2e
