#!/usr/bin/env python3
"""closed_form_diff.py - the flow engine's shortcuts against SimGrid's rounds.

Runs `npusim coll` and `npusim replay` in flow over a grid of systems,
collectives, job sizes, algorithms and fabrics, each twice: as shipped (uniform
rounds collapsed, contention-free collectives timed in closed form) and with
NPUSIM_FLOW_COLLAPSE=0 (every round of every collective in SimGrid). Prints, per
command, how many runs give the same output byte for byte, and for the others
the field that moved most and by how much. A check that reports, not a test:
ctest holds the cases it has pinned (coll_e2e, replay_e2e).
Usage: scripts/bench/closed_form_diff.py [--npusim PATH] [--quick]
Python standard library only."""
import argparse
import itertools
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FABRICS = ["cluster.scale_out.oversubscription=1", "cluster.scale_out.spines=2",
           "cluster.scale_out.oversubscription=2", "cluster.faults.links=nic:0.5"]


def numbers(a, b, path, out):
    """Appends (relative difference, path, a, b) for every number that differs."""
    if isinstance(a, dict):
        for k in a:
            numbers(a[k], b.get(k), path + "." + k, out)
    elif isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            numbers(x, y, "%s[%d]" % (path, i), out)
    elif isinstance(a, (int, float)) and not isinstance(a, bool) and a != b:
        out.append((abs(a - b) / max(abs(a), abs(b)), path, a, b))


def both(cmd):
    """The outputs as shipped and with every round in SimGrid."""
    outs = []
    for mode in ("1", "0"):
        env = dict(os.environ, NPUSIM_FLOW_COLLAPSE=mode)
        outs.append(subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True).stdout)
    return outs


def compare(label, runs):
    same, moved = 0, []
    for cmd in runs:
        a, b = both(cmd)
        if a == b:
            same += 1
            continue
        diff = []
        try:
            numbers(json.loads(a), json.loads(b), "", diff)
        except ValueError:
            diff = [(1.0, "output", "", "")]
        moved.append((max(diff) if diff else (0, "text", "", ""), " ".join(cmd[1:])))
    print(f"{label}: {len(runs)} runs, {same} the same byte for byte, {len(moved)} not")
    for (rel, path, x, y), cmd in moved:
        print(f"  {path}: {x} against {y} (relative {rel:.2g}): {cmd}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("--quick", action="store_true", help="one fabric, two systems")
    args = ap.parse_args()
    systems = ["ascend-910b", "h100-dgx"] if args.quick else \
        ["ascend-910b", "h100-dgx", "a100-dgx", "ascend-910c-cm384", "h200-dgx"]
    fabrics = FABRICS[:1] if args.quick else FABRICS
    coll = []
    for sys_, op, ranks, algo, fabric in itertools.product(
            systems, ["allreduce", "allgather", "reducescatter", "broadcast", "alltoall"],
            [16, 48, 128], ["auto", "ring"], fabrics):
        coll.append([args.npusim, "coll", "--system", f"configs/systems/{sys_}.json", "--op", op,
                     "--ranks", str(ranks), "--algo", algo, "--sizes", "256K:32M:8", "--links",
                     "all", "--format", "json", "--set", fabric])
    compare("coll", coll)
    traces = [(64, 64, 1, "allreduce", "ring"), (48, 48, 1, "allreduce", "ring"),
              (128, 16, 8, "allgather", None), (96, 32, 1, "reducescatter", "ring"),
              (64, 8, 1, "allreduce", None), (256, 32, 8, "allreduce", "nhr"),
              (128, 128, 1, "allgather", "ring"), (80, 16, 1, "allreduce", "ring")]
    replay = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (ranks, group, stride, kind, algo) in enumerate(traces):
            trace = os.path.join(tmp, f"t{n}.json")
            gen = ["python3", os.path.join(ROOT, "scripts", "tools", "gen_trace.py"), "--ranks",
                   str(ranks), "--layers", "2", "--group", str(group), "--stride", str(stride),
                   "--kind", kind, "--bytes", str(16 << 20), "--compute-us", "150", "--out", trace]
            subprocess.run(gen + (["--algo", algo] if algo else []), check=True)
            for sys_, fabric in itertools.product(systems[:3], fabrics[:2] + [
                    "cluster.scale_out.npus_per_leaf=16"]):
                replay.append([args.npusim, "replay", "--system", f"configs/systems/{sys_}.json",
                               "--trace", trace, "--fidelity", "flow", "--format", "json",
                               "--links", "all", "--set", fabric])
        compare("replay", replay)


if __name__ == "__main__":
    main()
