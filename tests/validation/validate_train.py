#!/usr/bin/env python3
"""validate_train.py - compares `npusim train` with published training runs.

  tests/data/validation/korthikanti2022_a100.csv  GPT 22B-1T on Selene (a100-dgx):
      iteration time with full recompute and with selective recompute + sequence
      parallelism, and the per-GPU memory of the paper's Fig. 1
  tests/data/validation/mindspeed_910b.csv        LLaMA/Qwen on Ascend 910B
      (ascend-910b): tokens/s per NPU
  tests/data/validation/atscale_h100.csv          GPT-3 175B, Llama 3.1 70B and
      405B, Nemotron-4 340B on 256-2304 H100 (h100-dgx), NVIDIA's DGX Cloud
      benchmarks: step time, and its drift with scale
  tests/data/validation/moe_train_h100.csv        Mixtral 8x7B and 8x22B,
      Qwen2-57B-A14B on 64-1024 H100 (h100-dgx), with and without MoE parallel
      folding: model TFLOP/s per GPU (issue #33)

Each row runs the shipped workload configs/workloads/<model>.json (gpt-<size>
for the paper, the model name for MindSpeed). Prints every row's measured and
predicted value and its error, then the mean absolute percentage error (MAPE)
and the worst row per table.
Usage: tests/validation/validate_train.py [--npusim PATH] [--fidelity analytic|flow]
                                 [--check]
With --check, exits 1 unless the iteration-time MAPE is <= 5% (Korthikanti)
and the tokens/s MAPE is <= 10% (MindSpeed), the bounds of issue #6, and the
at-scale table holds issue #13's bounds over all its rows: MAPE <= 8%, max <= 15%,
and per model the error at the largest scale within 3 points of the smallest; the
MoE table within issue #33's target: MAPE <= 10%, no row beyond 20%.
No end-to-end row is fitted: the GPU chips are calibrated on kernels only (issue
#27: H100 on ops_h100_calib.csv, A100 on ops_a100.csv); the 910B keeps an assumed
chip.sustained_clock_fraction [A].
Python standard library only."""
import argparse
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "validation")
SYSTEMS = os.path.join(ROOT, "configs", "systems")
WORKLOADS = os.path.join(ROOT, "configs", "workloads")
BOUND_KORTHIKANTI_PCT = 5.0
BOUND_MINDSPEED_PCT = 10.0
# At scale: issue #13's bounds (MAPE, max) over every row (none is fitted), and
# the drift with scale.
BOUND_ATSCALE_PCT = (8.0, 15.0)
BOUND_DRIFT_POINTS = 3.0
# MoE training: issue #33's target (MAPE, max), none of the rows fitted; --check
# holds the table to it (met since the token permutation was modelled: MAPE
# 10.24% -> 9.11%, max 18.8% -> 14.6%; 9.29%, 15.9% with the parameter gather
# of overlap_param_gather no longer held back).
BOUND_MOE_PCT = (10.0, 20.0)


def read_csv(name):
    with open(os.path.join(DATA, name)) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def paper_memory_gib(name):
    """The Fig. 1 numbers in the csv's comment lines: model -> (params+optimizer,
    activations without recompute, activations with sp+selective)."""
    out = {}
    with open(os.path.join(DATA, name)) as f:
        for line in f:
            if line.startswith("# 22B:"):
                for part in line[2:].split(";"):
                    model, nums = part.split(":")
                    out[model.strip()] = [float(x) for x in nums.split("/")]
    return out


def train(args, system, workload, sets=(), gpus=None, name=None):
    """npusim train's JSON; with gpus, the plan must give that many NPUs (the row's)."""
    cmd = [args.npusim, "train", "--system", os.path.join(SYSTEMS, system),
           "--workload", os.path.join(WORKLOADS, workload), "--fidelity", args.fidelity,
           "--format", "json"]
    for s in list(sets) + args.set:
        cmd += ["--set", s]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("validate_train: %s failed: %s" % (" ".join(cmd), run.stderr.strip()))
    r = json.loads(run.stdout)
    if gpus is not None and r["npus"] != int(gpus):
        sys.exit("validate_train: %s: the plan gives %d NPUs, the row %s"
                 % (name or workload, r["npus"], gpus))
    return r


