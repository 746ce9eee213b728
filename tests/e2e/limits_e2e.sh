#!/usr/bin/env bash
# limits_e2e.sh NPUSIM - resource bounds (issue #18, F5/F6) on inputs too large
# for tests/corpus/bad/: each run either succeeds within a memory ulimit, or stops
# with exit status 2 and the exact one line, quickly, and writes nothing.
# Run from the repository root.
set -u
npusim=$1
. "$(dirname "$0")/e2e_lib.sh"
sys=configs/systems/ascend-910b.json

# A 38 KB trace of 1 Mi ranks and 1000 two-rank communicators: one table per
# communicator sized by ranks asked for 4 GiB (18 GiB at 4 Mi ranks); groups are looked up in
# their members. Run under a 3 GiB address-space limit.
python3 - "$tmp/many_comms.json" <<'EOF'
import json, sys
comms = [{"name": "c%d" % i, "groups": ["%d-%d" % (2 * i, 2 * i + 1)]} for i in range(1000)]
t = {"format": "npusim-trace", "version": 1, "ranks": 1 << 20, "communicators": comms,
     "programs": [{"ranks": "0-%d" % ((1 << 20) - 1),
                   "ops": [{"id": 0, "kind": "compute", "duration_us": 1}]}]}
open(sys.argv[1], "w").write(json.dumps(t, separators=(",", ":")))
EOF
# (AddressSanitizer reserves terabytes of address space: no ulimit there)
limit="ulimit -v 3145728;"
grep -q __asan_init "$npusim" && limit=""
check "1000 communicators of 1 Mi ranks replay in 3 GiB" \
  bash -c "$limit '$npusim' replay --system $sys --trace '$tmp/many_comms.json' --fidelity analytic --format json --time-limit 60 >/dev/null"

# A gzip stream that inflates past the largest trace (256 MiB) is refused as soon
# as it does, however small the file.
head -c $((300 << 20)) /dev/zero | gzip -1 >"$tmp/bomb.json.gz"
expect_line "gzip inflating past the largest trace" \
  "$tmp/bomb.json.gz: expected a readable trace file (.json or .json.gz), found a gzip stream inflating to over 256 MiB" \
  timeout 30 "$npusim" replay --system "$sys" --trace "$tmp/bomb.json.gz" --fidelity analytic

# Serving requests: at most 10^7 in a run (about 110 to 130 bytes each through it).
# The generator's count is refused when loaded (1e8 was taken and passed 10 GiB).
serve="$npusim serve --system $sys --workload configs/workloads/serve-llama3-8b.json --time-limit 60"
limit="ulimit -v 524288;"
grep -q __asan_init "$npusim" && limit=""
expect_line "serving.requests.count past 10^7, in 512 MiB" \
  "--set: serving.requests.count: expected an integer in [1, 10000000], found 100000000" \
  bash -c "$limit $serve --set workload.serving.requests.count=1e8"
# A trace is streamed: its 10^7 + 1st row is refused before the array grows,
# within 512 MiB (the 10^7 rows read are 229 MiB); a gzip stream (here 2.4 MB)
# is refused once it inflates past 1 GiB, holding a 64 KiB chunk and a line (it
# was read whole: a 4 MB .gz took 4.0 GiB before its refusal).
python3 - "$tmp" <<'EOF2'
import gzip, sys
d = sys.argv[1]
rows = gzip.compress(b"0,8,1\n" * 1000000, 9)  # gzip members, concatenated
with open(d + "/rows.csv.gz", "wb") as f:
    f.write(gzip.compress(b"arrival_s,prompt_tokens,output_tokens\n"))
    f.write(rows * 10 + gzip.compress(b"0,8,1\n"))
block = gzip.compress((b" " * 1023 + b"\n") * 65536, 9)  # 64 MiB of blank lines
with open(d + "/blank.csv.gz", "wb") as f:
    f.write(block * 17)
EOF2
expect_line "a trace of 10^7 + 1 requests, in 512 MiB" \
  "$tmp/rows.csv.gz:10000002: expected at most 10000000 requests (the most one run holds), found more" \
  bash -c "$limit $serve --set workload.serving.requests.trace=$tmp/rows.csv.gz"
expect_line "a serving trace inflating past 1 GiB, in 512 MiB" \
  "$tmp/blank.csv.gz: expected a request trace (JSONL or CSV), found a gzip stream inflating to over 1024 MiB" \
  bash -c "$limit $serve --set workload.serving.requests.trace=$tmp/blank.csv.gz"

# --time-limit: one line, exit 2, no output file left (not even a temporary one)
mkdir "$tmp/out_dir"
expect_line "--time-limit stops a long run" \
  "npusim train: --time-limit: expected the run to end within 0.5 s, found it still running; stopped, nothing written" \
  "$npusim" train --system "$sys" --workload configs/workloads/gpt-1t.json --fidelity flow \
  --time-limit 0.5 --output "$tmp/out_dir/step.json"
check "--time-limit leaves no file" bash -c "[ -z \"\$(ls -A '$tmp/out_dir')\" ]"
check "--time-limit lets a short run finish" \
  "$npusim" op --system "$sys" --op matmul --shape 1024,1024,1024 --time-limit 60 --format json
check "every command takes --time-limit" bash -c \
  "for c in coll op replay train calibrate validate schema; do '$npusim' \$c --help | grep -q -- --time-limit || exit 1; done"

finish "limits e2e"
