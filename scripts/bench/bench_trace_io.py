#!/usr/bin/env python3
"""bench_trace_io.py - the trace reader and the Chrome writer grow linearly.

Reader: one rank's program of N ops (compute chained by dependencies, an event
recorded and waited for every 4 ops, a second stream), replayed analytic; the
wall time is almost all reading and checking. Writer: R ranks, each its own
program of 8 ops passing a message to the next rank, replayed analytic with
--chrome-trace. Each size doubles the last: linear code takes about twice as
long per row (the "x prev" column), quadratic code four times. A benchmark: it
reports, it does not fail.
--big: instead, one timeline over 4 GiB of JSON (llama2-70b on 32 910B with a
global batch of 2048: 52 million slices) written as .json.gz; prints the wall
time, npusim's peak memory, the file's size and its size inflated, and checks it
with tests/e2e/check_chrome_trace.py (--no-check skips that, minutes).
Usage: scripts/bench/bench_trace_io.py [--npusim PATH] [--ops 50000,...] [--ranks 2048,...]
       scripts/bench/bench_trace_io.py --big [--dir DIR] [--no-check]"""
import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


def big(npusim, directory, check):
    """A timeline over 4 GiB: written whole, in bounded memory."""
    path = os.path.join(directory, "big.json.gz")
    cmd = [npusim, "train", "--system", SYSTEM, "--workload",
           os.path.join(ROOT, "configs", "workloads", "llama2-70b.json"),
           "--set", "training.global_batch=2048", "--chrome-trace", path, "--format", "json"]
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True)
    wall = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit("npusim failed: %s" % run.stderr.decode().strip())
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB -> GiB
    inflated = 0
    with gzip.open(path, "rb") as f:
        while True:
            block = f.read(1 << 24)
            if not block:
                break
            inflated += len(block)
    print("big timeline: llama2-70b, 32 ranks, global batch 2048")
    print("%10s %12s %12s %14s" % ("wall_s", "peak_GiB", "file_GiB", "inflated_GiB"))
    print("%10.1f %12.2f %12.2f %14.2f" % (wall, peak, os.path.getsize(path) / 2**30,
                                          inflated / 2**30))
    if check:
        sys.stdout.flush()
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "e2e", "check_chrome_trace.py"),
                        path])
    os.unlink(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("--ops", default="50000,100000,200000,400000")
    ap.add_argument("--ranks", default="2048,4096,8192,16384")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()
    if args.big:
        big(args.npusim, args.dir, not args.no_check)
        return
    with tempfile.TemporaryDirectory() as tmp:
        table("trace reader: ops in one program", "ops", [int(x) for x in args.ops.split(",")],
              reader_trace, lambda d: [], args.npusim, tmp)
        table("Chrome writer: ranks", "ranks", [int(x) for x in args.ranks.split(",")],
              writer_trace, lambda d: ["--chrome-trace", os.path.join(d, "c.json")],
              args.npusim, tmp)


if __name__ == "__main__":
    main()
