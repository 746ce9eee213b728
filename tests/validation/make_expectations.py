#!/usr/bin/env python3
"""make_expectations.py - writes configs/expectations/published.json, the
published measurements npusim validates against as an expectations file that
`npusim check` runs (docs/check.md): the project's own validation through the
mechanism its users run on theirs.

Rows, each the same run its validation script makes, with that table's
per-row bound as the tolerance:
  atscale_h100.csv     step time of GPT-3 175B, Llama 3.1 70B/405B, Nemotron-4
                       340B on 256-2304 H100 (validate_train.py; issue #13's
                       worst-row bound, 15%)
  moe_train_h100.csv   model TFLOP/s per GPU of Mixtral and Qwen2 MoE on 64-1024
                       H100 (validate_train.py; issue #33's worst-row target, 20%)
  allreduce_8x_a100.csv nccl-tests bus bandwidth on 8 A100, 64 MiB and up
                       (validate_coll.py's table; 10% per size, the bound issue
                       #31 sets for NVLS sizes from 1 MiB)
Usage: tests/validation/make_expectations.py [--check]  (--check: exit 1 if the
shipped file differs from what the tables give, as ctest runs it)."""
import argparse
import csv
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "validation")
OUT = os.path.join(ROOT, "configs", "expectations", "published.json")


def read_csv(name):
    with open(os.path.join(DATA, name)) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def train_args(workload, sets):
    args = ["train", "--system", "configs/systems/h100-dgx.json",
            "--workload", "configs/workloads/" + workload, "--fidelity", "analytic"]
    for s in sets:
        args += ["--set", s]
    return args


def atscale():
    rows = []
    for r in read_csv("atscale_h100.csv"):
        sets = ["parallel.%s=%s" % (k, r[k]) for k in ("dp", "tp", "pp", "vpp", "cp")]
        sets += ["model.kv_heads=" + r["kv_heads"], "training.micro_batch=" + r["micro_batch"],
                 "training.global_batch=" + r["global_batch"], "training.precision=bf16",
                 "training.flash_attention=true", "parallel.first_stage_layers=0",
                 "parallel.last_stage_layers=0", "parallel.zero=1"]
        if r["workload"] == "gpt-175b.json":
            sets.append("parallel.recompute=none")
        rows.append({"name": "%s on %s H100: step time" % (r["workload"][:-5], r["gpus"]),
                     "args": train_args(r["workload"], sets), "figure": "step_time_s",
                     "expected": float(r["step_time_s"]), "tolerance_pct": 15,
                     "source": "NVIDIA/dgxc-benchmarking v25.02 (atscale_h100.csv)"})
    return rows


def moe():
    rows = []
    for r in read_csv("moe_train_h100.csv"):
        sets = ["parallel.%s=%s" % (k, r[k]) for k in ("dp", "tp", "pp", "vpp", "ep", "etp")]
        sets.append("training.global_batch=" + r["global_batch"])
        rows.append({"name": "%s %s on %s H100: model TFLOP/s per GPU" % (r["id"], r["workload"][:-5],
                                                                         r["gpus"]),
                     "args": train_args(r["workload"], sets), "figure": "model_tflops_per_npu",
                     "expected": float(r["measured_tflops"]), "tolerance_pct": 20,
                     "source": "moe_train_h100.csv row %s" % r["id"]})
    return rows


def allreduce():
    rows = []
    for r in read_csv("allreduce_8x_a100.csv"):
        size = int(r["bytes"])
        if size < 64 << 20:
            continue
        rows.append({"name": "allreduce %d MiB on 8 A100: busbw" % (size >> 20),
                     "args": ["coll", "--system", "configs/systems/a100-dgx.json", "--op",
                              "allreduce", "--ranks", "8", "--sizes", str(size)],
                     "figure": "[0].busbw_GBps", "expected": float(r["busbw_GBps"]),
                     "tolerance_pct": 10,
                     "source": "nccl-tests, Azure/AI-benchmarking-guide (allreduce_8x_a100.csv)"})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    text = json.dumps({"expectations": atscale() + moe() + allreduce()}, indent=1) + "\n"
    if args.check:
        with open(OUT) as f:
            if f.read() != text:
                sys.exit("make_expectations: %s differs from the validation tables; run "
                         "tests/validation/make_expectations.py" % OUT)
        print("make_expectations: %s matches the validation tables" % OUT)
        return
    with open(OUT, "w") as f:
        f.write(text)
    print("make_expectations: wrote %s" % OUT)


if __name__ == "__main__":
    main()
