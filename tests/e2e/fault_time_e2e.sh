#!/usr/bin/env bash
# fault_time_e2e.sh NPUSIM - links that degrade at a time T during the run
# (cluster.faults.links "LINK:FACTOR@T"), end to end, in both fidelities.
# Known answers:
#   - a fault at T after the run ends changes nothing: byte-identical output
#     (coll, and replay as a table and as JSON, both fidelities), a link dying
#     after the run too;
#   - a fault at T = 0 is the fault from the start: byte-identical output; a
#     fault a picosecond in, which takes the timed path, within 1e-6 of it;
#   - one bandwidth-bound transfer (a 256 MiB sendrecv between two NPUs of a
#     910B server, one mesh link each way) that takes B alone, with its link
#     halved at T = B / 2 (after its latencies, which come first): the bytes
#     left at T, (B - T) worth at the old rate, take twice as long, so it ends
#     at T + 2 (B - T) = 1.5 B, to 0.1%;
#   - a link dying at T (FACTOR 0 with T > 0): a 256 MiB sendrecv between two
#     NPUs of a 910B server whose mesh link dies at T, half way through, is
#     resent whole from T round the third NPU (links of the same rate), so it
#     ends at T + B / bw, bw from two sizes (time(256M) - time(128M) is 128M /
#     bw), to 0.1%; the 8-NPU all-reduce's sizes that start after T take the
#     time of the link dead from the start, those ending before T that of no
#     fault (to 1e-6), and one in flight at T lies between; in a two-spine
#     fabric a spine uplink dying at T: the sizes after T take the static dead
#     spine's time, which is one spine of half the capacity (faults_e2e.sh)
#     (sizes from 256 MiB, where both fabrics choose the Simple protocol: the
#     choice is made on the fabric as the run starts, as NCCL tunes once when
#     its communicator is made, so a 128 MiB all-gather keeps LL128 after the
#     death where one dead from the start takes Simple);
#     a death after the run: byte-identical output;
#   - a fault leaving a crossed link's bandwidth as it was (LINK:1@T), or on a
#     link the collective never crosses (slowed or dying): byte-identical coll;
#   - links dying in replays, the same rule: a replayed 256 MiB send/recv whose
#     mesh link dies half way ends at T + B/bw; four 16-NPU all-reduces over two
#     910B servers (200 us compute before each), the link dying 0.5 ms into the
#     third: the first two take the healthy time, the third coll's time with the
#     link dying 0.5 ms in, the fourth the static dead link's (to 1e-4); dying
#     between the first and second: the first healthy, the rest dead; the Chrome
#     trace marks it "fault LINK dead" (the checker accepts it), a fault @0 is
#     not marked; npusim train (llama3-8b dp4 on the 2:1 pod, three spines) with
#     leaf0.spine1 dying during the gradient all-reduce: slower than without, no
#     faster than dead from the start;
#   - refused in one line: a death that cuts ranks off after T (naming them and
#     T), deaths at two times;
#   - the Chrome trace marks each timed fault (an instant event naming the
#     link and the factor) and tests/e2e/check_chrome_trace.py accepts it.
# Then a grid: link kinds x fault times x factors on an HCCS full mesh (910B,
# all-reduce), two 910B servers under a spine-leaf fabric and a two-spine fabric
# (H100 servers, all-gather), several sizes one after another, so the fault
# lands inside different ones, and replays
# (DP all-reduces crossing servers, TP all-reduces in a server, a pipeline's
# sends): analytic within 3% of flow, and the fault seen (each case slower
# than without it); then links dying at T in the mesh, the two-spine fabric and
# across two servers, and in replays (all-reduces over two servers, DP pairs
# across a three-spine fabric, TP in a server, a pipeline's sends) and train.
# Prints the grid. Run from the repository root.
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
python3 scripts/tools/gen_trace.py --compute-us 500 --out "$tmp/dp64.json" --ranks 64 --layers 4 \
  --group 8 --stride 8 --bytes 67108864 --algo nhr
python3 scripts/tools/gen_trace.py --compute-us 500 --out "$tmp/tp8.json" --ranks 8 --layers 4 \
  --group 8 --bytes 67108864

