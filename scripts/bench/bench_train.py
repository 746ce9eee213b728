#!/usr/bin/env python3
"""bench_train.py - wall time and peak memory of `npusim train` at scale.

GPT-3 175B (configs/workloads/gpt3-175b-910b.json: TP8 PP8, global batch 1536)
on ascend-910b with data parallelism grown from 1 to 128 (64 to 8192 NPUs), one
process per run. Prints a table with the targets of issue #6 at 1024 NPUs:
<= 2 s analytic and <= 60 s flow on one core. Flow runs stop at --flow-max NPUs
or after --timeout seconds (reported as such). --oversubscription 1,2,4 runs
each size on spines that oversubscribed (the what-if of issue #13: analytic
sees it since it shares links between concurrent transfers). Past DP 1536 (or
where DP does not divide 1536) the global batch is the next multiple of DP (one
micro-batch per replica at 131,072 NPUs: DP 2048, batch 2048). A benchmark: it
reports, it does not fail.
Usage: scripts/bench/bench_train.py [--npusim PATH] [--npus 64,128,...] [--flow-max 1024]
                              [--oversubscription 1,2,4] [--fidelity analytic,flow]
                              [--timeout 600]"""
import argparse
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOAD = os.path.join(ROOT, "configs", "workloads", "gpt3-175b-910b.json")
SYSTEM = os.path.join(ROOT, "configs", "systems", "ascend-910b.json")
TARGETS = {("analytic", 1024): "<= 2 s", ("flow", 1024): "<= 60 s"}


def run(npusim, npus, fidelity, over, timeout):
    """(wall s, peak MiB, step s, mfu) of one run, or None past the timeout."""
    dp = npus // 64
    batch = -(-1536 // dp) * dp
    cmd = [npusim, "train", "--system", SYSTEM, "--workload", WORKLOAD, "--fidelity", fidelity,
           "--format", "csv", "--set", f"parallel.dp={dp}", "--set", f"training.global_batch={batch}",
           "--set", f"cluster.scale_out.oversubscription={over}"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    while True:  # the output is two short lines: no pipe fills while we poll
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - start > timeout:
            proc.kill()
            os.wait4(proc.pid, 0)
            return None
        time.sleep(0.05)
    wall = time.perf_counter() - start
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"npusim failed: {err.strip()}")
    row = out.splitlines()[1].split(",")
    return wall, usage.ru_maxrss / 1024, float(row[3]), float(row[8])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.environ.get("NPUSIM", os.path.join(ROOT, "build", "npusim")))
    ap.add_argument("--npus", default="64,128,256,512,1024,2048,4096,8192")
    ap.add_argument("--flow-max", type=int, default=1024)
    ap.add_argument("--oversubscription", default="1")
    ap.add_argument("--fidelity", default="analytic,flow")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    print("npusim train: GPT-3 175B, TP8 PP8 DP=N/64, global batch 1536, ascend-910b")
    print(f"{'npus':>6} {'over':>5} {'fidelity':>9} {'wall_s':>8} {'peak_MiB':>9} {'step_s':>9} "
          f"{'mfu':>6}  target")
    for npus in [int(n) for n in args.npus.split(",")]:
        for over in args.oversubscription.split(","):
            for fidelity in args.fidelity.split(","):
                if fidelity == "flow" and npus > args.flow_max:
                    continue
                r = run(args.npusim, npus, fidelity, over, args.timeout)
                target = TARGETS.get((fidelity, npus), "")
                if r is None:
                    print(f"{npus:>6} {over:>5} {fidelity:>9} {'>' + str(int(args.timeout)):>8} "
                          f"{'':>9} {'':>9} {'':>6}  {target}", flush=True)
                    continue
                wall, rss, step, mfu = r
                print(f"{npus:>6} {over:>5} {fidelity:>9} {wall:>8.2f} {rss:>9.1f} {step:>9.3f} "
                      f"{mfu:>6.3f}  {target}", flush=True)


if __name__ == "__main__":
    main()
