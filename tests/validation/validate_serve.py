#!/usr/bin/env python3
"""Validates `npusim serve` against measurements (tests/data/validation/serve_*.csv).

serve_gpu.csv: step times and latencies of LLaMA-shaped models measured on GPUs;
every bounded row must be within 10%. serve_published.csv: published serving
throughput with its deployment; the bounded rows' mean absolute percentage error
must be <= 15%. Every row is printed with its error; rows marked bounded=no are
printed with the reason they are not bounded (their source column says why).

usage: validate_serve.py NPUSIM [--data DIR] [--only gpu|published]
Exit status 0 when the bounds hold, 1 otherwise."""
import argparse
import csv
import json
import os
import subprocess
import sys

ROW_BOUND = 0.10
MAPE_BOUND = 0.15


def read_rows(path):
    with open(path, newline="") as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    return list(csv.DictReader(lines))


def run(npusim, repo, data, row):
    args = [npusim, "serve", "--system", os.path.join(repo, "configs/systems", row["system"] + ".json"),
            "--workload", os.path.join(data, "serve", row["model"] + ".json"), "--format", "json"]
    for s in row["sets"].split(";"):  # model.* sets the model, anything else its serving
        args += ["--set", "workload." + (s if s.startswith("model.") else "serving." + s)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("validate_serve: %s: npusim serve failed: %s" % (row["id"], out.stderr.strip()))
    return json.loads(out.stdout)


def metric(j, name):
    if name == "e2e_mean_s":
        return j["e2e_s"]["mean"]
    if name == "ttft_mean_s":
        return j["ttft_s"]["mean"]
    if name == "tpot_mean_s":
        return j["tpot_s"]["mean"]
    if name in ("decode_step_s", "prefill_step_s"):  # one step's time (a verify step with drafts)
        return j[name[:-2]]["time_s"]
    if name == "decode_tokens_per_s_per_npu":
        d = j["decode_step"]
        # with speculative decoding a step gains mean_tokens, not one per sequence
        return d.get("mean_tokens", d["mean_batch"]) / d["time_s"] / j["npus"] * j["instances"]
    return j[name]


def check(npusim, repo, data, name, per_row):
    rows = read_rows(os.path.join(data, name))
    errors, ok = [], True
    print("%-38s %12s %12s %8s  %s" % ("row (" + name + ")", "measured", "npusim", "error", "bounded"))
    for row in rows:
        j = run(npusim, repo, data, row)
        pred = metric(j, row["metric"]) * float(row.get("scale") or 1)
        meas = float(row["measured"])
        err = (pred - meas) / meas
        bounded = row["bounded"] == "yes"
        note = ""
        if bounded:
            errors.append(abs(err))
            if per_row and abs(err) > ROW_BOUND:
                ok = False
                note = "  OVER the %.0f%% bound" % (ROW_BOUND * 100)
        else:
            note = "  not bounded: " + row["source"].split("not bounded: ")[-1][:90]
        print("%-38s %12.5g %12.5g %+7.1f%%  %s%s" % (row["id"], meas, pred, err * 100,
                                                      "yes" if bounded else "no", note))
    if errors:
        mape = sum(errors) / len(errors)
        print("%s: %d bounded rows, MAPE %.1f%%, max %.1f%%" % (name, len(errors), mape * 100,
                                                             max(errors) * 100))
        if not per_row and mape > MAPE_BOUND:
            print("%s: MAPE over the %.0f%% bound" % (name, MAPE_BOUND * 100))
            ok = False
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("npusim")
    ap.add_argument("--data", default=None)
    ap.add_argument("--only", choices=["gpu", "published"])
    a = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    data = a.data or os.path.join(repo, "tests/data/validation")
    ok = True
    if a.only != "published":
        ok &= check(a.npusim, repo, data, "serve_gpu.csv", True)
    if a.only != "gpu":
        print()
        ok &= check(a.npusim, repo, data, "serve_published.csv", False)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
