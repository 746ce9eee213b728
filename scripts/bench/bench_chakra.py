#!/usr/bin/env python3
"""bench_chakra.py - replaying Chakra execution traces: wall time and peak memory.

The workload of the peers' benchmarks as Chakra ETs (scripts/tools/chakra_et.py): N
ranks, each running 32 layers of (500 us compute -> 64 MiB all-reduce over all
ranks), replayed by `npusim replay --trace PREFIX` on ascend-910b (one leaf per
32 NPUs, spine-leaf) in the analytic and the flow fidelity. Prints a table: N,
fidelity, simulated step, wall time and peak memory (GNU time's maximum
resident set) per run, reading the ETs included. A benchmark: it reports, it
does not fail.
Usage: scripts/bench/bench_chakra.py [--npusim PATH] [--ranks 64,256,1024,4096]
                               [--fidelity analytic,flow] [--layers 32]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "tools"))
from chakra_et import allreduce_rank, et_bytes  # noqa: E402


def run(cmd):
    """(stdout, wall_s, peak_MiB) of cmd under GNU time."""
    p = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("npusim failed: %s" % p.stderr.strip())
    wall, kib = p.stderr.strip().splitlines()[-1].split()
    return p.stdout, float(wall), int(kib) / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("--ranks", default="64,256,1024,4096")
    ap.add_argument("--fidelity", default="analytic,flow")
    ap.add_argument("--layers", type=int, default=32)
    args = ap.parse_args()
    system = os.path.join(ROOT, "configs", "systems", "ascend-910b.json")
    data = et_bytes(allreduce_rank(args.layers, 500, 64 << 20))
    print("%6s %9s %14s %10s %10s" % ("ranks", "fidelity", "step_ms", "wall_s", "peak_MiB"))
    for n in [int(x) for x in args.ranks.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, "w")
            for r in range(n):
                with open("%s.%d.et" % (prefix, r), "wb") as f:
                    f.write(data)
            for fid in args.fidelity.split(","):
                out, wall, peak = run([args.npusim, "replay", "--system", system, "--trace", prefix,
                                       "--fidelity", fid, "--format", "json"])
                step = json.loads(out)["step_time_s"] * 1e3
                print("%6d %9s %14.3f %10.2f %10.0f" % (n, fid, step, wall, peak), flush=True)


if __name__ == "__main__":
    main()
