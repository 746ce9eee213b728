#!/usr/bin/env bash
# coll_e2e.sh NPUSIM - end-to-end checks of `npusim coll`, one process per
# simulation (SimGrid runs once per process):
#   - flow and analytic agree within 3% for every op and algorithm at sizes
#     >= 1 MiB on uncontended topologies;
#   - a 2:1 oversubscribed spine slows traffic that must cross it by 2x in flow;
#   - the same inputs print the same bytes.
# Run from the repository root.
set -u
npusim=$1
source "$(dirname "$0")/e2e_lib.sh"

# time_us column of a csv run, one line per size
times() { "$npusim" coll "$@" --format csv | tail -n +2 | cut -d, -f6; }

agree() { # agree SYSTEM OP RANKS RANKS_PER_NODE ALGO
  local sys=configs/systems/$1.json args=(--system "configs/systems/$1.json" --op "$2" --ranks "$3"
    --ranks-per-node "$4" --sizes 1M:256M:16)
  [ "$5" != auto ] && args+=(--algo "$5")
  local a f
  a=$(times "${args[@]}" --fidelity analytic) || { bad "$*: analytic run failed"; return; }
  f=$(times "${args[@]}" --fidelity flow) || { bad "$*: flow run failed"; return; }
  local worst
  worst=$(paste -d' ' <(echo "$a") <(echo "$f") |
    awk '{d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > w) w = d} END {printf "%.4f", w}')
  if awk -v w="$worst" 'BEGIN {exit !(w <= 0.03)}'; then
    ok
  else
    bad "$1 $2 ranks=$3 algo=$5: flow and analytic differ by $(awk -v w="$worst" 'BEGIN{printf "%.1f", 100*w}')% (> 3%)"
  fi
  printf '  %-18s %-13s %4s ranks  %-15s worst difference %5.2f%%\n' "$1" "$2" "$3" "$5" \
    "$(awk -v w="$worst" 'BEGIN{printf "%.2f", 100*w}')"
}

echo "flow vs analytic (sizes 1M, 16M, 256M):"
for algo in mesh ring hd nhr nb tree; do agree ascend-910b allreduce 8 8 $algo; done
for op in allgather reducescatter; do
  for algo in mesh ring hd nhr nb; do agree ascend-910b $op 8 8 $algo; done
done
for algo in mesh ring hd tree; do agree ascend-910b broadcast 8 8 $algo; done
for algo in mesh ring hd tree; do agree ascend-910b reduce 8 8 $algo; done
for algo in mesh pairwise nb; do agree ascend-910b alltoall 8 8 $algo; done
agree ascend-910b sendrecv 8 8 auto
for algo in mesh,ring mesh,hd mesh,nhr mesh,nb mesh,pipeline mesh,tree; do
  agree ascend-910b allreduce 32 8 $algo
done
agree ascend-910b allgather 32 8 mesh,ring
agree ascend-910b reducescatter 32 8 mesh,hd
agree ascend-910b alltoall 32 8 mesh,pairwise
agree ascend-910b broadcast 32 8 mesh,ring
agree ascend-910b reduce 32 8 mesh,nhr
agree ascend-910a allreduce 8 8 auto
agree ascend-910c-cm384 allreduce 32 16 auto
agree h100-dgx allreduce 8 8 nvls
agree a100-dgx allreduce 8 8 auto
agree a100-dgx allreduce 32 8 auto

