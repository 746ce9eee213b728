#!/usr/bin/env bash
# fault_time_e2e.sh NPUSIM - links that degrade at a time T during the run
# (cluster.faults.links "LINK:FACTOR@T"), end to end, in both fidelities.
# Known answers:
#   - a fault at T after the run ends changes nothing: byte-identical output
#     (coll and replay, both fidelities);
#   - a fault at T = 0 is the fault from the start: byte-identical output; a
#     fault a picosecond in, which takes the timed path, within 1e-6 of it;
#   - one bandwidth-bound transfer (a 256 MiB sendrecv between two NPUs of a
#     910B server, one mesh link each way) that takes B alone, with its link
#     halved at T = B / 2 (after its latencies, which come first): the bytes
#     left at T, (B - T) worth at the old rate, take twice as long, so it ends
#     at T + 2 (B - T) = 1.5 B, to 0.1%;
#   - a link dying during the run (FACTOR 0 with T > 0) is refused in one line;
#   - the Chrome trace marks each timed fault (an instant event naming the
#     link and the factor) and tests/check_chrome_trace.py accepts it.
# Then a grid: link kinds x fault times x factors on an HCCS full mesh (910B,
# all-reduce), two 910B servers under a spine-leaf fabric and a two-spine fabric
# (H100 servers, all-gather), several sizes one after another, so the fault
# lands inside different ones, and replays
# (DP all-reduces crossing servers, TP all-reduces in a server, a pipeline's
# sends): analytic within 3% of flow, and the fault seen (each case slower
# than without it). Prints the grid. Run from the repository root.
set -u
npusim=${1:?usage: fault_time_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
near() { # near A B TOLERANCE: |A - B| <= TOLERANCE x B
  python3 -c 'import sys; a, b, t = map(float, sys.argv[1:]); sys.exit(abs(a - b) > t * b)' "$@"
}
slower() { # slower A B: A > B
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not a > b)' "$@"
}
coll_times() { # coll_times FIDELITY SYSTEM ARGS... : the sizes' times in us, one line
  local fid=$1 sys=$2
  shift 2
  "$npusim" coll --system "configs/systems/$sys" --fidelity "$fid" "$@" |
    awk '!/^#/ && NF { printf "%s%s", sep, $4; sep = " " } END { print "" }'
}
replay_ms() { # replay_ms TRACE FIDELITY ARGS... : the step time in ms
  local trace=$1 fid=$2
  shift 2
  "$npusim" replay --system configs/systems/ascend-910b.json --trace "$trace" --fidelity "$fid" \
    --format csv "$@" |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "step_time_s") c = i }
             NR == 2 { printf "%.6f", $c * 1e3 }'
}
f="--set cluster.faults.links"
mesh="ascend-910b.json --op allreduce --ranks 8 --sizes 256M:256M"
two="h100-dgx.json --op allgather --ranks 16 --sizes 16M:1G --set cluster.scale_out.topology=spine_leaf
  --set cluster.scale_out.npus_per_leaf=8 --set cluster.scale_out.spines=2"
servers="ascend-910b.json --op allreduce --ranks 16 --sizes 64M:512M
  --set cluster.scale_out.topology=spine_leaf"
python3 scripts/gen_trace.py --compute-us 500 --out "$tmp/dp64.json" --ranks 64 --layers 4 \
  --group 8 --stride 8 --bytes 67108864 --algo nhr
python3 scripts/gen_trace.py --compute-us 500 --out "$tmp/tp8.json" --ranks 8 --layers 4 \
  --group 8 --bytes 67108864

# ---- known answers ----
for fid in analytic flow; do
  "$npusim" coll --system configs/systems/$mesh --fidelity $fid >"$tmp/c0"
  "$npusim" coll --system configs/systems/$mesh --fidelity $fid $f=scale_up:0.5@10 >"$tmp/c1"
  check "coll $fid: a fault after the run ends changes nothing" cmp "$tmp/c0" "$tmp/c1"
  replay_ms "$tmp/dp64.json" $fid >"$tmp/r0"
  replay_ms "$tmp/dp64.json" $fid $f=nic:0.5@1,s1.nic0:0.1@2 >"$tmp/r1"
  check "replay $fid: a fault after the run ends changes nothing" cmp "$tmp/r0" "$tmp/r1"
  "$npusim" coll --system configs/systems/$mesh --fidelity $fid $f=s0.mesh2-5:0.3 >"$tmp/s0"
  "$npusim" coll --system configs/systems/$mesh --fidelity $fid $f=s0.mesh2-5:0.3@0 >"$tmp/s1"
  check "coll $fid: a fault at T = 0 is the fault from the start" cmp "$tmp/s0" "$tmp/s1"
  static=$(coll_times $fid $mesh $f=s0.mesh2-5:0.3)
  pico=$(coll_times $fid $mesh $f=s0.mesh2-5:0.3@1e-12)
  check "coll $fid: a fault at 1 ps = the fault from the start ($pico vs $static us)" \
    near "$pico" "$static" 1e-6
  static=$(replay_ms "$tmp/tp8.json" $fid $f=scale_up:0.5)
  pico=$(replay_ms "$tmp/tp8.json" $fid $f=scale_up:0.5@1e-12)
  check "replay $fid: a fault at 1 ps = the fault from the start ($pico vs $static ms)" \
    near "$pico" "$static" 1e-6

  p2p="ascend-910b.json --op sendrecv --ranks 2 --sizes 256M:256M"
  alone=$(coll_times $fid $p2p)
  half_at=$(python3 -c "print($alone / 2 * 1e-6)")
  halved=$(coll_times $fid $p2p $f=scale_up:0.5@$half_at)
  want=$(python3 -c "print(1.5 * $alone)")
  check "$fid: one transfer's link halved at its midpoint ends at 1.5x ($alone -> $halved us, want $want)" \
    near "$halved" "$want" 0.001
