#!/usr/bin/env python3
"""bench_coll.py - wall time and peak memory of `npusim coll` at scale.

A 256 MB allreduce with `auto` on ascend-910b for 8 to 4096 ranks in both
fidelities, one process per run (SimGrid runs once per process). Prints a table
with the targets of issue #3: flow <= 2 s at 1024 ranks and <= 30 s at 4096,
analytic <= 50 ms at 4096. A benchmark, not a test: it reports, it does not fail.
Usage: scripts/bench/bench_coll.py [--npusim PATH] [--ranks 8,64,...]"""
import argparse
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGETS = {("flow", 1024): 2.0, ("flow", 4096): 30.0, ("analytic", 4096): 0.05}


def run(npusim, ranks, fidelity):
    """Wall time, peak resident memory (KiB, the child's own rusage) and the row."""
    cmd = [npusim, "coll", "--system", os.path.join(ROOT, "configs/systems/ascend-910b.json"),
           "--op", "allreduce", "--ranks", str(ranks), "--sizes", "256M",
           "--fidelity", fidelity, "--format", "csv"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"npusim failed: {err.decode().strip()}")
    row = out.decode().strip().splitlines()[-1].split(",")
    return wall, usage.ru_maxrss, row[5], row[8]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.environ.get("NPUSIM", os.path.join(ROOT, "build", "npusim")))
    ap.add_argument("--ranks", default="8,64,512,1024,4096")
    args = ap.parse_args()
    print("256 MB allreduce, auto, ascend-910b (one process per run)")
    print(f"{'ranks':>6} {'fidelity':>9} {'wall_s':>8} {'peak_MiB':>9} {'sim_time_us':>12} "
          f"{'algo':>14}  target")
    for ranks in [int(r) for r in args.ranks.split(",")]:
        for fidelity in ("flow", "analytic"):
            wall, rss_kib, sim_us, algo = run(args.npusim, ranks, fidelity)
            rss = rss_kib / 1024
            target = TARGETS.get((fidelity, ranks))
            verdict = "" if target is None else (f"<= {target:g} s: "
                                                 f"{'met' if wall <= target else 'MISSED'}")
            print(f"{ranks:>6} {fidelity:>9} {wall:>8.3f} {rss:>9.1f} {float(sim_us):>12.1f} "
                  f"{algo:>14}  {verdict}")


if __name__ == "__main__":
    main()
