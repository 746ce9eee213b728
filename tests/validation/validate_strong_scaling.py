#!/usr/bin/env python3
"""validate_strong_scaling.py - npusim's GPT-3 175B step time on DGX H100 against
MLPerf Training v3.1's strong scaling: the same global batch on 512 and 4,096
GPUs, and on 768 and 6,144 (tests/data/validation/strong_scaling_h100.csv,
sources and plan in its header).

  validate_strong_scaling.py [--npusim PATH] [-j N] [--batch B] [--check PCT]

Prints every row's measured and predicted step time and error, then per global
batch the measured and predicted scaling efficiency (time(small) x small /
(time(large) x large)) and how the error moves from the small run to the large
one: a model missing something that grows with the job's size shows there. Each
pair is then split as step = m x t + B (m micro-batches per pipeline, the same
batch on more GPUs gives fewer): the time t of a micro-batch and the part B of a
step that does not shrink with m (bubble, exposed gradient and parameter
traffic, optimizer, fixed costs), measured and predicted. Without --batch it also
prints, not bounded, Megatron-Turing NLG 530B on 2,240-3,360 A100s
(tests/data/validation/strong_scaling_a100_mtnlg.csv). With --check, exits 1
when a row's |error| exceeds PCT. Each run is an analytic
`npusim train` (about 45 s at 512-768 GPUs here: 128 micro-batches of a 96-layer
model on 12 virtual stages); -j runs N at once, --batch B only the rows of
global batch B (ctest runs the 2048 pair).
Python standard library only."""
import argparse
import concurrent.futures
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "validation", "strong_scaling_h100.csv")
MTNLG = os.path.join(ROOT, "tests", "data", "validation", "strong_scaling_a100_mtnlg.csv")
MTNLG_RUN = ("a100-dgx", "gpt-530b", ["parallel.vpp=1", "parallel.recompute=full",
                                      "parallel.sequence_parallel=false", "parallel.zero=1"])
PLAN = ["parallel.tp=4", "parallel.pp=8", "parallel.vpp=12", "parallel.zero=1",
        "training.micro_batch=1", "training.precision=fp8", "training.overlap_tp_comm=true",
        "training.overlap_p2p_comm=true", "training.overlap_param_gather=true",
        "training.grad_reduce_in_fp32=false", "training.grad_bucket_MiB=100",
        "system.collectives.level0_algorithm=ring"]


def predict(npusim, row, run=("h100-dgx", "gpt-175b", PLAN)):
    system, workload, plan = run
    cmd = [npusim, "train", "--system", os.path.join(ROOT, f"configs/systems/{system}.json"),
           "--workload", os.path.join(ROOT, f"configs/workloads/{workload}.json"),
           "--fidelity", "analytic", "--format", "json"]
    for s in plan + ["parallel.dp=" + row["dp"], "training.global_batch=" + row["global_batch"]]:
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit("validate_strong_scaling: %s GPUs: %s" % (row["gpus"], out.stderr.strip()))
    return float(json.loads(out.stdout)["step_time_s"])


def split(rows, lo, hi, meas, pred):
    """Prints the pair's step = m x t + B, measured and predicted (micro-batch 1)."""
    m = [int(rows[k]["global_batch"]) // int(rows[k]["dp"]) for k in (lo, hi)]

    def fit(t):
        per_mb = (t[lo] - t[hi]) / (m[0] - m[1])
        return per_mb, t[lo] - m[0] * per_mb
    (tm, bm), (tp, bp) = fit(meas), fit(pred)
    print("%33s per micro-batch t %.2f ms measured, %.2f npusim (%+.1f%%); per step B %.0f ms "
          "measured, %.0f npusim (%+.0f ms)" % (
              "m = %d -> %d:" % (m[0], m[1]), 1e3 * tm, 1e3 * tp, 100 * (tp - tm) / tm,
              1e3 * bm, 1e3 * bp, 1e3 * (bp - bm)))


def print_mtnlg(npusim):
    with open(MTNLG) as f:
        rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    pred = [predict(npusim, r, MTNLG_RUN) for r in rows]
    meas = [float(r["step_time_s"]) for r in rows]
    print("\nMegatron-Turing NLG 530B, global batch 1920, A100 (not bounded: %s)" %
          os.path.relpath(MTNLG, ROOT))
    print("%6s %12s %12s %12s" % ("gpus", "measured_s", "npusim_s", "error"))
    for r, m, p in zip(rows, meas, pred):
        print("%6s %12.2f %12.2f %+11.1f%%" % (r["gpus"], m, p, 100 * (p - m) / m))
    lo, hi = 0, len(rows) - 1
    e = [t[lo] * int(rows[lo]["gpus"]) / (t[hi] * int(rows[hi]["gpus"])) for t in (meas, pred)]
    print("efficiency %s -> %s GPUs: measured %.1f%%, npusim %.1f%%" % (
        rows[lo]["gpus"], rows[hi]["gpus"], 100 * e[0], 100 * e[1]))
    split(rows, lo, hi, meas, pred)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--batch", help="only the rows of this global batch")
    ap.add_argument("--check", type=float)
    args = ap.parse_args()
    with open(DATA) as f:
        rows = [r for r in csv.DictReader(l for l in f if not l.startswith("#"))
                if args.batch is None or r["global_batch"] == args.batch]
    if not rows:
        sys.exit("validate_strong_scaling: no row of global batch %s" % args.batch)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.j)) as ex:
        pred = list(ex.map(lambda r: predict(args.npusim, r), rows))
    meas = [float(r["step_time_s"]) for r in rows]
    errs = [100 * (p - m) / m for p, m in zip(pred, meas)]
    print("%6s %6s %12s %12s %12s" % ("gpus", "batch", "measured_s", "npusim_s", "error"))
    for r, m, p, e in zip(rows, meas, pred, errs):
        print("%6s %6s %12.4f %12.4f %+11.1f%%" % (r["gpus"], r["global_batch"], m, p, e))
    print("\nglobal batch  GPUs         efficiency measured  npusim   error small -> large")
    for b in sorted({r["global_batch"] for r in rows}, key=int):
        pair = sorted((k for k, r in enumerate(rows) if r["global_batch"] == b),
                      key=lambda k: int(rows[k]["gpus"]))
        lo, hi = pair[0], pair[-1]

        def eff(t):   # time x GPUs of the small run over that of the large one
            return t[lo] * int(rows[lo]["gpus"]) / (t[hi] * int(rows[hi]["gpus"]))
        print("%12s  %5s -> %-5s %17.1f%% %7.1f%%   %+.1f%% -> %+.1f%%" % (
            b, rows[lo]["gpus"], rows[hi]["gpus"], 100 * eff(meas), 100 * eff(pred),
            errs[lo], errs[hi]))
        split(rows, lo, hi, meas, pred)
    mape = sum(abs(e) for e in errs) / len(errs)
    worst = max(abs(e) for e in errs)
    print("\nMAPE %.1f%%, max %.1f%% (%d rows)" % (mape, worst, len(errs)))
    if args.batch is None:
        print_mtnlg(args.npusim)
    if args.check is not None:
        ok = worst <= args.check
        print("strong scaling: every row %s %.0f%%" % ("within" if ok else "NOT within", args.check))
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