done
expect_line "a link dying during the run" \
  'configs/systems/ascend-910b.json: cluster.faults.links: expected a dead link (FACTOR 0) from the start (no @T, or @0): routes are fixed for the run, found s0.mesh0-1:0@0.001' \
  "$npusim" coll --system configs/systems/ascend-910b.json --op allreduce --ranks 8 \
  $f=s0.mesh0-1:0@0.001
expect_line "a time that is no number" \
  '--set: cluster.faults.links: expected links and the bandwidth left, "LINK:FACTOR[@T],..." (0 <= FACTOR <= 1, T >= 0 s), found "nic:0.5@soon"' \
  "$npusim" coll --system configs/systems/ascend-910b.json --op allreduce --ranks 8 $f=nic:0.5@soon
for fid in analytic flow; do
  "$npusim" replay --system configs/systems/ascend-910b.json --trace "$tmp/tp8.json" \
    --fidelity $fid $f=s0.mesh0-1:0.5@0.002,nic:0.25 --chrome-trace "$tmp/t.json" >/dev/null
  check "$fid: the Chrome trace marks the timed fault" grep -q \
    '"name": "fault s0.mesh0-1 x0.5", "cat": "fault", "ph": "i", "s": "g", "ts": 2000.000' "$tmp/t.json"
  check "$fid: and only the timed one" test "$(grep -c '"cat": "fault"' "$tmp/t.json")" = 1
  check "$fid: the Chrome trace checker accepts it" python3 tests/check_chrome_trace.py "$tmp/t.json"
done

# ---- the grid: analytic within 3% of flow ----
printf '%-42s %-32s %12s %12s %12s %7s\n' case fault base analytic flow "err%"
grid() { # grid LABEL FAULT BASE ANALYTIC FLOW (space-separated lists, one per size)
  local label=$1 fault=$2 base=($3) an=($4) fl=($5) k
  for k in "${!an[@]}"; do
    err=$(awk -v a="${an[$k]}" -v f="${fl[$k]}" 'BEGIN { printf "%+.2f", (a - f) / f * 100 }')
    printf '%-42s %-32s %12s %12s %12s %7s\n' "$label[$k]" "$fault" "${base[$k]}" "${an[$k]}" \
      "${fl[$k]}" "$err"
    check "$label[$k] $fault: analytic ${an[$k]} within 3% of flow ${fl[$k]}" \
      near "${an[$k]}" "${fl[$k]}" 0.03
  done
  local sum_base sum_fault
  sum_base=$(echo "$3" | tr ' ' '\n' | awk '{ s += $1 } END { print s }')
  sum_fault=$(echo "$5" | tr ' ' '\n' | awk '{ s += $1 } END { print s }')
  check "$label $fault: the fault is seen ($sum_fault > $sum_base)" slower "$sum_fault" "$sum_base"
}
base=$(coll_times flow $mesh)
for fault in scale_up:0.5@0.0005 scale_up:0.25@0.002 s0.mesh2-5:0.3@0.0005 s0.mesh0-7:0.5@0.003; do
  grid "910b mesh allreduce 256M" $fault "$base" "$(coll_times analytic $mesh $f=$fault)" \
    "$(coll_times flow $mesh $f=$fault)"
done
base=$(coll_times flow $two)
for fault in uplink:0.25@0.004 leaf1.spine1:0.1@0.002 s0.nic0:0.25@0.001 \
  leaf0.spine1:0.5@0.0001,leaf1.spine0:0.5@0.006; do
  grid "h100 2-spine allgather 16M..1G" $fault "$base" "$(coll_times analytic $two $f=$fault)" \
    "$(coll_times flow $two $f=$fault)"
done
base=$(coll_times flow $servers)
for fault in nic:0.5@0.002 s1.mesh0-1:0.5@0.001 s0.nic3:0.3@0.0042; do
  grid "910b 2 servers allreduce 64M..512M" $fault "$base" \
    "$(coll_times analytic $servers $f=$fault)" "$(coll_times flow $servers $f=$fault)"
done
for t in dp64 tp8 pipeline; do
  trace="$tmp/$t.json"
  [ $t = pipeline ] && trace=traces/pipeline_4stage.json
  case $t in
  dp64) faults="nic:0.5@0.001 uplink:0.3@0.003 s1.nic0:0.2@0.0031" ;;
  tp8) faults="scale_up:0.5@0.001 s0.mesh0-1:0.5@0.002 s0.mesh3-4:0.2@0.0045" ;;
  pipeline) faults="scale_up:0.1@0.0002 s0.mesh1-2:0.05@0.0003" ;;
  esac
  base=$(replay_ms "$trace" flow)
  for fault in $faults; do
    grid "replay $t" $fault "$base" "$(replay_ms "$trace" analytic $f=$fault)" \
      "$(replay_ms "$trace" flow $f=$fault)"
  done
done
finish fault_time_e2e
