#!/usr/bin/env python3
"""Benchmarks `npusim serve`: wall time and peak memory of the issue's targets.

  1. 10^5 requests on one instance (llama3-8b on one H100): target <= 10 s.
  2. The 384-NPU (768-die) disaggregated DeepSeek-V3 deployment on a CloudMatrix384
     with 10^4 requests: target <= 30 s.
Prints a table; not a test (timings depend on the machine).

usage: bench_serve.py NPUSIM"""
import os
import resource
import subprocess
import sys
import time

CASES = [
    ("llama3-8b, 1 H100, 1e5 requests", "h100-dgx", "serve-llama3-8b",
     ["serving.requests.count=100000"], 10),
    ("llama3-8b, 1 H100, 1e5 requests, offline", "h100-dgx", "serve-llama3-8b",
     ["serving.requests.count=100000", "serving.requests.rate_per_s=0"], 10),
    ("deepseek-v3 PD, CM384 (768 dies), 1e4 requests", "ascend-910c-cm384",
     "serve-deepseek-v3-pd", ["serving.requests.count=10000"], 30),
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    npusim = sys.argv[1]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    print("%-48s %10s %10s %12s" % ("case", "wall_s", "target_s", "peak_MiB"))
    for name, system, wl, sets, target in CASES:
        args = [npusim, "serve", "--system", os.path.join(repo, "configs/systems", system + ".json"),
                "--workload", os.path.join(repo, "configs/workloads", wl + ".json"), "--format", "csv"]
        for s in sets:
            args += ["--set", "workload." + s]
        t0 = time.monotonic()
        out = subprocess.run(args, capture_output=True, text=True)
        wall = time.monotonic() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if out.returncode:
            sys.exit("bench_serve: %s failed: %s" % (name, out.stderr.strip()))
        print("%-48s %10.2f %10d %12.1f" % (name, wall, target, peak))


if __name__ == "__main__":
    main()
