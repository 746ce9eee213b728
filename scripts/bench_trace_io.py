#!/usr/bin/env python3
"""bench_trace_io.py - the trace reader and the Chrome writer grow linearly.

Reader: one rank's program of N ops (compute chained by dependencies, an event
recorded and waited for every 4 ops, a second stream), replayed analytic; the
wall time is almost all reading and checking. Writer: R ranks, each its own
program of 8 ops passing a message to the next rank, replayed analytic with
--chrome-trace. Each size doubles the last: linear code takes about twice as
long per row (the "x prev" column), quadratic code four times. A benchmark: it
reports, it does not fail.
Usage: scripts/bench_trace_io.py [--npusim PATH] [--ops 50000,...] [--ranks 2048,...]"""
import argparse
import json
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM = os.path.join(ROOT, "configs", "systems", "ascend-910b.json")


def reader_trace(n):
    ops = []
    for i in range(0, n, 4):
        ops += [{"id": i, "kind": "compute", "duration_us": 1, **({"deps": [i - 4]} if i else {})},
                {"id": i + 1, "kind": "record", "event": "e%d" % i},
                {"id": i + 2, "kind": "wait", "stream": "s", "event": "e%d" % i},
                {"id": i + 3, "kind": "delay", "stream": "s", "duration_us": 1}]
    return {"format": "npusim-trace", "version": 1, "ranks": 1, "communicators": [],
            "programs": [{"ranks": "0", "ops": ops}]}


def writer_trace(ranks):
    programs = []
    for r in range(ranks):
        ops = [{"id": k, "kind": "compute", "duration_us": 5} for k in range(6)]
        if r + 1 < ranks:
            ops.append({"id": 6, "kind": "send", "peer": r + 1, "bytes": 1024})
        if r > 0:
            ops.append({"id": 7, "kind": "recv", "peer": r - 1, "bytes": 1024})
        programs.append({"ranks": [r], "ops": ops})
    return {"format": "npusim-trace", "version": 1, "ranks": ranks, "ranks_per_node": 8,
            "communicators": [], "programs": programs}


def timed(cmd):
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True)
    if run.returncode != 0:
        raise SystemExit("npusim failed: %s" % run.stderr.decode().strip())
    return time.perf_counter() - start


def table(title, unit, sizes, make, extra, npusim, tmp):
    print(title)
    print("%10s %10s %8s" % (unit, "wall_s", "x prev"))
    prev = None
    for n in sizes:
        path = os.path.join(tmp, "t.json")
        with open(path, "w") as f:
            json.dump(make(n), f)
        wall = timed([npusim, "replay", "--system", SYSTEM, "--trace", path, "--fidelity",
                      "analytic", "--format", "csv"] + extra(tmp))
        print("%10d %10.2f %8s" % (n, wall, "%.1f" % (wall / prev) if prev else "-"))
        prev = wall
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("--ops", default="50000,100000,200000,400000")
    ap.add_argument("--ranks", default="2048,4096,8192,16384")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        table("trace reader: ops in one program", "ops", [int(x) for x in args.ops.split(",")],
              reader_trace, lambda d: [], args.npusim, tmp)
        table("Chrome writer: ranks", "ranks", [int(x) for x in args.ranks.split(",")],
              writer_trace, lambda d: ["--chrome-trace", os.path.join(d, "c.json")],
              args.npusim, tmp)


if __name__ == "__main__":
    main()
