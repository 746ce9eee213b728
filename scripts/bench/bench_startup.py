#!/usr/bin/env python3
"""bench_startup.py - what one short npusim run costs, start to exit.

Sweeps and the test suites start npusim thousands of times, so a run's fixed
cost matters as much as its simulation. SimGrid (and the ns-3 libraries it
links) is opened only by the runs that simulate flows (sim/base/simgrid_dl.h);
this prints, per command, the median wall time of REPEAT runs, with the flow
run (which opens SimGrid) beside the analytic ones for comparison. A
benchmark, not a test: it reports, it does not fail.
Usage: scripts/bench/bench_startup.py [--npusim PATH] [--repeat N]"""
import argparse
import os
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYSTEM = os.path.join(ROOT, "configs/systems/ascend-910b.json")
RUNS = [
    ("--version", ["--version"]),
    ("op matmul", ["op", "--system", SYSTEM, "--op", "matmul", "--shape", "4096,4096,4096"]),
    ("coll analytic", ["coll", "--system", SYSTEM, "--op", "allreduce", "--ranks", "16",
                       "--sizes", "64M", "--fidelity", "analytic"]),
    ("train analytic (tiny)", ["train", "--system", SYSTEM, "--workload",
                               os.path.join(ROOT, "tests/data/train/tiny.json")]),
    ("serve (40 requests)", ["serve", "--system", SYSTEM, "--workload",
                             os.path.join(ROOT, "configs/workloads/serve-llama3-8b.json"),
                             "--set", "workload.serving.requests.count=40",
                             "--set", "workload.serving.parallel.tp=8"]),
    ("coll flow (opens SimGrid)", ["coll", "--system", SYSTEM, "--op", "allreduce", "--ranks",
                                   "16", "--sizes", "64M", "--fidelity", "flow"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.environ.get("NPUSIM", os.path.join(ROOT, "build", "npusim")))
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    print("%-28s %12s %12s" % ("run", "median ms", "min ms"))
    for name, argv in RUNS:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            proc = subprocess.run([args.npusim] + argv, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(f"npusim {name} failed: {proc.stderr.decode().strip()}")
        print("%-28s %12.1f %12.1f" % (name, 1e3 * statistics.median(times), 1e3 * min(times)))


if __name__ == "__main__":
    main()
