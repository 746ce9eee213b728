#!/usr/bin/env python3
"""monotone_e2e.py NPUSIM - more bandwidth, clock or speed is never slower.

A metamorphic check: nothing here knows the right time of a step, but giving the
job more of a resource must never make it longer. Each ladder below sets one key
to rising values (a rank's speed factor, a link kind's fault factor from the
start and from a time in the run, a link's bandwidth and efficiency, the HBM
bandwidth, the clock), every command runs at each rung (train and replay in both
fidelities, coll in both), and each pair of neighbouring rungs must give a time
at the higher rung no longer than at the lower (the same time allowed: a rank
that is not the slowest gains nothing). Runs from the repository root.
"""
import concurrent.futures
import json
import os
import subprocess
import sys

NPUSIM = sys.argv[1]
SYSTEM = "configs/systems/ascend-910b.json"
WORKLOAD = "tests/data/train/tiny.json"
# a bound on rounding: times are printed with 9 significant digits
SLACK = 1e-8

# (name, args, how to read the time from the JSON output)
COMMANDS = [
    ("train analytic", ["train", "--system", SYSTEM, "--workload", WORKLOAD],
     lambda j: j["step_time_s"]),
    ("train flow", ["train", "--system", SYSTEM, "--workload", WORKLOAD, "--fidelity", "flow"],
     lambda j: j["step_time_s"]),
    ("replay analytic", ["replay", "--system", SYSTEM, "--trace", "traces/mixed.json",
                         "--fidelity", "analytic"], lambda j: j["step_time_s"]),
    ("replay flow", ["replay", "--system", SYSTEM, "--trace", "traces/mixed.json", "--fidelity",
                     "flow"], lambda j: j["step_time_s"]),
    ("coll analytic", ["coll", "--system", SYSTEM, "--op", "allreduce", "--ranks", "16",
                       "--sizes", "64K:256M:64", "--fidelity", "analytic"],
     lambda j: sum(r["time_us"] for r in j)),
    ("coll flow", ["coll", "--system", SYSTEM, "--op", "allreduce", "--ranks", "16", "--sizes",
                   "64K:256M:64", "--fidelity", "flow"], lambda j: sum(r["time_us"] for r in j)),
]
# commands whose time a compute-only key cannot change are left out of its ladder
COMPUTE = ["train analytic", "train flow", "replay analytic", "replay flow"]
ALL = [c[0] for c in COMMANDS]

FACTORS = [0.001, 0.01, 0.1, 0.5, 1]
SPEEDS = [0.01, 0.1, 0.5, 1, 2, 100]
# (key, rising values, commands)
LADDERS = [
    ("chip.variation.speed_factors", ["3:%g" % f for f in SPEEDS], COMPUTE),
    ("chip.variation.speed_factors", ["0-7:%g" % f for f in SPEEDS], COMPUTE),
    ("chip.variation.speed_factors", ["0-3:%g,4-7:0.5" % f for f in SPEEDS], COMPUTE),
    ("cluster.faults.links", ["scale_up:%g" % f for f in FACTORS], ALL),
    ("cluster.faults.links", ["nic:%g" % f for f in FACTORS], ALL),
    ("cluster.faults.links", ["s0.mesh0-1:%g" % f for f in FACTORS], ALL),
    ("cluster.faults.links", ["scale_up:%g@0.002" % f for f in FACTORS], ALL),
    ("cluster.faults.links", ["nic:%g@0.001,nic:0.5@0.003" % f for f in [0.002] + FACTORS[1:]],
     ALL),
    ("node.scale_up.link_bandwidth_GBps", [7, 14, 28, 56, 1e6], ALL),
    ("node.scale_up.efficiency", [0.1, 0.3, 0.65, 1], ALL),
    ("cluster.scale_out.nic_bandwidth_GBps", [5, 12.5, 25, 50, 1e6], ALL),
    ("cluster.scale_out.efficiency", [0.1, 0.5, 1], ALL),
    ("chip.hbm.bandwidth_GBps", [200, 800, 1600, 3200, 1e6], COMPUTE),
    ("chip.freq_GHz", [0.5, 1, 1.8, 3, 10], COMPUTE),
]


def run(job):
    name, args, read, key, value = job
    cmd = [NPUSIM] + args + ["--set", "%s=%s" % (key, value), "--format", "json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return None, "%s: exit %d: %s" % (" ".join(cmd[1:]), p.returncode, p.stderr.strip())
    return read(json.loads(p.stdout)), None


def main():
    commands = {c[0]: c for c in COMMANDS}
    jobs, pairs = [], []
    for key, values, names in LADDERS:
        for name in names:
            _, args, read = commands[name]
            first = len(jobs)
            jobs += [(name, args, read, key, v) for v in values]
            pairs += [(first + i, first + i + 1) for i in range(len(values) - 1)]
    workers = max(2, min(8, os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(run, jobs))
    failures = [err for _, err in results if err]
    for lo, hi in pairs:
        (t_lo, _), (t_hi, _) = results[lo], results[hi]
        if t_lo is None or t_hi is None:
            continue
        if t_hi > t_lo * (1 + SLACK):
            name, _, _, key, v_lo = jobs[lo]
            failures.append("%s: %s=%s takes %.9g s, more than %.9g s at %s" %
                            (name, key, jobs[hi][4], t_hi, t_lo, v_lo))
    for f in failures:
        print("FAIL " + f)
    print("monotonicity: %d runs, %d pairs, %d failed" % (len(jobs), len(pairs), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