# ---- known answers ----
for fid in analytic flow; do
  "$npusim" coll --system configs/systems/$mesh --fidelity $fid >"$tmp/c0"
  "$npusim" coll --system configs/systems/$mesh --fidelity $fid $f=scale_up:0.5@10 >"$tmp/c1"
  check "coll $fid: a fault after the run ends changes nothing" cmp "$tmp/c0" "$tmp/c1"
  for fmt in table json; do # whole outputs: times, links, energy
    replay_out() {
      "$npusim" replay --system configs/systems/ascend-910b.json --trace "$tmp/dp64.json" \
        --fidelity $fid --format $fmt "$@"
    }
    replay_out >"$tmp/r0"
    replay_out $f=nic:0.5@1,s1.nic0:0.1@2 >"$tmp/r1"
    check "replay $fid $fmt: a fault after the run ends changes nothing" cmp "$tmp/r0" "$tmp/r1"
    replay_out $f=s0.mesh0-1:0@1 >"$tmp/r1"
    check "replay $fid $fmt: a link dying after the run ends changes nothing" cmp "$tmp/r0" "$tmp/r1"
  done
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
# ---- links dying at T ----
mesh3="ascend-910b.json --op allreduce --ranks 8 --sizes 64M:256M"
spine2="h100-dgx.json --op allgather --ranks 16 --sizes 256M:1G
  --set cluster.scale_out.topology=spine_leaf --set cluster.scale_out.npus_per_leaf=8"
nth() { echo "$1" | cut -d' ' -f"$2"; }
for fid in analytic flow; do
  pair=$(coll_times $fid ascend-910b.json --op sendrecv --ranks 2 --sizes 128M:256M)
  alone=$(nth "$pair" 2)
  at=$(python3 -c "print($alone / 2 * 1e-6)")
  died=$(coll_times $fid ascend-910b.json --op sendrecv --ranks 2 --sizes 256M:256M \
    $f=s0.mesh0-1:0@$at)
  want=$(python3 -c "print($alone / 2 + 2 * ($alone - $(nth "$pair" 1)))")
  check "$fid: a transfer whose link dies half way is resent whole round it from T ($alone -> $died us, want $want)" \
    near "$died" "$want" 0.001
  healthy=$(coll_times $fid $mesh3)
  dead=$(coll_times $fid $mesh3 $f=s0.mesh0-1:0)
  at=$(python3 -c "print($(nth "$healthy" 1) / 2 * 1e-6)") # inside the first size
  mid=$(coll_times $fid $mesh3 $f=s0.mesh0-1:0@$at)
  for k in 2 3; do
    check "$fid: mesh all-reduce size $k, after the link died, takes the static dead link's time ($(nth "$mid" $k) vs $(nth "$dead" $k) us)" \
      near "$(nth "$mid" $k)" "$(nth "$dead" $k)" 1e-6
  done
  check "$fid: the size in flight at T is slower than without the fault ($(nth "$mid" 1) > $(nth "$healthy" 1))" \
    slower "$(nth "$mid" 1)" "$(nth "$healthy" 1)"
  check "$fid: and faster than the fault from the start ($(nth "$mid" 1) < $(nth "$dead" 1))" \
    slower "$(nth "$dead" 1)" "$(nth "$mid" 1)"
  at=$(python3 -c "print(($(nth "$healthy" 1) + $(nth "$healthy" 2) / 2) * 1e-6)") # inside the second
  mid=$(coll_times $fid $mesh3 $f=s0.mesh0-1:0@$at)
  check "$fid: the size that ended before T is unchanged ($(nth "$mid" 1) vs $(nth "$healthy" 1) us)" \
    near "$(nth "$mid" 1)" "$(nth "$healthy" 1)" 1e-6
  half=$(coll_times $fid $spine2 --set cluster.scale_out.spines=1 \
    --set cluster.scale_out.oversubscription=2)
  healthy=$(coll_times $fid $spine2 --set cluster.scale_out.spines=2)
  at=$(python3 -c "print($(nth "$healthy" 1) / 2 * 1e-6)")
  mid=$(coll_times $fid $spine2 --set cluster.scale_out.spines=2 $f=leaf0.spine0:0@$at)
  for k in 2 3; do
    check "$fid: 2-spine all-gather size $k after a spine uplink died = one spine of half the capacity ($(nth "$mid" $k) vs $(nth "$half" $k) us)" \
      near "$(nth "$mid" $k)" "$(nth "$half" $k)" 1e-6
  done
  "$npusim" coll --system configs/systems/$mesh3 --fidelity $fid >"$tmp/d0"
  "$npusim" coll --system configs/systems/$mesh3 --fidelity $fid $f=s0.mesh0-1:0@10 >"$tmp/d1"
  check "coll $fid: a link dying after the run ends changes nothing" cmp "$tmp/d0" "$tmp/d1"
