#!/usr/bin/env python3
"""validate_train_gpu.py - compares `npusim train` on one device with training
micro-batches measured for this project (scripts/measure/measure_train_step.py):
tests/data/validation/h200/train_steps.csv on an H200 (configs/systems/h200-dgx.json)
and h100/train_steps.csv on an H100 (h100-dgx.json). Nothing is fitted to them: the
H100's chip is calibrated on kernels alone, the H200's is the H100's with its HBM.

Each row is one forward and backward of a LLaMA-shaped model in eager PyTorch
(learned positions, unfused swiglu and cross-entropy, SDPA attention, bf16, no
recompute, no optimizer). The same model runs in npusim train on the
card's system with dp = tp = pp = 1, one micro-batch per step,
model.position_embedding "learned" and training.kernels swiglu and cross_entropy
"unfused"; its prediction is the step's compute (the breakdown's compute: every
forward and backward op, the optimizer apart). Every row is printed with its
error and must be within ROW_BOUND. The measured peak memory is printed beside
npusim's weights, gradients, activations and temporary buffers for reference
(eager PyTorch keeps other tensors than Megatron, which npusim's memory models;
not bounded).

usage: validate_train_gpu.py NPUSIM
Exit status 0 when every row is within the bound, 1 otherwise. Standard library only."""
import csv
import json
import os
import subprocess
import sys
import tempfile

ROW_BOUND = 0.10
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "validation")
TABLES = (("h200/train_steps.csv", "h200-dgx.json"), ("h100/train_steps.csv", "h100-dgx.json"))


def workload(r):
    n = lambda k: int(r[k])
    mbs = n("micro_batch")
    return {"name": r["model"],
            "description": "validate_train_gpu.py: one micro-batch of " + r["model"],
            "model": {"name": r["model"], "layers": n("layers"), "hidden": n("hidden"),
                      "heads": n("heads"), "kv_heads": n("kv_heads"), "ffn_hidden": n("ffn"),
                      "vocab": n("vocab"), "seq_len": n("seq"), "activation": "swiglu",
                      "norm": "rmsnorm", "position_embedding": "learned"},
            "parallel": {"dp": 1, "tp": 1, "pp": 1},
            "training": {"micro_batch": mbs, "global_batch": mbs, "precision": "bf16",
                         "kernels": {"swiglu": "unfused", "cross_entropy": "unfused"}}}


def predict(npusim, system, r):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(workload(r), f)
    try:
        out = subprocess.run([npusim, "train", "--system", system, "--workload", f.name,
                              "--format", "json"], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        sys.exit("validate_train_gpu: %s mbs %s: npusim train failed: %s"
                 % (r["model"], r["micro_batch"], out.stderr.strip()))
    return json.loads(out.stdout)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[-2])
    ok = True
    for table, system in TABLES:
        ok &= check(sys.argv[1], os.path.join(DATA, table),
                    os.path.join(ROOT, "configs", "systems", system))
    return 0 if ok else 1


def check(npusim, path, system):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    if not rows:
        sys.exit("validate_train_gpu: %s: expected measured rows, found none" % path)
    ok, errors = True, []
    print("%s on %s" % (os.path.relpath(path, ROOT), os.path.basename(system)))
    print("%-14s %4s %11s %11s %8s   %s" % ("model", "mbs", "measured ms", "npusim ms", "error",
                                          "memory GiB: measured peak / npusim w+g+act+tmp"))
    for r in rows:
        j = predict(npusim, system, r)
        pred, meas = j["breakdown"]["compute"], float(r["fwd_bwd_s"])
        m = j["memory"]
        mem = m["weights_GiB"] + m["gradients_GiB"] + m["activations_GiB"] + m["temporary_GiB"]
        err = pred / meas - 1
        errors.append(abs(err))
        over = abs(err) > ROW_BOUND
        ok &= not over
        print("%-14s %4s %11.1f %11.1f %+7.1f%%   %.2f / %.2f%s" % (
            r["model"], r["micro_batch"], meas * 1e3, pred * 1e3, err * 100, float(r["peak_GiB"]),
            mem, "  OVER the %.0f%% bound" % (ROW_BOUND * 100) if over else ""))
    print("%d rows, mean |error| %.1f%%, max %.1f%% (bound %.0f%% per row)\n"
          % (len(errors), 100 * sum(errors) / len(errors), 100 * max(errors), ROW_BOUND * 100))
    return ok


if __name__ == "__main__":
    sys.exit(main())
