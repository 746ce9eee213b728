#!/usr/bin/env bash
# timeline_e2e.sh - timelines nest the same in a viewer as in the decimals
# npusim writes. Makes a train timeline (llama2-7b on 8 of 910B's ranks, 27k
# slices), a replay timeline with send/recv arrows and straggler waits, and a
# serve timeline with two pipeline engines, then:
#   doubles:    tests/e2e/timeline_doubles.py over them (times read as doubles
#               three ways keep every slice's order and ties) and over an "X"
#               timeline of whole nanoseconds, which must fail;
#   speedscope: speedscope 1.25.0's own importer (tests/e2e/speedscope_import.js,
#               under node) imports them with no warning. Skipped (exit 77)
#               without node or the npm package in the cache
#               ${NPUSIM_NPM_CACHE:-~/.cache/npusim-npm} (scripts/test.sh
#               fetches it there with scripts/lib/fetch_npm.py, checked against npm's sha512).
# Usage: timeline_e2e.sh NPUSIM doubles|speedscope. Run from the repository root.
set -u
npusim=${1:?usage: timeline_e2e.sh NPUSIM doubles|speedscope}
mode=${2:?usage: timeline_e2e.sh NPUSIM doubles|speedscope}
. "$(dirname "$0")/e2e_lib.sh"

bundle=
if [ "$mode" = speedscope ]; then
  cache=${NPUSIM_NPM_CACHE:-$HOME/.cache/npusim-npm}
  bundle=$(ls "$cache"/node_modules/speedscope/dist/release/speedscope-*.js 2>/dev/null | head -1)
  if ! command -v node >/dev/null || [ -z "$bundle" ]; then
    echo "timeline_e2e speedscope: skipped: needs node and speedscope@1.25.0 in $cache"
    exit 77
  fi
fi

sys=configs/systems/ascend-910b.json
"$npusim" train --system $sys --workload configs/workloads/llama2-7b.json \
  --set training.global_batch=32 --trace-ranks 0-7 --chrome-trace "$tmp/train.json" >/dev/null
"$npusim" replay --system $sys --trace traces/mixed.json --chrome-trace "$tmp/mixed.json" >/dev/null
"$npusim" replay --system $sys --trace traces/two_ranks_p2p.json --chrome-trace "$tmp/p2p.json" >/dev/null
"$npusim" serve --system $sys --workload configs/workloads/serve-llama3-8b.json \
  --set workload.serving.parallel.pp=2 --chrome-trace "$tmp/serve.json" >/dev/null
timelines=("$tmp/train.json" "$tmp/mixed.json" "$tmp/p2p.json" "$tmp/serve.json")
check "the timelines were written" test -s "$tmp/train.json" -a -s "$tmp/serve.json"

# the checks can fail: back-to-back "X" slices whose ts + dur passes the next ts
# as doubles (0.1 + 0.2 > 0.3), as whole nanoseconds written as "X" did
cat >"$tmp/x.json" <<'JSON'
{"traceEvents": [
{"name": "a", "ph": "X", "ts": 0.100, "dur": 0.200, "pid": 0, "tid": 0},
{"name": "b", "ph": "X", "ts": 0.300, "dur": 0.100, "pid": 0, "tid": 0}
]}
JSON
if [ "$mode" = doubles ]; then
  check "slices keep their order and ties when times are read as doubles" \
    python3 tests/e2e/timeline_doubles.py "${timelines[@]}"
  check "an X timeline whose ts + dur passes the next ts fails" sh -c \
    "python3 tests/e2e/timeline_doubles.py '$tmp/x.json' >'$tmp/x.out'; [ \$? -eq 1 ] && grep -q 'move when read as doubles' '$tmp/x.out'"
else
  check "speedscope imports every timeline with no warning" \
    node tests/e2e/speedscope_import.js "$bundle" "${timelines[@]}"
  check "speedscope warns on the X timeline that overlaps" sh -c \
    "node tests/e2e/speedscope_import.js '$bundle' '$tmp/x.json' >'$tmp/x.out'; [ \$? -eq 1 ] && grep -q ', [1-9][0-9]* warnings' '$tmp/x.out'"
fi
finish "timeline_e2e $mode"
