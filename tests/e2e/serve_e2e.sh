#!/usr/bin/env bash
# serve_e2e.sh NPUSIM - npusim serve end to end. Refusals are one line on
# stderr, exit status 2, nothing on stdout and no output file: an empty trace,
# a request longer than the context (JSONL and CSV), a KV cache or weights that
# do not fit (saying by how much), a negative rate, arrivals out of order, bad
# JSONL values and CSV shapes, a FIFO trace, --slo errors, train on a serving workload and
# serve on a training one, half a disaggregated deployment. Runs: the same
# requests as JSONL, CSV (also a spreadsheet's: BOM, CRLF, quotes) and gzip give
# the same report; --format json and csv
# carry their fields; --timeseries has a row per iteration; --chrome-trace is a
# valid trace (tests/e2e/check_chrome_trace.py); the same run twice gives the same
# bytes; goodput counts no request under an impossible SLO and every one under
# a loose one; disaggregated, a KV transfer per request with more than one
# output token; two pipeline engines sharing a tight cache complete both
# prompts; the same trace 1e14 s later gives the same bytes, and the generator
# at 1e-9/s the latencies it gives at 1e-5/s. Run from the repository root.
set -u
npusim=${1:?usage: serve_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
sys=configs/systems/ascend-910b.json
base=configs/workloads/serve-llama3-8b.json
serve="$npusim serve --system $sys --workload $base"
small="--set workload.serving.requests.count=40"

# ---- traces: the same 12 requests as JSONL, CSV (columns in another order), gzip ----
python3 - "$tmp" <<'PY'
import gzip, json, sys
d = sys.argv[1]
reqs = [(0.0, 700, 1), (0.05, 130, 40), (0.1, 2048, 17), (0.1, 64, 1), (0.35, 900, 120),
        (0.4, 16, 8), (0.9, 3000, 64), (1.0, 512, 1), (1.25, 256, 200), (1.5, 1000, 33),
        (2.0, 40, 5), (2.5, 4000, 90)]
jsonl = "".join(json.dumps({"arrival_s": a, "prompt_tokens": p, "output_tokens": o}) + "\n"
                for a, p, o in reqs)
csv = "output_tokens,arrival_s,prompt_tokens\n" + "".join(f"{o},{a},{p}\n" for a, p, o in reqs)
open(f"{d}/reqs.jsonl", "w").write(jsonl)
open(f"{d}/reqs.csv", "w").write(csv)
gzip.open(f"{d}/reqs.jsonl.gz", "wt").write(jsonl)
gzip.open(f"{d}/reqs.csv.gz", "wt").write(csv)
open(f"{d}/multi", "w").write(str(sum(o > 1 for _, _, o in reqs)))
# as a spreadsheet writes it: a byte order mark, CRLF, every field quoted, a text column
excel = '\ufeff"arrival_s","prompt_tokens","output_tokens","note"\r\n' + "".join(
    f'"{a}","{p}","{o}","user {i}, ""quoted"""\r\n' for i, (a, p, o) in enumerate(reqs))
open(f"{d}/reqs_excel.csv", "w", encoding="utf-8", newline="").write(excel)
PY
trace() { echo "--set workload.serving.requests.trace=$1"; }

# ---- refusals ----
: >"$tmp/empty.jsonl"
expect_line "an empty trace" "$tmp/empty.jsonl: expected at least one request, found none" \
  $serve $(trace "$tmp/empty.jsonl") --chrome-trace "$tmp/x.json"
check "a refused run leaves no timeline" test ! -e "$tmp/x.json"
# relative trace paths resolve from the workload file's folder
cat >"$tmp/rel.json" <<JSON
{"extends": "$PWD/$base", "serving": {"requests": {"trace": "empty.jsonl"}}}
JSON
expect_line "a relative trace path, from the workload's folder" \
  "$tmp/empty.jsonl: expected at least one request, found none" \
  $npusim serve --system $sys --workload "$tmp/rel.json"

printf '{"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 10}\n{"arrival_s": 1, "prompt_tokens": 8000, "output_tokens": 193}\n' \
  >"$tmp/long.jsonl"
expect_line "a request over the context (JSONL)" \
  "$tmp/long.jsonl:2: prompt_tokens + output_tokens: expected at most the context, model.seq_len = 8192, found 8000 + 193" \
  $serve $(trace "$tmp/long.jsonl")
printf 'arrival_s,prompt_tokens,output_tokens\n0,100,10\n1,8000,193\n' >"$tmp/long.csv"
expect_line "a request over the context (CSV)" \
  "$tmp/long.csv:3: prompt_tokens + output_tokens: expected at most the context, model.seq_len = 8192, found 8000 + 193" \
  $serve $(trace "$tmp/long.csv")
printf 'arrival_s,prompt_tokens,output_tokens\n0,100,10\n1,8000,192\n' >"$tmp/fits.csv"
check "prompt + output equal to seq_len runs" sh -c "$serve $(trace "$tmp/fits.csv") >/dev/null"

# KV: the longest generated request is 4096 + 930 = 5026 tokens, 315 blocks of
# 16 at 128 KiB a token: 0.615 GiB against 0.01 GiB (5 blocks: 0.010 GiB)
expect_line "KV cache of the longest request over capacity, by how much" \
  "$base: serving.parallel: expected the KV cache of the longest request (5026 tokens, 0.615 GiB per NPU) to fit an attention group's KV capacity (0.010 GiB per NPU), found 0.605 GiB over" \
  $serve --set workload.serving.kv_cache.capacity_GiB=0.01 --chrome-trace "$tmp/x.json" --timeseries "$tmp/x.csv"
check "a refused run leaves no time series" test ! -e "$tmp/x.csv"
# weights: 160 layers of Llama-3-8B are 66.96 GiB on one 64 GiB NPU
expect_line "weights over HBM" \
  "$base: serving.parallel: expected the weights (66.96 GiB per NPU) and activations (1.03 GiB) to fit chip.hbm x serving.kv_cache.memory_utilization (57.60 GiB) with room for a KV cache, found 10.39 GiB over" \
  $serve --set workload.model.layers=160
check "the same model on 4 stages fits" sh -c "$serve $small --set workload.model.layers=160 --set workload.serving.parallel.pp=4 >/dev/null"

expect_line "a negative rate" \
  "--set: serving.requests.rate_per_s: expected a number 0 or in [1e-09, 1000000000], found -1" \
  $serve --set workload.serving.requests.rate_per_s=-1

printf '{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 2}\n{"arrival_s": 2, "prompt_tokens": 10, "output_tokens": 2}\n\n{"arrival_s": 1.5, "prompt_tokens": 10, "output_tokens": 2}\n' \
  >"$tmp/order.jsonl"
expect_line "arrivals out of order name the line" \
  "$tmp/order.jsonl:4: arrival_s: expected arrivals in time order (at least 2, line 2's), found 1.5" \
  $serve $(trace "$tmp/order.jsonl")
printf 'arrival_s,prompt_tokens,output_tokens\n3,10,2\n1,10,2\n' >"$tmp/order.csv"
expect_line "arrivals out of order (CSV)" \
  "$tmp/order.csv:3: arrival_s: expected arrivals in time order (at least 3, line 2's), found 1" \
  $serve $(trace "$tmp/order.csv")

# a trace path too long for the reader's buffer (2047 bytes from the workload's
# folder) is refused, not cut short to name another file: here the cut lands on
# reqs.jsonl, which the old code read and ran to exit 0
long=$(python3 - "$tmp" <<'PY'
import os, sys
d = sys.argv[1]
while len(d) < 1700:
    d = os.path.join(d, "d" * 200)
d = os.path.join(d, "e" * (2047 - len("/reqs.jsonl") - len(d) - 1))
os.makedirs(d)
print(d)
PY
)
cp "$tmp/reqs.jsonl" "$long/reqs.jsonl"
echo "{\"extends\": \"$PWD/$base\"}" >"$long/w.json"
check "a trace path past the buffer is refused (exit 2, one line, no output)" bash -c "
  $npusim serve --system $sys --workload '$long/w.json' \
    --set workload.serving.requests.trace=reqs.jsonl.not.this.one >'$tmp/long.out' 2>'$tmp/long.err'
  [ \$? -eq 2 ] && [ ! -s '$tmp/long.out' ] && [ \$(wc -l <'$tmp/long.err') -eq 1 ]"

# a special file is refused without being opened for reading (a FIFO would block)
mkfifo "$tmp/fifo.jsonl"
expect_line "a FIFO as the trace, refused unread" \
  "$tmp/fifo.jsonl: expected a request trace (JSONL or CSV), found a FIFO, not a regular file" \
  timeout 10 $serve $(trace "$tmp/fifo.jsonl")

bad_trace() { # bad_trace NAME FILE TEXT WANT-AFTER-PATH
  printf '%s' "$3" >"$tmp/$2"
  expect_line "$1" "$tmp/$2$4" $serve $(trace "$tmp/$2")
}
bad_trace "JSONL: bad syntax names the trace's line and the column" syntax.jsonl \
  $'{"arrival_s": 0, "prompt_tokens": 5, "output_tokens": 3}\n{"arrival_s": 1, "prompt_tokens": x}' \
  ":2:35: expected valid JSON, found 'x'"
bad_trace "CSV: a column named twice" twice.csv \
  $'arrival_s,prompt_tokens,output_tokens,prompt_tokens\n0,5,3,5\n' \
  ':1: prompt_tokens: expected each column named once, found it twice'
bad_trace "JSONL: a string for a number" str.jsonl \
  '{"arrival_s": 0, "prompt_tokens": "12", "output_tokens": 2}' \
  ':1: prompt_tokens: expected a number, found "12"'
bad_trace "JSONL: a missing key" missing.jsonl \
  '{"arrival_s": 0, "prompt_tokens": 12}' \
  ':1: output_tokens: expected a number, found no such key'
bad_trace "JSONL: a fractional token count" frac.jsonl \
  '{"arrival_s": 0, "prompt_tokens": 12.5, "output_tokens": 2}' \
  ':1: prompt_tokens: expected a whole number of tokens in [1, 1e8], found 12.5'
bad_trace "JSONL: zero output tokens" zero.jsonl \
  '{"arrival_s": 0, "prompt_tokens": 12, "output_tokens": 0}' \
  ':1: output_tokens: expected a whole number of tokens in [1, 1e8], found 0'
bad_trace "JSONL: a negative arrival" neg.jsonl \
  '{"arrival_s": -0.5, "prompt_tokens": 12, "output_tokens": 2}' \
  ':1: arrival_s: expected a time in [0, 1e18] seconds, found -0.5'
bad_trace "JSONL: a line that is not an object" array.jsonl \
  $'{"arrival_s": 0, "prompt_tokens": 12, "output_tokens": 2}\n[1, 2, 3]\n' \
  ':2: expected an object {"arrival_s": ..., "prompt_tokens": ..., "output_tokens": ...}, found another value'
bad_trace "CSV: a header missing a column" header.csv \
  $'arrival_s,prompt_tokens,outputs\n0,12,2\n' \
  ':1: expected a CSV header naming arrival_s, prompt_tokens and output_tokens (or JSONL objects), found no output_tokens column'
bad_trace "CSV: too few fields" few.csv \
  $'arrival_s,prompt_tokens,output_tokens\n0,12,2\n1,12\n' \
  ':3: expected 3 fields as in the header, found 2'
bad_trace "CSV: too many fields" many.csv \
  $'arrival_s,prompt_tokens,output_tokens\n0,12,2,7\n' \
  ':2: expected 3 fields as in the header, found 4'
bad_trace "CSV: a word for a number" word.csv \
  $'arrival_s,prompt_tokens,output_tokens\nsoon,12,2\n' \
  ':2: arrival_s: expected a decimal number, found "soon"'
bad_trace "CSV: a header and no rows" norows.csv \
  $'arrival_s,prompt_tokens,output_tokens\n' \
  ': expected at least one request, found none'

expect_line "--slo: an unknown key" '--slo: expected ttft_ms or tpot_ms, found "e2e_ms"' \
  $serve --slo e2e_ms=5
expect_line "--slo: zero" '--slo: tpot_ms: expected a number of ms in [0.001, 1e9], found "0"' \
  $serve --slo ttft_ms=100,tpot_ms=0
expect_line "--slo: negative" '--slo: ttft_ms: expected a number of ms in [0.001, 1e9], found "-1"' \
  $serve --slo ttft_ms=-1
expect_line "--slo: no value" '--slo: expected ttft_ms=T,tpot_ms=P, found "ttft_ms"' \
  $serve --slo ttft_ms

expect_line "train on a serving workload" \
  "$base: training: expected a training section (a serving workload runs with npusim serve)" \
  $npusim train --system $sys --workload $base
expect_line "serve on a training workload" \
  "configs/workloads/llama3-8b.json: serving: expected a serving section (a training workload runs with npusim train)" \
  $npusim serve --system $sys --workload configs/workloads/llama3-8b.json

# ---- runs ----
for f in reqs.jsonl reqs.csv reqs.jsonl.gz reqs.csv.gz reqs_excel.csv; do
  $serve $(trace "$tmp/$f") --format json >"$tmp/$f.out" 2>"$tmp/$f.err"
  check "$f runs, silently" test ! -s "$tmp/$f.err"
done
check "the trace read as JSONL gives 12 requests, all completed" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["requests"] == 12 and r["completed"] == 12, (r["requests"], r["completed"])' "$tmp/reqs.jsonl.out"
check "CSV gives the same report as JSONL" cmp "$tmp/reqs.jsonl.out" "$tmp/reqs.csv.out"
check "gzip JSONL gives the same report" cmp "$tmp/reqs.jsonl.out" "$tmp/reqs.jsonl.gz.out"
check "gzip CSV gives the same report" cmp "$tmp/reqs.jsonl.out" "$tmp/reqs.csv.gz.out"
check "a spreadsheet's CSV (BOM, CRLF, quotes) gives the same report" \
  cmp "$tmp/reqs.jsonl.out" "$tmp/reqs_excel.csv.out"

$serve $small --format json --slo ttft_ms=500,tpot_ms=80 --timeseries "$tmp/ts.csv" \
  --chrome-trace "$tmp/serve.json" >"$tmp/run.json" 2>"$tmp/run.err"
check "a run with files writes nothing on stderr" test ! -s "$tmp/run.err"
check "--format json parses and has its fields" python3 -c '
import json, math, sys
r = json.load(open(sys.argv[1]))
for path in ("ttft_s.p99", "tpot_s.mean", "output_tokens_per_s_per_npu", "goodput_per_s",
             "decode_step.time_s", "iterations", "completed"):
    v = r
    for k in path.split("."):
        v = v[k]
    assert isinstance(v, (int, float)) and math.isfinite(v) and v >= 0, (path, v)
assert r["requests"] == r["completed"] == 40, r["completed"]
d = r["ttft_s"]
assert 0 < d["p50"] <= d["p90"] <= d["p99"], d
assert r["tpot_s"]["mean"] > 0 and r["decode_step"]["time_s"] > 0
assert r["output_tokens_per_s_per_npu"] == r["output_tokens_per_s"] / r["npus"]
assert r["slo"] == {"ttft_s": 0.5, "tpot_s": 0.08}, r["slo"]
assert 0 <= r["good_requests"] <= r["completed"]' "$tmp/run.json"
check "--timeseries has a header and a row per iteration" python3 -c '
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
it = json.load(open(sys.argv[2]))["iterations"]
assert len(rows) == it, (len(rows), it)
assert rows and {"start_s", "end_s", "decodes", "prefills", "kv_used_blocks"} <= rows[0].keys()
assert all(float(r["end_s"]) > float(r["start_s"]) for r in rows)' "$tmp/ts.csv" "$tmp/run.json"
check "--chrome-trace is a valid trace" python3 tests/e2e/check_chrome_trace.py "$tmp/serve.json"
check "--chrome-trace has a slice (a B/E pair) per iteration, with ph, pid and ts" python3 -c '
import json, sys
evs = json.load(open(sys.argv[1]))["traceEvents"]
it = json.load(open(sys.argv[2]))["iterations"]
assert all("ph" in e and "pid" in e for e in evs)
b = [e for e in evs if e["ph"] == "B"]
e = [e for e in evs if e["ph"] == "E"]
assert len(b) == len(e) == it and all("ts" in x for x in b + e), (len(b), len(e), it)' \
  "$tmp/serve.json" "$tmp/run.json"
$serve $small --chrome-trace "$tmp/serve.json.gz" --set workload.serving.parallel.pp=2 >/dev/null
check "--chrome-trace (gzip, two pipeline engines) is a valid trace" \
  python3 tests/e2e/check_chrome_trace.py "$tmp/serve.json.gz"

$serve $small --format csv >"$tmp/run.csv"
check "--format csv has a header and one row" python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert len(rows) == 2 and len(rows[0]) == len(rows[1]), rows
r = dict(zip(*rows))
assert r["requests"] == r["completed"] == "40" and float(r["ttft_p99_s"]) > 0, r' "$tmp/run.csv"

$serve $small --format json >"$tmp/a.json"
$serve $small --format json >"$tmp/b.json"
check "two identical runs give the same bytes" cmp "$tmp/a.json" "$tmp/b.json"
$serve $small >"$tmp/a.txt"
$serve $small >"$tmp/b.txt"
check "two identical runs give the same table" cmp "$tmp/a.txt" "$tmp/b.txt"
$serve $small --set workload.serving.requests.seed=2 --format json >"$tmp/seed2.json"
check "the seed changes the run" sh -c "! cmp -s $tmp/a.json $tmp/seed2.json"

$serve $small --format json --slo ttft_ms=0.001 >"$tmp/tight.json"
$serve $small --format json --slo ttft_ms=1e9,tpot_ms=1e9 >"$tmp/loose.json"
check "goodput: none within an impossible SLO, all within a loose one" python3 -c '
import json, sys
t, l = (json.load(open(p)) for p in sys.argv[1:3])
assert t["good_requests"] == 0 and t["goodput_per_s"] == 0, t["good_requests"]
assert l["good_requests"] == l["completed"] == 40, l["good_requests"]
assert l["goodput_per_s"] == l["requests_per_s"] > 0, (l["goodput_per_s"], l["requests_per_s"])' \
  "$tmp/tight.json" "$tmp/loose.json"

# ---- disaggregated: one prefill and one decode instance ----
cat >"$tmp/pd.json" <<JSON
{"extends": "$PWD/$base",
 "serving": {"prefill": {"instances": 1, "tp": 1}, "decode": {"instances": 1, "tp": 1},
             "requests": {"trace": "reqs.jsonl"}}}
JSON
$npusim serve --system $sys --workload "$tmp/pd.json" --format json >"$tmp/pd.out" 2>"$tmp/pd.err"
check "disaggregated: a KV transfer per request with more than one output token" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
multi = int(open(sys.argv[2]).read())
assert r["completed"] == 12, r["completed"]
assert r["kv_transfers"] == multi == 9, (r["kv_transfers"], multi)
assert r["kv_transfer_mean_s"] > 0
assert [p["kind"] for p in r["pools"]] == ["prefill", "decode"] and r["npus"] == 2' \
  "$tmp/pd.out" "$tmp/multi"
cat >"$tmp/p.json" <<JSON
{"extends": "$PWD/$base", "serving": {"prefill": {"instances": 1, "tp": 1}}}
JSON
expect_line "prefill without decode" \
  "$tmp/p.json: serving.decode: expected both serving.prefill and serving.decode (disaggregated) or neither, found only prefill" \
  $npusim serve --system $sys --workload "$tmp/p.json"
cat >"$tmp/d.json" <<JSON
{"extends": "$PWD/$base", "serving": {"decode": {"instances": 1, "tp": 1}}}
JSON
expect_line "decode without prefill" \
  "$tmp/d.json: serving.prefill: expected both serving.prefill and serving.decode (disaggregated) or neither, found only decode" \
  $npusim serve --system $sys --workload "$tmp/d.json"

# ---- pipeline engines share one pool of KV blocks ----
# Two 2000-token prompts at once on pp 2 in 512-token chunks, a cache of 153
# blocks of 16 (125 for each prompt): each engine's prompt reached 96 blocks and
# neither could go on, and the run said "0 of 2 completed" with exit 0. The
# older now takes the younger's blocks.
printf '{"arrival_s": 0, "prompt_tokens": 2000, "output_tokens": 10}\n{"arrival_s": 0, "prompt_tokens": 2000, "output_tokens": 10}\n' \
  >"$tmp/two.jsonl"
$serve $(trace "$tmp/two.jsonl") --set workload.serving.parallel.pp=2 \
  --set workload.serving.scheduler.max_batched_tokens=512 \
  --set workload.serving.kv_cache.capacity_GiB=0.15 --format json >"$tmp/pp.json" 2>"$tmp/pp.err"
check "pp 2, a cache too small for both prompts: exit 0 and silent" test ! -s "$tmp/pp.err"
check "pp 2, a cache too small for both prompts: both complete, one preempted" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["pools"][0]["kv_blocks_per_group"] == 153, r["pools"]
assert r["requests"] == r["completed"] == 2, (r["requests"], r["completed"])
assert r["preemptions"] >= 1 and r["ttft_s"]["min"] > 0 and r["tpot_s"]["min"] > 0, r' "$tmp/pp.json"

# ---- latencies do not depend on when the run starts ----
# The 12 requests on a 1/64 s grid, as given and 1e14 s later (where doubles are
# 1/64 s apart): the clock restarts at each arrival that finds the deployment
# idle, so every figure is the same, byte for byte. It was TTFT = TPOT = e2e = 0.
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
reqs = [json.loads(l) for l in open(f"{d}/reqs.jsonl")]
for name, shift in (("grid", 0.0), ("late", 1e14)):
    with open(f"{d}/{name}.jsonl", "w") as f:
        for q in reqs:
            a = round(q["arrival_s"] * 64) / 64
            assert (a + shift) - shift == a
            f.write(json.dumps(dict(q, arrival_s=a + shift)) + "\n")
PY
$serve $(trace "$tmp/grid.jsonl") --format json >"$tmp/grid.out"
$serve $(trace "$tmp/late.jsonl") --format json >"$tmp/late.out"
check "a trace 1e14 s later gives the same bytes" cmp "$tmp/grid.out" "$tmp/late.out"
check "... with latencies that are not 0" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["completed"] == 12 and r["ttft_s"]["min"] > 0 and r["tpot_s"]["min"] > 0, r' \
  "$tmp/late.out"
# Arrivals 1e307 s apart made the idle energy infinite: the table printed "inf
# kJ" with exit 0. Arrivals must lie within 1e18 s.
printf '{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 3}\n{"arrival_s": 1e307, "prompt_tokens": 10, "output_tokens": 3}\n' \
  >"$tmp/span.jsonl"
expect_line "arrivals over 1e18 s apart" \
  "$tmp/span.jsonl:2: arrival_s: expected a time in [0, 1e18] seconds, found 1e+307" \
  $serve $(trace "$tmp/span.jsonl")
printf '{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 3}\n{"arrival_s": 1e18, "prompt_tokens": 10, "output_tokens": 3}\n' \
  >"$tmp/span1e18.jsonl"
check "arrivals 1e18 s apart run, with finite figures" sh -c \
  "$serve $(trace "$tmp/span1e18.jsonl") --format json | python3 -c 'import json, sys; r = json.load(sys.stdin); assert r[\"completed\"] == 2'"
# The generator at its least rate (1e-9/s: arrivals up to 1e12 s apart) and at
# 1e-5/s, where no two of these 1000 requests overlap either: each request is
# alone, so the same latencies. At 1e12 s a double resolves only 1.2e-4 s.
for rate in 1e-9 1e-5; do
  $serve --set workload.serving.requests.rate_per_s=$rate --format json >"$tmp/rate$rate.json"
done
check "the generator at 1e-9/s gives the latencies it gives at 1e-5/s" python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("ttft_s", "tpot_s", "e2e_s"):
    assert a[k] == b[k], (k, a[k], b[k])' "$tmp/rate1e-9.json" "$tmp/rate1e-5.json"

# Requests that arrive at the same instant are scheduled together: eight
# prompts at t=0 within the token budget prefill in one iteration (before, the
# first arrival started an iteration alone and the other seven waited for it).
$serve --set workload.serving.requests.rate_per_s=0 --set workload.serving.requests.count=8 \
  --set workload.serving.scheduler.chunked_prefill=false \
  --set workload.serving.scheduler.max_batched_tokens=16384 \
  --set workload.serving.requests.prompt.distribution=fixed \
  --set workload.serving.requests.prompt.mean=1024 \
  --set workload.serving.requests.output.distribution=fixed \
  --set workload.serving.requests.output.mean=16 \
  --format json --timeseries "$tmp/closed.csv" >"$tmp/closed.json"
check "a closed batch of 8 at t=0 prefills in one iteration, all with one TTFT" python3 -c '
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert int(rows[0]["prefills"]) == 8 and float(rows[0]["start_s"]) == 0, rows[0]
r = json.load(open(sys.argv[2]))
assert r["ttft_s"]["min"] == r["ttft_s"]["max"], r["ttft_s"]' "$tmp/closed.csv" "$tmp/closed.json"

# --requests-out: a row per request whose latencies are the report's (the JSON
# mean TTFT, the goodput count) and whose SLO column names the limit missed.
$serve $small --format json --slo ttft_ms=200,tpot_ms=22 --requests-out "$tmp/req.csv" >"$tmp/req.json"
check "--requests-out: a row per request, the report's TTFT mean and goodput" python3 -c '
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
r = json.load(open(sys.argv[2]))
assert len(rows) == r["requests"] == 40, len(rows)
mean = sum(float(x["ttft_s"]) for x in rows) / len(rows)
assert abs(mean - r["ttft_s"]["mean"]) <= 1e-9, (mean, r["ttft_s"])
met = sum(x["slo_missed"] == "met" for x in rows)
assert met == r["good_requests"] and 0 < met < 40, (met, r["good_requests"])
for x in rows:
    t, p = float(x["ttft_s"]), float(x["tpot_s"]) if x["tpot_s"] else 0
    want = "+".join(k for k, bad in (("ttft", t > 0.200), ("tpot", p > 0.022)) if bad) or "met"
    assert x["slo_missed"] == want, x
    assert 0 <= float(x["queue_s"]) <= t <= float(x["e2e_s"]), x' "$tmp/req.csv" "$tmp/req.json"

finish serve_e2e
