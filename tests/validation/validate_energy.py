#!/usr/bin/env python3
"""Validates npusim's energy model against published measurements
(tests/data/validation/energy.csv).

Each row runs `npusim serve` (or `npusim train` for rows whose sets start with
"train:") on a shipped system and the validation workload tests/data/
validation/serve/<model>.json with the row's --set overrides, and compares one
field of the JSON "energy" object (avg_power_W_per_npu, J_per_output_token, or
train's step_J / tokens_per_J) with the measured value. Every row is printed
with its error and its role: "fit" rows had a power parameter fitted to them,
"held-out" rows never did; the summary gives both sets apart. A row must be
within 15% unless one of two rules, fixed before any error is looked at,
leaves it out (it is printed with the rule):
  limit: a power row measured at 95% of the chip's max_W or more: the board is
         at its power limit, where its controller trades clock (up to the
         boost clock) against power, which the model does not follow;
  rate:  a J-per-token row whose npusim output rate per GPU (its power over
         its J per token) is off the measured one (the same batch's measured
         power over measured J per token) by more than 15%: that miss is the
         serving time model's (tests/validation/validate_serve.py), not the energy's.

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
LIMIT_FRACTION = 0.95  # rule "limit"
RATE_BOUND = 0.15      # rule "rate"


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


def max_power_W(npusim, repo, system):
    out = subprocess.run([npusim, "validate", "--system",
                          os.path.join(repo, "configs/systems", system + ".json"), "--format",
                          "json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["chip"]["power"]["max_W"]


def exclusion(row, meas, j, power_rows, max_W):
    """The rule that leaves the row out, or None (then it is bounded)."""
    if row["metric"] == "avg_power_W_per_npu" and max_W > 0 and meas >= LIMIT_FRACTION * max_W:
        return "limit: measured %.0f W >= %.0f%% of max_W %.0f W" % (
            meas, LIMIT_FRACTION * 100, max_W)
    if row["metric"] == "J_per_output_token":
        pair = power_rows.get(row["id"].rsplit("-", 1)[0])
        if pair is None:
            sys.exit("validate_energy: %s: expected a power row of the same batch" % row["id"])
        e = j["energy"]
        rate = e["avg_power_W_per_npu"] / e["J_per_output_token"]
        measured_rate = pair / meas
        off = rate / measured_rate - 1
        if abs(off) > RATE_BOUND:
            return "rate: npusim's output rate %.0f tok/s per GPU is %+.0f%% off the measured %.0f" % (
                rate, off * 100, measured_rate)
    return None


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
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    data = a.data or os.path.join(repo, "tests/data/validation")
    ok = True
    errs = {"fit": [], "held-out": []}
    by_system = {}
    print("%-40s %10s %10s %8s  %-8s %s" % ("row (energy.csv)", "measured", "npusim", "error",
                                            "role", "bounded"))
    rows = read_rows(os.path.join(data, "energy.csv"))
    power_rows = {r["id"].rsplit("-", 1)[0]: float(r["measured"]) for r in rows
                  if r["metric"] == "avg_power_W_per_npu"}
    limits = {}
    for row in rows:
        j = run(a.npusim, repo, data, row)
        if not j["energy"]["modelled"]:
            sys.exit("validate_energy: %s: %s has no power model" % (row["id"], row["system"]))
        if row["system"] not in limits:
            limits[row["system"]] = max_power_W(a.npusim, repo, row["system"])
        pred = j["energy"][row["metric"]]
        meas = float(row["measured"])
        err = (pred - meas) / meas
        why = exclusion(row, meas, j, power_rows, limits[row["system"]])
        note = ""
        if why is None:
            errs[row["role"]].append(abs(err))
            by_system.setdefault((row["system"], row["role"]), []).append(abs(err))
            if abs(err) > ROW_BOUND:
                ok = False
                note = "  OVER the %.0f%% bound" % (ROW_BOUND * 100)
        else:
            note = "  not bounded, " + why
        print("%-40s %10.4g %10.4g %+7.1f%%  %-8s %s%s" % (row["id"], meas, pred, err * 100,
                                                          row["role"], "no" if why else "yes",
                                                          note))
    print(summary("bounded, fitted", errs["fit"]))
    print(summary("bounded, held out", errs["held-out"]))
    for (system, role), e in sorted(by_system.items()):
        print(summary("  %s, %s" % (system, role), e))
    if not ok:
        print("validate_energy: a bounded row is over the %.0f%% bound" % (ROW_BOUND * 100))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