def pct(pred, meas):
    return 100.0 * (pred - meas) / meas


def mape_max(errors):
    """The mean absolute percentage error and the worst row's."""
    return sum(abs(e) for e in errors) / len(errors), max(abs(e) for e in errors)


def summary(label, errors, bound):
    mape, worst = mape_max(errors)
    verdict = "ok" if mape <= bound else "EXCEEDS the bound"
    print("%s: MAPE %.2f%%, max %.2f%% over %d rows (bound %.0f%%: %s)"
          % (label, mape, worst, len(errors), bound, verdict))
    return mape <= bound


def korthikanti(args):
    print("Korthikanti et al. 2022, Table 5, on a100-dgx: iteration time (s)")
    print("%-6s %-13s %9s %9s %8s %10s %10s" %
          ("model", "recompute", "measured", "npusim", "error", "mfu_paper", "mfu_npusim"))
    errors = []
    memory = paper_memory_gib("korthikanti2022_a100.csv")
    mem_rows = []
    for row in read_csv("korthikanti2022_a100.csv"):
        wl = "gpt-%s.json" % row["model"].lower()
        modes = [("selective+sp", "iter_s_selective_sp", ()),
                 ("full", "iter_s_full",
                  ("parallel.recompute=full", "parallel.sequence_parallel=false"))]
        for label, col, sets in modes:
            r = train(args, "a100-dgx.json", wl, sets)
            meas = float(row[col])
            err = pct(r["step_time_s"], meas)
            errors.append(err)
            mfu = row["mfu"] if label == "selective+sp" else ""
            print("%-6s %-13s %9.2f %9.2f %+7.1f%% %10s %10.3f" %
                  (row["model"], label, meas, r["step_time_s"], err, mfu, r["mfu"]))
            if label == "selective+sp":
                m = r["memory"]
                mem_rows.append((row["model"], memory.get(row["model"]),
                                 m["weights_GiB"] + m["gradients_GiB"] + m["optimizer_GiB"],
                                 m["activations_GiB"]))
    ok = summary("Korthikanti iteration time", errors, BOUND_KORTHIKANTI_PCT)
    print("\nper-GPU memory (GiB), paper Fig. 1 against npusim's fullest stage (selective+sp)")
    print("%-6s %14s %14s %14s %14s" %
          ("model", "params+opt", "npusim", "act sp+sel", "npusim"))
    for model, paper, states, act in mem_rows:
        if paper:
            print("%-6s %14.2f %14.2f %14.2f %14.2f" % (model, paper[0], states, paper[2], act))
    return ok


def mindspeed(args):
    print("\nMindSpeed-LLM on ascend-910b: tokens/s per NPU")
    print("%-11s %9s %9s %8s %7s" % ("model", "measured", "npusim", "error", "mfu"))
    errors = []
    for row in read_csv("mindspeed_910b.csv"):
        r = train(args, "ascend-910b.json", row["model"] + ".json")
        meas = float(row["tokens_per_s_per_npu"])
        err = pct(r["tokens_per_s_per_npu"], meas)
        errors.append(err)
        print("%-11s %9.0f %9.0f %+7.1f%% %7.3f" %
              (row["model"], meas, r["tokens_per_s_per_npu"], err, r["mfu"]))
    return summary("MindSpeed tokens/s/NPU", errors, BOUND_MINDSPEED_PCT)