done
# ---- faults that change nothing the schedule sees ----
crossed="ascend-910b.json --op allreduce --ranks 16 --sizes 1M:256M
  --set cluster.scale_out.topology=spine_leaf"
four="ascend-910b.json --op allreduce --ranks 4 --sizes 1M:256M"
for fid in analytic flow; do
  "$npusim" coll --system configs/systems/$crossed --fidelity $fid >"$tmp/x0"
  for fault in s0.mesh0-1:1@0.0003 s0.nic3:1@0.0001 s0.mesh0-1:1@0.0003,s0.nic0:1@0.001; do
    "$npusim" coll --system configs/systems/$crossed --fidelity $fid $f=$fault >"$tmp/x1"
    check "coll $fid: $fault (bandwidth unchanged on links the schedule crosses) changes nothing" \
      cmp "$tmp/x0" "$tmp/x1"
  done
  "$npusim" coll --system configs/systems/$four --fidelity $fid >"$tmp/x0"
  for fault in s0.mesh5-6:0.5 s0.mesh5-6:0.5@0.001 s0.mesh5-6:0@0.001 s0.mesh0-6:0@0.0001; do
    "$npusim" coll --system configs/systems/$four --fidelity $fid $f=$fault >"$tmp/x1"
    check "coll $fid: $fault (a link ranks 0-3 never cross) changes nothing" cmp "$tmp/x0" "$tmp/x1"
  done
done

# ---- links dying at T in replays (the same rule) ----
p2p_trace() { # p2p_trace BYTES OUT: rank 0 sends BYTES to rank 1 at time 0
  python3 - "$1" "$2" <<'PY'
import json, sys
b = float(sys.argv[1])
json.dump({"format": "npusim-trace", "version": 1, "name": "one message", "ranks": 2,
           "communicators": [], "programs": [
               {"ranks": "0", "ops": [{"id": 0, "kind": "send", "stream": "comm", "peer": 1,
                                      "bytes": b}]},
               {"ranks": "1", "ops": [{"id": 0, "kind": "recv", "stream": "comm", "peer": 0,
                                      "bytes": b}]}]}, open(sys.argv[2], "w"))
PY
}
p2p_trace 268435456 "$tmp/p256.json"
p2p_trace 134217728 "$tmp/p128.json"
python3 scripts/tools/gen_trace.py --compute-us 200 --out "$tmp/ar16.json" --ranks 16 --layers 4 \
  --group 16 --bytes 67108864
