#!/usr/bin/env python3
"""Benchmarks `npusim cluster`: wall time and peak memory as jobs and NPUs grow.

Jobs of llama3-8b-dp4 (32 NPUs each, TP 8 inside servers, DP 4 across them),
every one spread over the leaves of a spine-leaf cluster with 2:1 oversubscribed
leaves just big enough for them, analytic fidelity, 3 steps, up to 32 jobs on
1024 NPUs, then the 1024-NPU GPT-3 175B plan beside one of them (147 Mi ops run
on all NPUs over 3 steps, near the 160 Mi bound of jobs_merge.h). Each run is one
process for the together run plus one child per job alone (again for a job
that must repeat more steps). Prints a table; not a test (timings depend on
the machine).

usage: bench_cluster.py NPUSIM"""
import json
import os
import resource
import subprocess
import sys
import time

POD = ["--set", "cluster.scale_out.npus_per_leaf=16", "--set", "cluster.scale_out.oversubscription=2"]


def cases():
    for jobs in (2, 4, 8, 16, 32):
        yield (f"{jobs} x llama3-8b-dp4 spread ({jobs * 32} NPUs)", "ascend-910b",
               ["llama3-8b-dp4@spread"] * jobs, POD + ["--set", f"cluster.nodes={jobs * 4}"])
    yield ("gpt3-175b (1024) + llama3-8b-dp4 spread (1056 NPUs)", "ascend-910b",
           ["gpt3-175b-910b", "llama3-8b-dp4@spread"], ["--set", "cluster.nodes=132"])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    npusim = sys.argv[1]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    print("%-52s %8s %10s %12s" % ("case", "wall_s", "slowdown", "peak_MiB"))
    for name, system, jobs, sets in cases():
        args = [npusim, "cluster", "--system", os.path.join(repo, "configs/systems", system + ".json"),
                "--format", "json"] + sets
        for j in jobs:
            args += ["--job", os.path.join(repo, "configs/workloads", j.replace("@", ".json@", 1)
                                           if "@" in j else j + ".json")]
        t0 = time.monotonic()
        out = subprocess.run(args, capture_output=True, text=True)
        wall = time.monotonic() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if out.returncode:
            sys.exit("bench_cluster: %s failed: %s" % (name, out.stderr.strip()))
        worst = max(j["slowdown"] for j in json.loads(out.stdout)["jobs"])
        print("%-52s %8.2f %10.3f %12.1f" % (name, wall, worst, peak))


if __name__ == "__main__":
    main()
