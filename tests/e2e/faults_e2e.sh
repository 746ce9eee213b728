#!/usr/bin/env bash
# faults_e2e.sh NPUSIM - slow and dead links (cluster.faults.links) end to end,
# with known answers, in both fidelities: one full-mesh link of a 910B server at
# half its bandwidth doubles an all-reduce's time (the slowest pair sets the
# mesh's pace); that link dead is detoured through a third NPU, whose two links
# then carry double (the same time); in a two-spine fabric a dead spine uplink
# puts every flow between the two leaves on the other spine: the same time as
# one spine of half the capacity (oversubscription 2); with every NPU of one leaf
# sending to every NPU of the other over two spines (ECMP splits the flows evenly)
# a dead spine uplink leaves half the bandwidth: twice the time of the exchange
# perfectly balanced over both (one merged spine); a fault naming no link,
# or a dead link that cuts ranks off, is one line naming them, exit 2.
# Run from the repository root.
set -u
npusim=${1:?usage: faults_e2e.sh NPUSIM}
. "$(dirname "$0")/e2e_lib.sh"
time_us() { # time_us SYSTEM FIDELITY ARGS... : the one size's time in us
  local sys=$1 fid=$2
  shift 2
  "$npusim" coll --system "configs/systems/$sys" --sizes 256M:256M --fidelity "$fid" "$@" |
    awk '!/^#/ && NF { print $4 }'
}
near() { # near A B TOLERANCE: |A - B| <= TOLERANCE x B
  python3 -c 'import sys; a, b, t = map(float, sys.argv[1:]); sys.exit(abs(a - b) > t * b)' "$@"
}
ar="--op allreduce --ranks 8"
for fid in analytic flow; do
  base=$(time_us ascend-910b.json $fid $ar)
  half=$(time_us ascend-910b.json $fid $ar --set cluster.faults.links=s0.mesh0-1:0.5)
  dead=$(time_us ascend-910b.json $fid $ar --set cluster.faults.links=s0.mesh0-1:0)
  check "$fid: a mesh link at half bandwidth doubles the all-reduce ($base -> $half us)" \
    near "$half" "$(python3 -c "print(2 * $base)")" 0.01
  check "$fid: a dead mesh link detoured through a third NPU, the same ($dead us)" \
    near "$dead" "$half" 0.01
  two="--op allgather --ranks 16 --set cluster.scale_out.topology=spine_leaf
    --set cluster.scale_out.npus_per_leaf=8"
  spine_dead=$(time_us h100-dgx.json $fid $two --set cluster.scale_out.spines=2 \
    --set cluster.faults.links=leaf0.spine0:0)
  one_half=$(time_us h100-dgx.json $fid $two --set cluster.scale_out.spines=1 \
    --set cluster.scale_out.oversubscription=2)
  check "$fid: a dead spine uplink = one spine of half the capacity ($spine_dead vs $one_half us)" \
    near "$spine_dead" "$one_half" 0.01
done
a=$(time_us ascend-910b.json analytic $ar --set cluster.faults.links=nic:0.5,s0.mesh2-5:0.3)
f=$(time_us ascend-910b.json flow $ar --set cluster.faults.links=nic:0.5,s0.mesh2-5:0.3)
check "analytic and flow agree on a faulted fabric within 3% ($a, $f us)" near "$a" "$f" 0.03
expect_line "a fault naming no link" \
  'configs/systems/ascend-910b.json: cluster.faults.links: expected a link kind (scale_up, die, supernode, nic, uplink, core) or a link of this job (e.g. s0.nic0), found "s9.nic0"' \
  "$npusim" coll --system configs/systems/ascend-910b.json $ar --ranks 16 \
  --set cluster.faults.links=s9.nic0:0.5
expect_line "a dead NIC cuts its rank off" \
  'configs/systems/ascend-910b.json: cluster.faults.links: expected dead links that leave a path (a full-mesh link, a spine uplink), found s1.nic3 dead, which cuts off rank 11' \
  "$npusim" coll --system configs/systems/ascend-910b.json --op allreduce --ranks 16 \
  --set cluster.faults.links=s1.nic3:0
expect_line "a factor above 1" \
  '--set: cluster.faults.links: expected links and the bandwidth left, "LINK:FACTOR[@T],..." (FACTOR 0 or in [0.001, 1]; T in [0, 1e9] s), found "nic:1.5"' \
  "$npusim" coll --system configs/systems/ascend-910b.json $ar --set cluster.faults.links=nic:1.5
# The issue's known answer: a failed link in a 2-path fabric halves the bandwidth
# the traffic had. Every NPU of one leaf sends 16 MiB to every NPU of the other
# (two 910B servers per leaf, two spines). Spread perfectly over both spines (one
# merged spine of their capacity), the NICs and the uplinks both run full; with
# one spine's uplink dead, every flow crosses the other, and the exchange takes
# twice as long, in both fidelities. ECMP's hash splits the 256 flows each way
# unevenly, so the healthy fabric is slower than the perfect spread, never faster;
# packets sprayed over both spines (cluster.scale_out.ecmp packet) are the
# perfect spread, to the last digit, and with one spine of the two dead (the
# leaf's sprayed uplink at half) take the hashed fabric's dead-spine time.
python3 - "$tmp/cross.json" <<'PY'
import json, sys
programs = []
for r in range(32):
    ops = []
    for b in (range(16, 32) if r < 16 else range(16)):
        ops.append({"id": len(ops), "kind": "send", "stream": f"tx{b}", "peer": b, "bytes": 16777216})
        ops.append({"id": len(ops), "kind": "recv", "stream": f"rx{b}", "peer": b, "bytes": 16777216})
    programs.append({"ranks": str(r), "ops": ops})
