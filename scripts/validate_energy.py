#!/usr/bin/env python3
"""Validates npusim's energy model against published measurements
(tests/data/validation/energy.csv).

Each row runs `npusim serve` (or `npusim train` for rows whose sets start with
"train:") on a shipped system and the validation workload tests/data/
validation/serve/<model>.json with the row's --set overrides, and compares one
field of the JSON "energy" object (avg_power_W_per_npu, J_per_output_token, or
train's step_J / tokens_per_J) with the measured value. Every row is printed
with its error and its role: "fit" rows had a power parameter fitted to them,
"held-out" rows never did; the summary gives both sets apart. Rows marked
bounded=yes must be within 15%; rows marked no are printed with the reason
after "not bounded: " in their source.

usage: validate_energy.py NPUSIM [--data DIR]
Exit status 0 when every bounded row is within the bound, 1 otherwise.
Python standard library only."""
import argparse
import csv
import json
import os
import subprocess
import sys

ROW_BOUND = 0.15


def read_rows(path):
    with open(path, newline="") as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    return list(csv.DictReader(lines))


def run(npusim, repo, data, row):
    sets = row["sets"]
    system = os.path.join(repo, "configs/systems", row["system"] + ".json")
    if sets.startswith("train:"):
        args = [npusim, "train", "--system", system, "--workload",
                os.path.join(repo, "configs/workloads", row["model"] + ".json"), "--format", "json"]
        prefix, sets = "workload.training.", sets[len("train:"):]
    else:
        args = [npusim, "serve", "--system", system, "--workload",
                os.path.join(data, "serve", row["model"] + ".json"), "--format", "json"]
        prefix = "workload.serving."
    for s in filter(None, sets.split(";")):
        args += ["--set", s if s.startswith("system.") else prefix + s]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("validate_energy: %s: npusim failed: %s" % (row["id"], out.stderr.strip()))
    return json.loads(out.stdout)


def summary(name, errs):
    if not errs:
        return "%s: no rows" % name
    return "%s: %d rows, MAPE %.1f%%, max %.1f%%" % (
        name, len(errs), 100 * sum(errs) / len(errs), 100 * max(errs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("npusim")
    ap.add_argument("--data", default=None)
    a = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    data = a.data or os.path.join(repo, "tests/data/validation")
    ok = True
    errs = {"fit": [], "held-out": []}
    print("%-40s %10s %10s %8s  %-8s %s" % ("row (energy.csv)", "measured", "npusim", "error",
                                            "role", "bounded"))
    for row in read_rows(os.path.join(data, "energy.csv")):
        j = run(a.npusim, repo, data, row)
        if not j["energy"]["modelled"]:
            sys.exit("validate_energy: %s: %s has no power model" % (row["id"], row["system"]))
        pred = j["energy"][row["metric"]]
        meas = float(row["measured"])
        err = (pred - meas) / meas
        note = ""
        if row["bounded"] == "yes":
            errs[row["role"]].append(abs(err))
            if abs(err) > ROW_BOUND:
                ok = False
                note = "  OVER the %.0f%% bound" % (ROW_BOUND * 100)
        else:
            note = "  not bounded: " + row["source"].split("not bounded: ")[-1][:100]
        print("%-40s %10.4g %10.4g %+7.1f%%  %-8s %s%s" % (row["id"], meas, pred, err * 100,
                                                          row["role"], row["bounded"], note))
    print(summary("bounded, fitted", errs["fit"]))
    print(summary("bounded, held out", errs["held-out"]))
    if not ok:
        print("validate_energy: a bounded row is over the %.0f%% bound" % (ROW_BOUND * 100))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
