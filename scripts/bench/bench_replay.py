#!/usr/bin/env python3
"""bench_replay.py - wall time and peak memory of `npusim replay` at scale.

Synthetic traces (scripts/tools/gen_trace.py): N ranks x 32 layers of a 4096^3 bf16
matmul followed by a 32 MiB allreduce over groups of 8 ranks, replayed on
ascend-910b in both fidelities, one process per run. Prints a table with the
targets of issue #5: 1024 x 32 in <= 10 s flow and <= 1 s analytic, <= 1 GiB at
4096 ranks.
--peer-workload: the workload of issue #13's comparison with ASTRA-sim 2.x, every
rank running L layers of 500 us compute -> 64 MiB allreduce over all ranks
(--algo forces the algorithm between servers, e.g. ring; default: HCCL's choice;
--flat puts every server under one leaf switch, as ASTRA-sim's 4096-rank run;
--system another shipped system, e.g. h100-dgx, where NCCL runs flat channel rings).
A benchmark: it reports, it does not fail.
Usage: scripts/bench/bench_replay.py [--npusim PATH] [--ranks 64,256,...] [--layers 32]
                               [--peer-workload [--algo A] [--flat]] [--system NAME]"""
import argparse
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGETS = {("flow", 1024): "<= 10 s", ("analytic", 1024): "<= 1 s", ("flow", 4096): "<= 1 GiB",
           ("analytic", 4096): "<= 1 GiB"}
# Issue #13: ASTRA-sim 2.x's congestion-aware backend did 4 layers at 1024 ranks in
# 13 s on this machine; flow must be >= 10x faster, and hold <= 1 GiB at 4096.
# Issue #31 asks the same of every algorithm (the flat ring too), 32 layers in
# <= 20 s, still <= 1 GiB at 4096 ranks.
PEER_TARGETS = {("flow", 1024): "<= 0.325 s per layer", ("flow", 4096): "<= 1 GiB"}


def run(npusim, system, trace, fidelity, sets=()):
    cmd = [npusim, "replay", "--system", os.path.join(ROOT, f"configs/systems/{system}.json"),
           "--trace", trace, "--fidelity", fidelity, "--format", "csv"]
    for s in sets:
        cmd += ["--set", s]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"npusim failed: {err.decode().strip()}")
    step = float(out.decode().splitlines()[1].split(",")[1])
    return wall, usage.ru_maxrss / 1024, step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.environ.get("NPUSIM", os.path.join(ROOT, "build", "npusim")))
    ap.add_argument("--ranks", default="64,256,1024,4096")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--peer-workload", action="store_true")
    ap.add_argument("--algo")
    ap.add_argument("--flat", action="store_true")
    ap.add_argument("--system", default="ascend-910b")
    args = ap.parse_args()
    if args.peer_workload:
        print(f"replay of N ranks x {args.layers} layers (500 us compute -> 64 MiB allreduce over "
              f"all ranks, {args.algo or 'auto'}), {args.system}{', one leaf' if args.flat else ''}")
    else:
        print(f"replay of N ranks x {args.layers} layers (matmul -> allreduce over 8), {args.system}")
    print(f"{'ranks':>6} {'fidelity':>9} {'wall_s':>8} {'peak_MiB':>9} {'step_ms':>9}  target")
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in [int(r) for r in args.ranks.split(",")]:
            trace = os.path.join(tmp, f"syn{ranks}.json.gz")
            gen = ["python3", os.path.join(ROOT, "scripts", "tools", "gen_trace.py"), "--ranks", str(ranks),
                   "--layers", str(args.layers), "--out", trace]
            if args.peer_workload:
                gen += ["--group", str(ranks), "--compute-us", "500", "--bytes", str(64 << 20)]
                gen += ["--algo", args.algo] if args.algo else []
            subprocess.run(gen, check=True)
            for fidelity in ("flow", "analytic"):
                sets = [f"cluster.scale_out.npus_per_leaf={ranks}"] if args.flat else []
                wall, rss, step = run(args.npusim, args.system, trace, fidelity, sets)
                targets = PEER_TARGETS if args.peer_workload else TARGETS
                print(f"{ranks:>6} {fidelity:>9} {wall:>8.2f} {rss:>9.1f} {step * 1e3:>9.3f}  "
                      f"{targets.get((fidelity, ranks), '')}")


if __name__ == "__main__":
    main()