def atscale(args):
    print("\nAt scale on h100-dgx (dgxc-benchmarking v25.02, BF16): step time (s)")
    print("%-20s %5s %9s %9s %8s %7s" % ("workload", "gpus", "measured", "npusim", "error", "mfu"))
    errors, by_model = [], {}
    for row in read_csv("atscale_h100.csv"):
        sets = ["parallel.%s=%s" % (k, row[k]) for k in ("dp", "tp", "pp", "vpp", "cp")]
        sets += ["model.kv_heads=" + row["kv_heads"],
                 "training.micro_batch=" + row["micro_batch"],
                 "training.global_batch=" + row["global_batch"],
                 "training.precision=bf16", "training.flash_attention=true",
                 "parallel.first_stage_layers=0", "parallel.last_stage_layers=0",
                 "parallel.zero=1"]
        if row["workload"] == "gpt-175b.json":  # Korthikanti's file: A100 recompute
            sets.append("parallel.recompute=none")
        r = train(args, "h100-dgx.json", row["workload"], sets, row["gpus"])
        meas = float(row["step_time_s"])
        err = pct(r["step_time_s"], meas)
        errors.append(err)
        by_model.setdefault(row["workload"], []).append((int(row["gpus"]), err))
        print("%-20s %5s %9.3f %9.3f %+7.1f%% %7.3f" %
              (row["workload"], row["gpus"], meas, r["step_time_s"], err, r["mfu"]))
    mape, worst = mape_max(errors)
    drift = max(abs(max(v)[1] - min(v)[1]) for v in by_model.values())
    ok = mape <= BOUND_ATSCALE_PCT[0] and worst <= BOUND_ATSCALE_PCT[1] and drift <= BOUND_DRIFT_POINTS
    print("At-scale step time, %d rows, none fitted: MAPE %.2f%%, max %.2f%% (bound %.0f%%/%.0f%%: "
          "%s); drift from the smallest to the largest scale at most %.1f points (bound %.0f)"
          % (len(errors), mape, worst, BOUND_ATSCALE_PCT[0], BOUND_ATSCALE_PCT[1],
             "ok" if ok else "EXCEEDS the bound", drift, BOUND_DRIFT_POINTS))
    return ok


def moe(args):
    print("\nMoE training on h100-dgx (BF16): model TFLOP/s per GPU")
    print("%-4s %-20s %5s %4s %4s %9s %9s %8s" %
          ("id", "workload", "gpus", "ep", "etp", "measured", "npusim", "error"))
    errors = []
    for row in read_csv("moe_train_h100.csv"):
        sets = ["parallel.%s=%s" % (k, row[k]) for k in ("dp", "tp", "pp", "vpp", "ep", "etp")]
        sets.append("training.global_batch=" + row["global_batch"])
        r = train(args, "h100-dgx.json", row["workload"], sets, row["gpus"], row["id"])
        meas = float(row["measured_tflops"])
        err = pct(r["model_tflops_per_npu"], meas)
        errors.append(err)
        print("%-4s %-20s %5s %4s %4s %9.1f %9.1f %+7.1f%%" %
              (row["id"], row["workload"], row["gpus"], row["ep"], row["etp"], meas,
               r["model_tflops_per_npu"], err))
    mape, worst = mape_max(errors)
    met = mape <= BOUND_MOE_PCT[0] and worst <= BOUND_MOE_PCT[1]
    print("MoE TFLOP/s per GPU, %d rows, none fitted: MAPE %.2f%%, max %.2f%% (issue #33's target "
          "%.0f%%/%.0f%%: %s)" % (len(errors), mape, worst, BOUND_MOE_PCT[0], BOUND_MOE_PCT[1],
                                  "met" if met else "NOT MET"))
    return met


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("--fidelity", default="analytic", choices=["analytic", "flow"])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="override a config key in every run (to see what a parameter does to the fit)")
    ap.add_argument("--only", choices=["korthikanti", "mindspeed", "atscale", "moe"],
                    help="run one table")
    args = ap.parse_args()
    ok = True
    if args.only in (None, "korthikanti"):
        ok = korthikanti(args) and ok
    if args.only in (None, "mindspeed"):
        ok = mindspeed(args) and ok
    if args.only in (None, "atscale"):
        ok = atscale(args) and ok
    if args.only in (None, "moe"):
        ok = moe(args) and ok
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