sl="--set cluster.scale_out.topology=spine_leaf"
ar16coll="ascend-910b.json --op allreduce --ranks 16 --sizes 64M:64M $sl"
for fid in analytic flow; do
  # one message whose mesh link dies half way: resent whole round it from T
  alone=$(replay_ms "$tmp/p256.json" $fid)
  half=$(replay_ms "$tmp/p128.json" $fid)
  at=$(python3 -c "print($alone / 2 * 1e-3)")
  died=$(replay_ms "$tmp/p256.json" $fid $f=s0.mesh0-1:0@$at)
  want=$(python3 -c "print($alone / 2 + 2 * ($alone - $half))")
  check "replay $fid: a message whose link dies half way is resent whole round it from T ($alone -> $died ms, want $want)" \
    near "$died" "$want" 0.001
  # compute 200 us, all-reduce, four times; the link dies 0.5 ms into the third
  healthy=$(coll_times $fid $ar16coll)
  dead=$(coll_times $fid $ar16coll $f=s0.mesh0-1:0)
  inflight=$(coll_times $fid $ar16coll $f=s0.mesh0-1:0@0.0005)
  at=$(python3 -c "print((2 * (200 + $healthy) + 200 + 500) * 1e-6)")
  mid=$(replay_ms "$tmp/ar16.json" $fid $sl $f=s0.mesh0-1:0@$at)
  want=$(python3 -c "print((4 * 200 + 2 * $healthy + $inflight + $dead) * 1e-3)")
  check "replay $fid: all-reduces before T as without the fault, the one in flight as npusim coll's from T, after T the static dead link's ($mid ms, want $want = 2 x $healthy + $inflight + $dead us + compute)" \
    near "$mid" "$want" 1e-4
  at=$(python3 -c "print((200 + $healthy + 100) * 1e-6)") # in the second compute
  mid=$(replay_ms "$tmp/ar16.json" $fid $sl $f=s0.mesh0-1:0@$at)
  want=$(python3 -c "print((4 * 200 + $healthy + 3 * $dead) * 1e-3)")
  check "replay $fid: a link dying between all-reduces: the first healthy, the rest dead ($mid ms, want $want)" \
    near "$mid" "$want" 1e-4
  "$npusim" replay --system configs/systems/ascend-910b.json --trace "$tmp/ar16.json" \
    --fidelity $fid $sl $f=s0.mesh0-1:0@0.002 --chrome-trace "$tmp/dead.json" >/dev/null
  check "$fid: the Chrome trace marks the link dying" grep -q \
    '"name": "fault s0.mesh0-1 dead", "cat": "fault", "ph": "i", "s": "g", "ts": 2000.000' \
    "$tmp/dead.json"
  check "$fid: the Chrome trace checker accepts it" python3 tests/e2e/check_chrome_trace.py \
    "$tmp/dead.json"
  "$npusim" replay --system configs/systems/ascend-910b.json --trace "$tmp/ar16.json" \
    --fidelity $fid $sl $f=s0.mesh0-1:0.5@0 --chrome-trace "$tmp/at0.json" >/dev/null
  check "$fid: a fault @0 is the fault from the start: no mark on the timeline" \
    test "$(grep -c '"cat": "fault"' "$tmp/at0.json")" = 0
done
# npusim train: llama3-8b dp4 x tp8 on the 2:1 pod with three spines (flows hashed
# onto every spine); leaf0.spine1 dying during the gradient all-reduce
train_s() { # train_s FIDELITY ARGS... : the step time in s
  local fid=$1
  shift
  "$npusim" train --system configs/systems/ascend-910b-pod64.json \
    --workload configs/workloads/llama3-8b-dp4.json --set cluster.scale_out.spines=3 \
    --fidelity "$fid" --format csv "$@" |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "step_time_s") c = i }
             NR == 2 { print $c }'
}
for fid in analytic flow; do
  healthy=$(train_s $fid)
  static=$(train_s $fid $f=leaf0.spine1:0)
  for at in 5.55 5.6; do
    mid=$(train_s $fid $f=leaf0.spine1:0@$at)
    check "train $fid: a spine uplink dying at $at s is slower than without ($mid > $healthy s)" \
      slower "$mid" "$healthy"
    check "train $fid: and no faster than dead from the start ($mid <= $static s)" \
      slower "$(python3 -c "print($static * (1 + 1e-12))")" "$mid"
  done
done

expect_line "a link dying at T that cuts a rank off" \
  'configs/systems/ascend-910b.json: cluster.faults.links: expected links dying during the run to leave a path (a full-mesh link, a spine uplink), found s0.nic0:0@0.001, which cuts off rank 0 from 0.001 s' \
  "$npusim" coll --system configs/systems/ascend-910b.json --op allreduce --ranks 16 \
  --set cluster.scale_out.topology=spine_leaf $f=s0.nic0:0@0.001
expect_line "the last spine two leaves share dying at T" \
  'configs/systems/h100-dgx.json: cluster.faults.links: expected two leaves to keep a spine both reach after links die at 0.001 s, found none for leaves 0 and 1, which cuts the ranks under one off from the other'"'"'s from 0.001 s' \
  "$npusim" coll --system configs/systems/h100-dgx.json --op allgather --ranks 16 \
  --set cluster.scale_out.topology=spine_leaf --set cluster.scale_out.npus_per_leaf=8 \
  --set cluster.scale_out.spines=2 $f=leaf0.spine0:0,leaf1.spine1:0@0.001
expect_line "links dying at two times" \
  'configs/systems/ascend-910b.json: cluster.faults.links: expected links dying during the run (FACTOR 0 at T > 0) to die at one time, found s0.mesh0-2:0@0.002 after one @0.001' \
  "$npusim" coll --system configs/systems/ascend-910b.json --op allreduce --ranks 8 \
  $f=s0.mesh0-1:0@0.001,s0.mesh0-2:0@0.002