json.dump({"format": "npusim-trace", "version": 1, "name": "leaf to leaf", "ranks": 32,
           "communicators": [], "programs": programs}, open(sys.argv[1], "w"))
PY
cross_s() { # cross_s FIDELITY [SET...]: the exchange's time in s
  local fid=$1
  shift
  "$npusim" replay --system configs/systems/ascend-910b.json --trace "$tmp/cross.json" \
    --fidelity "$fid" --set cluster.scale_out.npus_per_leaf=16 --set cluster.scale_out.spines=2 \
    "$@" --format json | python3 -c 'import json, sys; print(json.load(sys.stdin)["step_time_s"])'
}
for fid in analytic flow; do
  spread=$(cross_s $fid --set cluster.scale_out.spines=1)
  healthy=$(cross_s $fid)
  dead=$(cross_s $fid --set cluster.faults.links=leaf0.spine0:0)
  check "$fid: a dead spine uplink of two halves the leaf-to-leaf bandwidth ($spread spread -> $dead s)" \
    near "$dead" "$(python3 -c "print(2 * $spread)")" 0.01
  check "$fid: hashed flows are no faster than the perfect spread ($healthy >= $spread s)" \
    python3 -c "import sys; sys.exit(not $healthy >= $spread)"
  sprayed=$(cross_s $fid --set cluster.scale_out.ecmp=packet)
  check "$fid: packets sprayed over the two spines = one merged spine ($sprayed vs $spread s)" \
    test "$sprayed" = "$spread"
  half=$(cross_s $fid --set cluster.scale_out.ecmp=packet --set cluster.faults.links=leaf0.up:0.5)
  check "$fid: sprayed, one spine of two dead (the leaf's sprayed uplink at half) = hashed ($half vs $dead s)" \
    near "$half" "$dead" 0.01
done
expect_line "sprayed spines are one path, named leafN.up" \
  'configs/systems/ascend-910b.json: cluster.faults.links: expected a link kind (scale_up, die, supernode, nic, uplink, core) or a link of this job (e.g. s0.nic0), found "leaf0.spine0"' \
  "$npusim" coll --system configs/systems/ascend-910b.json --op allreduce --ranks 64 \
  --set cluster.scale_out.spines=2 --set cluster.scale_out.ecmp=packet \
  --set cluster.faults.links=leaf0.spine0:0
# Planes (cluster.scale_out.planes): two 910B servers, one NPU each, 2 NIC ports
# per NPU. Merged (one plane) a 256 MiB sendrecv has both ports; on two planes a
# flow takes one port of one plane, as a queue pair does: its bandwidth term
# (time(256M) - time(128M)) doubles. A dead port on plane 0 moves its flows to
# plane 1, where each direction again has one port: the same time. Ports dead
# on different planes at the two ends leave no plane between them: refused in
# one line, as is a plane count that does not divide the ports.
plane_us() { # plane_us FIDELITY PLANES SIZE [SET...]: the sendrecv's time in us
  local fid=$1 planes=$2 size=$3
  shift 3
  "$npusim" coll --system configs/systems/ascend-910b.json --op sendrecv --ranks 2 \
    --ranks-per-node 1 --sizes "$size:$size" --fidelity "$fid" \
    --set cluster.scale_out.nics_per_npu=2 --set cluster.scale_out.planes="$planes" "$@" |
    awk '!/^#/ && NF { print $4 }'
}
for fid in analytic flow; do
  one=$(python3 -c "print($(plane_us $fid 1 256M) - $(plane_us $fid 1 128M))")
  two=$(python3 -c "print($(plane_us $fid 2 256M) - $(plane_us $fid 2 128M))")
  check "$fid: a flow on one of two planes has one port: twice the bandwidth time ($one -> $two us)" \
    near "$two" "$(python3 -c "print(2 * $one)")" 0.001
  healthy=$(plane_us $fid 2 256M)
  dead=$(plane_us $fid 2 256M --set cluster.faults.links=p0.s0.nic0:0)
  check "$fid: a dead port on plane 0 moves its flows to plane 1, the same time ($healthy vs $dead us)" \
    near "$dead" "$healthy" 1e-6
done
expect_line "ports dead on different planes at the two ends" \
  'configs/systems/ascend-910b.json: cluster.faults.links: expected every two ranks of different servers to keep a plane where both have a live NIC port and their leaves reach each other, found none for ranks 0 and 1' \
  "$npusim" coll --system configs/systems/ascend-910b.json --op sendrecv --ranks 2 \
  --ranks-per-node 1 --set cluster.scale_out.nics_per_npu=2 --set cluster.scale_out.planes=2 \
  --set cluster.faults.links=p0.s0.nic0:0,p1.s1.nic0:0
expect_line "planes that do not divide the ports" \
  '--set: cluster.scale_out.planes: expected a divisor of cluster.scale_out.nics_per_npu = 2 (each plane takes as many NIC ports of every NPU), found 3' \
  "$npusim" coll --system configs/systems/ascend-910b.json --op sendrecv --ranks 2 \
  --ranks-per-node 1 --set cluster.scale_out.nics_per_npu=2 --set cluster.scale_out.planes=3
finish faults_e2e
