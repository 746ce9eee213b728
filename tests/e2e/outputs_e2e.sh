#!/usr/bin/env bash
# outputs_e2e.sh NPUSIM - outputs at any size. The Chrome traces npusim writes open in Perfetto as
# intended (tests/e2e/check_chrome_trace.py: the trace-event schema, named and
# sorted tracks, no two slices of a track overlapping, every flow arrow whole),
# for replay (flow, with sends and receives) and train (slices named by
# micro-batch, layer and pass, args with shape and bounding pipe), plain and
# gzip; --trace-ranks keeps exactly its ranks; the validator fails on a trace
# with overlapping slices; options a command does not use are refused naming
# the option; progress goes to stderr only, with --progress, never changing
# stdout; link tables show N, all, or the kinds asked for, JSON every link;
# CSV quotes free text (RFC 4180) and train's has a row per stage. Run from the
# repository root.
set -u
npusim=${1:?usage: outputs_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
check_trace=tests/e2e/check_chrome_trace.py

check "replay flow timeline (gz) is valid" sh -c "$npusim replay --system configs/systems/ascend-910b.json \
  --trace traces/mixed.json --chrome-trace $tmp/mixed.json.gz >/dev/null && python3 $check_trace $tmp/mixed.json.gz"
check "replay p2p timeline is valid, with flow arrows" sh -c "$npusim replay --system configs/systems/ascend-910b.json \
  --trace traces/two_ranks_p2p.json --chrome-trace $tmp/p2p.json >/dev/null && python3 $check_trace $tmp/p2p.json && \
  grep -q '\"ph\": \"f\"' $tmp/p2p.json"
check "replay pipeline timeline (plain) is valid" sh -c "$npusim replay --system configs/systems/ascend-910b.json \
  --trace traces/pipeline_4stage.json --fidelity analytic --chrome-trace $tmp/pp.json --trace-ranks 1-2 >/dev/null && \
  python3 $check_trace $tmp/pp.json --ranks 1-2"

train="$npusim train --system configs/systems/ascend-910b.json --workload configs/workloads/llama2-7b.json \
  --set training.global_batch=32"
check "train timeline keeps --trace-ranks 0-1" sh -c "$train --chrome-trace $tmp/train.json.gz --trace-ranks 0-1 >/dev/null && \
  python3 $check_trace $tmp/train.json.gz --ranks 0-1"
check "train slices are named by micro-batch, layer and pass" sh -c \
  "zcat $tmp/train.json.gz | grep -q '\"name\": \"mb1 L15 bwd matmul\"'"
check "train compute slices carry shape and bounding pipe" sh -c \
  "zcat $tmp/train.json.gz | grep -q '\"shape\": \\[4096, 12288, 4096\\], \"dtype\": \"bf16\", \"bound\": \"cube\"'"
check "train collectives carry bytes and communicator" sh -c \
  "zcat $tmp/train.json.gz | grep -q '\"bytes\": [0-9.e+]*, \"comm\": \"dp\", \"group\": 0'"
check "the same run writes the same timeline" sh -c "$train --chrome-trace $tmp/again.json.gz --trace-ranks 0-1 >/dev/null && \
  cmp $tmp/train.json.gz $tmp/again.json.gz"

# the validator can fail: two overlapping slices on one track, and a lone flow start
cat >"$tmp/overlap.json" <<'JSON'
{"traceEvents": [
{"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "rank 0"}},
{"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "compute"}},
{"name": "a", "ph": "X", "ts": 0.000, "dur": 1.001, "pid": 0, "tid": 0},
{"name": "b", "ph": "X", "ts": 1.000, "dur": 1.000, "pid": 0, "tid": 0},
{"name": "p2p", "ph": "s", "id": "0>1:0#0", "ts": 0.5, "pid": 0, "tid": 0}
]}
JSON
python3 $check_trace "$tmp/overlap.json" >"$tmp/v.out" 2>&1
if [ $? -eq 1 ] && grep -q "before the previous slice" "$tmp/v.out" && grep -q "flow 0>1:0#0" "$tmp/v.out"; then
  ok
else
  bad "the validator fails on overlapping slices and a lone flow start"; cat "$tmp/v.out"
fi
# and on B/E pairs that do not nest: an E of another slice, a B never closed
cat >"$tmp/unnested.json" <<'JSON'
{"traceEvents": [
{"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "rank 0"}},
{"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "compute"}},
{"name": "a", "ph": "B", "ts": 0.000, "pid": 0, "tid": 0},
{"name": "b", "ph": "B", "ts": 0.500, "pid": 0, "tid": 0},
{"name": "a", "ph": "E", "ts": 1.000, "pid": 0, "tid": 0}
]}
JSON
python3 $check_trace "$tmp/unnested.json" >"$tmp/v.out" 2>&1
if [ $? -eq 1 ] && grep -q "differs from its B" "$tmp/v.out" && grep -q "a B never closed" "$tmp/v.out"; then
  ok
else
  bad "the validator fails on B/E pairs that do not nest"; cat "$tmp/v.out"
fi

expect_line "train refuses --trace" \
  "npusim train: unknown option --trace; usage: npusim train --system S.json --workload W.json [--fidelity analytic|flow] [--chrome-trace OUT] [options]" \
  $train --trace traces/mixed.json
expect_line "coll names --chrome-trace, not its value" \
  "npusim coll: unknown option --chrome-trace; usage: npusim coll --system S.json --op OP --ranks N [--ranks-per-node K] [--sizes MIN:MAX[:FACTOR]] [--algo A] [--fidelity flow|analytic] [--links [N|all]] [options]" \
  $npusim coll --system configs/systems/ascend-910b.json --op allreduce --ranks 8 --chrome-trace F
expect_line "--trace-ranks outside the job" \
  "--trace-ranks: expected ranks within 0-15, found \"16-17\"" \
  $npusim replay --system configs/systems/ascend-910b.json --trace traces/mixed.json --chrome-trace $tmp/x.json --trace-ranks 16-17
check "a refused run leaves no timeline" test ! -e "$tmp/x.json"

# progress: on stderr with --progress (or on a terminal), never on stdout
$train --format json >"$tmp/quiet.out" 2>"$tmp/quiet.err"
NPUSIM_PROGRESS_AFTER_S=0 $train --format json --progress --chrome-trace $tmp/p.json --trace-ranks 0-1 \
  >"$tmp/loud.out" 2>"$tmp/loud.err"
check "progress leaves stdout unchanged" cmp "$tmp/quiet.out" "$tmp/loud.out"
check "no progress on a piped stderr without --progress" test ! -s "$tmp/quiet.err"
check "--progress reports the replay's ops and simulated time" \
  grep -qE '^npusim train: [0-9]+ of [0-9]+ ops \(100%\), simulated [0-9.]+ s' "$tmp/loud.err"
check "--progress reports the timeline's ranks" \
  grep -q '^npusim: writing the timeline: 2 of 2 ranks (100%)' "$tmp/loud.err"

# link tables: a 2:1 spine's uplinks show when asked for by kind
coll="$npusim coll --system configs/systems/ascend-910b.json --op allreduce --ranks 64 --sizes 64M:64M \
  --set cluster.scale_out.oversubscription=2 --set cluster.scale_out.npus_per_leaf=16"
check "--links 3 shows 3 rows" sh -c "$coll --links 3 | sed -n '/links of the largest/,\$p' | grep -c '^  [a-z]' | grep -qx 3"
check "--links-kind uplink shows only uplinks" sh -c "$coll --links all --links-kind uplink | \
  sed -n '/links of the largest/,\$p' | grep '^  [a-z]' | awk '{print \$2}' | sort -u | grep -qx uplink"
check "--links all in JSON lists every link, of every kind" python3 -c 'import json,subprocess,sys
rows = json.loads(subprocess.run(sys.argv[1].split() + ["--links", "2", "--format", "json"],
                  capture_output=True, check=True).stdout)
links = rows[-1]["links"]
assert len(links) > 2 and {l["kind"] for l in links} == {"scale_up", "nic", "uplink"}, links[:3]' "$coll"
expect_line "--links-kind alone" "--links-kind: expected --links with it, found none" $coll --links-kind nic

# CSV: free text quoted; train has a row per pipeline stage with the breakdown
check "train CSV quotes a name with a comma and a quote; a row per stage" python3 -c 'import csv,io,subprocess,sys
out = subprocess.run(sys.argv[1].split() + ["--set", "workload.model.name=a,\"b\"", "--format", "csv"],
                     capture_output=True, check=True, text=True).stdout
rows = list(csv.DictReader(io.StringIO(out)))
assert [r["stage"] for r in rows] == ["0", "1"], rows
assert all(r["workload"] == "a,\"b\"" for r in rows), rows[0]["workload"]
parts = sum(float(rows[0][k]) for k in rows[0] if k.endswith("_s") and k not in ("step_time_s", "tokens_per_s"))
assert abs(parts - float(rows[0]["step_time_s"])) < 1e-6 * parts, (parts, rows[0])' "$train"

# ---- a run's outputs are one set: all new or all old (issue 26, items 12 and 14)
set_dir=$tmp/set
mkdir "$set_dir"
no_temp() { ! ls -a "$1" | grep -q '\.tmp'; }
serve="$npusim serve --system configs/systems/h100-dgx.json --workload configs/workloads/serve-llama3-8b.json \
  --set serving.requests.count=50"
echo old >"$set_dir/ts.csv"
echo old >"$set_dir/tl.json"
check "a failed --chrome-trace leaves --timeseries untouched (exit 1, one line)" bash -c "
  $serve --timeseries '$set_dir/ts.csv' --chrome-trace '$set_dir' >/dev/null 2>'$tmp/set.err'; [ \$? -eq 1 ] &&
  [ \$(wc -l <'$tmp/set.err') -eq 1 ] && grep -qx old '$set_dir/ts.csv'"
check "a failed --output leaves --chrome-trace and --timeseries untouched" bash -c "
  ! $serve --timeseries '$set_dir/ts.csv' --chrome-trace '$set_dir/tl.json' --output '$set_dir' >/dev/null 2>&1 &&
  grep -qx old '$set_dir/ts.csv' && grep -qx old '$set_dir/tl.json'"
check "no temporary file after a failed set" no_temp "$set_dir"

# A signal while the second file is made durable (strace delays the second
# fsync: the Chrome trace's, --timeseries being written first): neither file
# is replaced and no temporary file stays. SIGKILL instead leaves its
# temporary files, NAME.npusim-PID-N.tmp; the next run removes them.
if command -v strace >/dev/null && strace -o /dev/null true 2>/dev/null; then
  signal_mid_set() { # signal_mid_set SIGNAL : runs serve, signals it at its second fsync
    strace -f -o /dev/null -e trace=fsync -e inject=fsync:delay_enter=3000000:when=2 \
      $serve --timeseries "$set_dir/ts.csv" --chrome-trace "$set_dir/tl.json" >/dev/null 2>&1 &
    local tracer=$! pid=""
    for _ in $(seq 100); do
      [ "$(ls "$set_dir" | grep -c '\.tmp$')" -ge 2 ] && break
      sleep 0.05
    done
    pid=$(pgrep -P "$tracer" -x npusim)
    [ -n "$pid" ] && kill "-$1" "$pid"
    { wait "$tracer"; } 2>/dev/null # "Killed" is expected
  }
  signal_mid_set TERM
  check "SIGTERM between two outputs: both old, no temporary file" bash -c "
    grep -qx old '$set_dir/ts.csv' && grep -qx old '$set_dir/tl.json' && ! ls -a '$set_dir' | grep -q '\.tmp'"
  signal_mid_set KILL
  check "SIGKILL between two outputs: both old, its temporary files left" bash -c "
    grep -qx old '$set_dir/ts.csv' && grep -qx old '$set_dir/tl.json' &&
    [ \$(ls '$set_dir' | grep -c '^t[sl]\.[a-z]*\.npusim-[0-9]*-0\.tmp\$') -eq 2 ]"
  sleep 300 &
  alive=$!
  echo live >"$set_dir/other.json.npusim-$alive-0.tmp" # a live process's: kept
  dead=$(sh -c 'echo $$')
  echo dead >"$set_dir/other.json.npusim-$dead-3.tmp" # an exited process's: removed
  check "the next run removes a dead run's temporary files, not a live one's" bash -c "
    $serve --timeseries '$set_dir/ts.csv' >/dev/null && ! grep -qx old '$set_dir/ts.csv' &&
    [ \"\$(ls '$set_dir' | grep '\.tmp\$')\" = other.json.npusim-$alive-0.tmp ]"
  kill "$alive"
  rm -f "$set_dir/other.json.npusim-$alive-0.tmp"
else
  echo "outputs_e2e: strace unavailable, the signal checks are skipped"
fi

# --emit-chakra: the set is written whole or not at all, and a later export of
# fewer ranks removes the ranks it no longer has (a replay of PREFIX read them)
emit="$npusim train --system configs/systems/ascend-910b.json --workload configs/workloads/llama2-7b.json \
  --set training.global_batch=32 --set parallel.dp=2 --fidelity analytic"
chakra=$tmp/chakra
mkdir "$chakra"
$emit --set parallel.pp=4 --emit-chakra "$chakra/c" >/dev/null
check "8 ranks exported" test -s "$chakra/c.7.et"
rm "$chakra/c.2.et"
mkdir "$chakra/c.2.et" # rank 2 cannot be written
(cd "$chakra" && md5sum c.[0-9]*.et c.comm_groups.json 2>/dev/null) >"$tmp/chakra.md5"
check "a failed export leaves the old set untouched and no temporary file" bash -c "
  ! $emit --set parallel.pp=2 --emit-chakra '$chakra/c' >/dev/null 2>&1 &&
  (cd '$chakra' && md5sum --quiet -c '$tmp/chakra.md5') && ! ls -a '$chakra' | grep -q '\.tmp'"
rmdir "$chakra/c.2.et"
gzip -c "$chakra/c.0.et" >"$chakra/c.8.et.gz" # an earlier gzip rank: read as rank 8
check "an export of 4 ranks over 8 leaves 4 ranks and the groups" bash -c "
  $emit --set parallel.pp=2 --emit-chakra '$chakra/c' >/dev/null &&
  [ \"\$(cd '$chakra' && ls | tr '\n' ' ')\" = 'c.0.et c.1.et c.2.et c.3.et c.comm_groups.json ' ]"
check "and a replay of the prefix reads 4 ranks" bash -c "
  $npusim replay --system configs/systems/ascend-910b.json --trace '$chakra/c' --fidelity analytic \
    --comm-group '$chakra/c.comm_groups.json' --format json | python3 -c 'import json, sys; assert json.load(sys.stdin)[\"ranks\"] == 4'"

finish outputs_e2e