expect_line "a time that is no number" \
  '--set: cluster.faults.links: expected links and the bandwidth left, "LINK:FACTOR[@T],..." (FACTOR 0 or in [0.001, 1]; T in [0, 1e9] s), found "nic:0.5@soon"' \
  "$npusim" coll --system configs/systems/ascend-910b.json --op allreduce --ranks 8 $f=nic:0.5@soon
for fid in analytic flow; do
  "$npusim" replay --system configs/systems/ascend-910b.json --trace "$tmp/tp8.json" \
    --fidelity $fid $f=s0.mesh0-1:0.5@0.002,nic:0.25 --chrome-trace "$tmp/t.json" >/dev/null
  check "$fid: the Chrome trace marks the timed fault" grep -q \
    '"name": "fault s0.mesh0-1 x0.5", "cat": "fault", "ph": "i", "s": "g", "ts": 2000.000' "$tmp/t.json"
  check "$fid: and only the timed one" test "$(grep -c '"cat": "fault"' "$tmp/t.json")" = 1
  check "$fid: the Chrome trace checker accepts it" python3 tests/e2e/check_chrome_trace.py "$tmp/t.json"
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
base=$(coll_times flow $mesh3)
for fault in s0.mesh0-1:0@0.0003 s0.mesh2-5:0@0.0012 s0.mesh0-7:0@0.004 \
  s0.mesh0-1:0@0.0005,s0.mesh3-4:0@0.0005,s0.mesh2-5:0.5@0.0002; do
  grid "910b mesh allreduce 64M..256M" $fault "$base" "$(coll_times analytic $mesh3 $f=$fault)" \
    "$(coll_times flow $mesh3 $f=$fault)"
done
base=$(coll_times flow $two)
for fault in leaf0.spine1:0@0.0005 leaf1.spine1:0@0.003 leaf0.spine1:0@0.001,uplink:0.5@0.002; do
  grid "h100 2-spine allgather 16M..1G" $fault "$base" "$(coll_times analytic $two $f=$fault)" \
    "$(coll_times flow $two $f=$fault)"
done
base=$(coll_times flow $servers)
for fault in s1.mesh0-1:0@0.001 s0.mesh2-3:0@0.0001,nic:0.5@0.002; do
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
sp3="$sl --set cluster.scale_out.npus_per_leaf=8 --set cluster.scale_out.spines=3"
python3 scripts/tools/gen_trace.py --compute-us 200 --out "$tmp/dp2.json" --ranks 16 --layers 4 \
  --group 2 --stride 8 --bytes 67108864
dp2_faults="leaf0.spine1:0@0.005 leaf0.spine1:0@0.012 leaf0.spine1:0@0.012,nic:0.25@0.02"
dp2_faults="$dp2_faults leaf0.spine1:0@0.012,s0.nic4:0.2@0.004"
for c in "ar16|$sl|s0.mesh0-1:0@0.0011 s0.mesh0-1:0@0.0015 s1.mesh2-5:0@0.0025" \
  "dp2|$sp3|$dp2_faults" \
  "tp8||s0.mesh0-1:0@0.002 s0.mesh3-4:0@0.0045" \
  "pipeline||s0.mesh1-2:0@0.0003 s0.mesh0-1:0@0.0012"; do
  IFS='|' read -r t sets faults <<<"$c"
  trace="$tmp/$t.json"
  [ $t = pipeline ] && trace=traces/pipeline_4stage.json
  # shellcheck disable=SC2086
  base=$(replay_ms "$trace" flow $sets)
  for fault in $faults; do
    # shellcheck disable=SC2086
    grid "replay $t (link dying)" $fault "$base" "$(replay_ms "$trace" analytic $sets $f=$fault)" \
      "$(replay_ms "$trace" flow $sets $f=$fault)"
  done
done
base=$(train_s flow)
for fault in leaf0.spine1:0@5.55 leaf0.spine1:0@5.6 leaf0.spine2:0@5.58; do
  grid "train llama3-8b dp4 3 spines" $fault "$base" "$(train_s analytic $f=$fault)" \
    "$(train_s flow $f=$fault)"
done
finish fault_time_e2e