# Oversubscription: one server per leaf; every rank sends 1 GiB to the rank of
# the same index on the other server, so all 8 NICs of a server cross the
# leaf's uplink at once. At 2:1 the uplink carries half: twice the time.
python3 - "$tmp/matrix.json" <<'PY'
import json, sys
n, k, size = 16, 8, 1 << 30
m = [[size if (j % k == i % k and j // k != i // k) else 0 for j in range(n)] for i in range(n)]
json.dump(m, open(sys.argv[1], "w"))
PY
over() { # over RATIO FIDELITY
  "$npusim" coll --system configs/systems/ascend-910b.json --op alltoallv --ranks 16 \
    --matrix "$tmp/matrix.json" --set cluster.scale_out.npus_per_leaf=8 \
    --set cluster.scale_out.oversubscription="$1" --fidelity "$2" --format csv | tail -1 | cut -d, -f6
}
for fid in flow analytic; do
  t1=$(over 1 $fid)
  t2=$(over 2 $fid)
  ratio=$(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.4f", b / a}')
  printf '  2:1 spine, %-8s cross-leaf time %s us -> %s us: x%s (expected 2)\n' "$fid" "$t1" "$t2" "$ratio"
  if awk -v r="$ratio" 'BEGIN {exit !(r > 1.98 && r < 2.02)}'; then ok; else bad "oversubscription $fid: x$ratio"; fi
done

# The closed form (coll_flow_close: no two transfers compete for a link) and
# collapsed uniform rounds give SimGrid's figures byte for byte, links too: rings
# across leaves and NCCL's flat ring over H100 servers (closed: each case says
# how many of its 3 sizes NPUSIM_FLOW_COLLAPSE=tell must report, so a case
# that stops closing fails), mesh and NHR on 910B and NCCL's choices on H100
# and A100 (collapsed, not closed: their transfers share links) and in-network
# reduction (NVLS: a switch endpoint, never closed).
for c in "ascend-910b allreduce 128 --algo=ring 3" "h100-dgx allreduce 64 --algo=ring 3" \
         "ascend-910b allgather 64 --algo=auto 0" "ascend-910b reducescatter 256 --algo=nhr 0" \
         "h100-dgx allreduce 32 --algo=auto 0" "h100-dgx allreduce 8 --algo=nvls 0" \
         "a100-dgx alltoall 32 --algo=auto 0"; do
  set -- $c
  for mode in tell 0; do
    NPUSIM_FLOW_COLLAPSE=$mode "$npusim" coll --system configs/systems/$1.json --op $2 --ranks $3 \
      "$4" --sizes 1M:64M:8 --links all --format json >"$tmp/closed$mode.json" 2>"$tmp/closed$mode.err"
  done
  check "flow: closed form and collapsed rounds give SimGrid's bytes (${c% *})" \
    cmp "$tmp/closedtell.json" "$tmp/closed0.json"
  check "flow: $5 sizes timed in closed form (${c% *})" \
    grep -qx "npusim coll: flow: sizes timed in closed form: $5" "$tmp/closedtell.err"
done

# A serving engine's own all-reduce kernel loads its peers' buffers at
# collectives.p2p_read_GBps per GPU where that is below its NVLink port's rate:
# at a rate above the port's nothing changes; at 100 GB/s a 2-GPU one-shot
# (each GPU loads the other's whole buffer) takes 4 MiB / 100 GB/s = 41.943 us
# more for 8 MiB than for 4 MiB, in both fidelities.
engine() { "$npusim" coll --system configs/systems/h100-dgx.json --op allreduce --ranks 2 \
  --algo oneshot --sizes 4M:8M:2 --format csv "$@"; }
for fid in analytic flow; do
  engine --fidelity $fid --set collectives.p2p_read_GBps=0 >"$tmp/p2p0.csv"
  engine --fidelity $fid --set collectives.p2p_read_GBps=1000000 >"$tmp/p2pfast.csv"
  check "engine all-reduce: loads faster than the port change nothing ($fid)" \
    cmp "$tmp/p2p0.csv" "$tmp/p2pfast.csv"
  dt=$(engine --fidelity $fid --set collectives.p2p_read_GBps=100 |
    awk -F, 'NR == 2 { a = $6 } NR == 3 { printf "%.3f", $6 - a }')
  check "engine all-reduce: 4 MiB more loaded at 100 GB/s takes 41.943 us ($dt, $fid)" \
    awk -v d="$dt" 'BEGIN { exit !(d > 41.93 && d < 41.96) }'
  # the time the kernel holds the links is not bytes: the links carry the same
  for r in 0 100; do
    engine --fidelity $fid --set collectives.p2p_read_GBps=$r --links all --format json |
      python3 -c 'import json, sys; print([(l["link"], l["direction"], l["bytes"]) for l in json.load(sys.stdin)[-1]["links"]])' \
      >"$tmp/p2pbytes$r"
  done
  check "engine all-reduce: held links carry the bytes they carry at the port's rate ($fid)" \
    cmp "$tmp/p2pbytes0" "$tmp/p2pbytes100"
done

# Determinism.
run() { "$npusim" coll --system configs/systems/ascend-910b.json --op allreduce --ranks 64 \
  --sizes 1M:64M:8 --links --format json "$@"; }
run >"$tmp/a.json"
run >"$tmp/b.json"
if cmp -s "$tmp/a.json" "$tmp/b.json"; then ok; else bad "two flow runs differ"; fi
if python3 -c 'import json,sys; rows = json.load(open(sys.argv[1]))
assert [set(r) >= {"op","ranks","bytes","time_us","algbw_GBps","busbw_GBps","algo"} for r in rows] == [True] * 3
assert "links" in rows[-1] and rows[-1]["links"][0]["mean_util"] > 0' "$tmp/a.json"; then ok; else bad "json fields"; fi

finish "coll e2e"
