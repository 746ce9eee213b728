#!/usr/bin/env python3
"""validate_ops.py - compares `npusim op` with measured kernel times.

Every tests/data/validation/ops_*.csv (format: tests/data/validation/README.md)
names in its header the system config it is checked on ("# system: FILE").
Each row is costed with `npusim op` on that system and printed with its
measured time, prediction and error. Rows are split per op class in file order
as `npusim calibrate` splits them: even rows are the fit half (a calibration may
use them), odd rows the held-out half. Errors are summed up as the geometric
mean of |predicted / measured - 1| in log space: exp(mean |log ratio|) - 1.

Usage: tests/validation/validate_ops.py [--npusim PATH] [--only FILE] [--check] [--pins]
                               [--write-pins] [--quiet] [--cv] [--check-calib]
                               [--folds K] [--fit-keys FILE] [--csv OUT] [--self-test]
With --check, exits 1 unless the held-out half of every table is within the
target bounds per class: matmul 5%, attention 10%, vector 10% (issue #11's).
With --pins, exits 1 if any class's held-out error grew by more than 0.5
percentage points over tests/data/validation/ops_pins.json, the errors of the
model as committed (a regression pin, like the golden op table: it holds the
model to where it is, not to where it should be; the targets are printed
beside it). --write-pins records the current errors there.

Cross-validation (--cv, issue #27): ops_h100_calib.csv, the kernels measured on
one H100, is split into k folds (--folds, 5) by shape: every row of one problem
goes to the same fold (matmul: the layouts of one GEMM, i.e. the same sorted
M, N, K and batch; attention: forward and backward, causal or not, of one
shape; vector: one op at one shape), the groups of each class dealt round-robin
over the folds in file order. For each fold and class, `npusim calibrate
--fit-rows all` fits that class's keys (tests/data/validation/ops_fit_keys.json)
on the class's rows of the other folds, and each held-out row is costed with
the config it wrote. Reported per class: geomean and max |error| of the shipped
config on the whole file (no refit) and of the held-out predictions, against
issue #27's bounds (CALIB_BOUNDS_PCT; cross-validated: CV_FACTOR x those).
--check-calib exits 1 where one is NOT MET. --csv FILE writes every prediction
(tests/validation/plot_ops.py draws it). --self-test checks the fold assignment and the
error sums and exits.
Python standard library only."""
import argparse
import concurrent.futures
import csv
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "validation")
BOUNDS_PCT = {"matmul": 5.0, "attention": 10.0, "vector": 10.0}
PINS = os.path.join(DATA, "ops_pins.json")
PIN_SLACK_PCT = 0.5
CLASSES = ("matmul", "attention", "vector")
CALIB = os.path.join(DATA, "ops_h100_calib.csv")
FIT_KEYS = os.path.join(DATA, "ops_fit_keys.json")
# issue #27's bounds on the measured H100 kernels: geomean |error| per class, and
# for vector ops the worst row too; cross-validated errors within CV_FACTOR x.
CALIB_BOUNDS_PCT = {"matmul": {"geomean": 6.0}, "attention": {"geomean": 12.0},
                    "vector": {"geomean": 10.0, "max": 25.0}}
CV_FACTOR = 1.5


def op_class(op):
    if op == "matmul":
        return "matmul"
    return "attention" if op.startswith("attention") else "vector"  # "a+b": a's class


def read_table(path):
    system, comments = None, []
    with open(path, newline="") as f:
        lines = f.readlines()
    for line in lines:
        if line.startswith("# system:"):
            system = line.split(":", 1)[1].strip()
    if not system:
        sys.exit("validate_ops: %s: expected a '# system: FILE' header line, found none" % path)
    rows = list(csv.DictReader(l for l in lines if not l.startswith("#") and l.strip()))
    seen = {}
    for r in rows:
        c = op_class(r["op"])
        r["class"] = c
        r["half"] = "held_out" if seen.get(c, 0) % 2 else "fit"
        seen[c] = seen.get(c, 0) + 1
    return os.path.join(ROOT, system), rows


def predict(npusim, system, r):
    """npusim op for each op of the row ("a+b": timed together, times add up)."""
    parts = [predict_one(npusim, system, dict(r, op=op)) for op in r["op"].split("+")]
    return {"time_s": sum(p["time_s"] for p in parts), "bound": "+".join(p["bound"] for p in parts)}


def predict_one(npusim, system, r):
    cmd = [npusim, "op", "--system", system, "--op", r["op"], "--shape",
           r["shape"].replace("x", ","), "--dtype", r["dtype"], "--format", "json"]
    if r.get("causal") == "1":
        cmd.append("--causal")
    layout = r.get("layout") or ""
    if layout[:1] == "t":
        cmd.append("--trans-a")
    if layout[1:2] == "t":
        cmd.append("--trans-b")
    if r.get("kernels"):  # fused (the default) or unfused: which kernels the row timed
        cmd += ["--kernels", r["kernels"]]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("validate_ops: %s failed: %s" % (" ".join(cmd), run.stderr.strip()))
    return json.loads(run.stdout)


def geomean_pct(errors):
    return 100.0 * (math.exp(sum(abs(e) for e in errors) / len(errors)) - 1)


def max_pct(errors):
    """The worst row's |predicted / measured - 1| in percent (80% too fast: 80)."""
    return 100.0 * max(abs(math.expm1(e)) for e in errors)


def cost_rows(npusim, system, rows):
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(lambda r: predict(npusim, system, r), rows))


def validate(args, path, pins, current, costed):
    system, rows = read_table(path)
    preds = cost_rows(args.npusim, system, rows)
    costed[os.path.abspath(path)] = (system, rows, preds)
    print("%s on %s" % (os.path.relpath(path, ROOT), os.path.relpath(system, ROOT)))
    if not args.quiet:
        print("%-9s %-8s %-14s %-22s %-6s %3s %10s %10s %8s  %s" % (
            "class", "half", "op", "shape", "dtype", "c", "meas_us", "npusim_us", "error",
            "bound"))
    errs = {}
    for r, p in zip(rows, preds):
        pred_us, meas_us = p["time_s"] * 1e6, float(r["time_us"])
        e = math.log(pred_us / meas_us)
        errs.setdefault((r["class"], r["half"]), []).append(e)
        if not args.quiet:
            print("%-9s %-8s %-14s %-22s %-6s %3s %10.1f %10.1f %+7.1f%%  %s" % (
                r["class"], r["half"], r["op"], r["shape"], r["dtype"], r.get("causal") or "",
                meas_us, pred_us, 100 * (pred_us / meas_us - 1), p["bound"]))
    ok = True
    for c in ("matmul", "attention", "vector"):
        for half in ("fit", "held_out"):
            e = errs.get((c, half))
            if not e:
                continue
            g = geomean_pct(e)
            optimistic = sum(1 for x in e if x < 0)
            line = "  %-9s %-8s geomean |error| %5.1f%% over %3d rows (%d too fast)" % (
                c, half, g, len(e), optimistic)
            if half == "held_out":
                key = "%s:%s" % (os.path.basename(path), c)
                current[key] = round(g, 2)
                good = g <= BOUNDS_PCT[c]
                line += " (target %.0f%%: %s)" % (BOUNDS_PCT[c], "met" if good else "NOT MET")
                if args.check:
                    ok = ok and good
                if args.pins:
                    pin = pins.get(key)
                    held = pin is not None and g <= pin + PIN_SLACK_PCT
                    ok = ok and held
                    line += " (pin %s: %s)" % ("none" if pin is None else "%.1f%%" % pin,
                                               "held" if held else "BROKEN")
            print(line)
    return ok


def shape_group(r):
    """The problem a row measures; rows of one problem always share a fold, so a
    held-out shape is unseen in every form: matmul, the layouts of one GEMM
    (forward, input and weight gradient: the same M, N, K in some order, and
    batch); attention, forward and backward, causal or not, of one shape; a
    vector op, its op at one shape."""
    dims = tuple(int(x) for x in r["shape"].split("x"))
    if r["class"] == "matmul":
        return ("matmul", tuple(sorted(dims[:3])) + dims[3:])
    if r["class"] == "attention":
        return ("attention", dims)
    return (r["op"], dims)


def assign_folds(rows, k):
    """The fold (0..k-1) of each row: per class, its shape groups in order of first
    appearance dealt round-robin over the folds (deterministic, balanced)."""
    fold_of, groups, folds = {}, {}, []
    for r in rows:
        g = shape_group(r)
        if g not in fold_of:
            n = groups.get(r["class"], 0)
            fold_of[g] = n % k
            groups[r["class"]] = n + 1
        folds.append(fold_of[g])
    return folds


def cv_splits(rows, folds, k):
    """(fold, class, training row indices, held-out row indices) for each fold and
    class that holds rows out; the training rows are that class's other folds."""
    for f in range(k):
        for c in CLASSES:
            held = [i for i, r in enumerate(rows) if r["class"] == c and folds[i] == f]
            train = [i for i, r in enumerate(rows) if r["class"] == c and folds[i] != f]
            if held:
                yield f, c, train, held


MEAS_COLUMNS = ("op", "shape", "dtype", "out_dtype", "causal", "layout", "kernels", "time_us")


def fit_fold(npusim, system, rows, keys, workdir, name):
    """npusim calibrate --fit-rows all on rows; returns the config it wrote and the
    fitted values [(key, before, after)]."""
    table, config = os.path.join(workdir, name + ".csv"), os.path.join(workdir, name + ".json")
    with open(table, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(MEAS_COLUMNS)
        for r in rows:
            w.writerow([r.get(col) or "" for col in MEAS_COLUMNS])
    cmd = [npusim, "calibrate", "--system", system, "--measurements", table,
           "--fit", ",".join(keys), "--fit-rows", "all", "--output", config, "--format", "json"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("validate_ops: %s failed: %s" % (" ".join(cmd), run.stderr.strip()))
    params = json.loads(run.stdout)["parameters"]
    return config, [(p["key"], p["before"], p["after"]) for p in params]


def read_fit_keys(path):
    with open(path) as f:
        keys = json.load(f)
    for c in CLASSES:
        if not (isinstance(keys.get(c), list) and keys[c] and
                all(isinstance(k, str) for k in keys[c])):
            sys.exit("validate_ops: %s: %s: expected a list of chip keys, found %r"
                     % (os.path.relpath(path, ROOT), c, keys.get(c)))
    return keys


def check_bounds(label, errs, factor, out=sys.stdout):
    """Prints each class's geomean and max |error| against CALIB_BOUNDS_PCT x factor;
    returns whether every bound is met (a class without rows misses its bound)."""
    ok = True
    for c in CLASSES:
        e = errs.get(c)
        if not e:
            print("  %-9s %-26s no rows (bound NOT MET)" % (c, label), file=out)
            ok = False
            continue
        parts = []
        for stat, value in (("geomean", geomean_pct(e)), ("max", max_pct(e))):
            text = "%s %6.2f%%" % (stat, value)
            bound = CALIB_BOUNDS_PCT[c].get(stat)
            if bound is not None:
                good = value <= bound * factor
                ok = ok and good
                text += " (bound %.1f%%: %s)" % (bound * factor, "met" if good else "NOT MET")
            parts.append(text)
        print("  %-9s %-26s %s over %d rows" % (c, label, ", ".join(parts), len(e)), file=out)
    return ok


def crossvalidate(args, costed):
    """k-fold cross-validation of the calibration file by shape; returns whether
    issue #27's bounds are met (on the file with the shipped config, and held out)."""
    path = os.path.abspath(args.calib)
    if path not in costed:
        system, rows = read_table(path)
        costed[path] = (system, rows, cost_rows(args.npusim, system, rows))
    system, rows, shipped = costed[path]
    keys = read_fit_keys(args.fit_keys)
    folds = assign_folds(rows, args.folds)
    splits = list(cv_splits(rows, folds, args.folds))
    with tempfile.TemporaryDirectory(prefix="validate_ops.") as workdir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            fits = list(pool.map(lambda s: fit_fold(
                args.npusim, system, [rows[i] for i in s[2]], keys[s[1]], workdir,
                "fold%d_%s" % (s[0], s[1])), splits))
            jobs = [(cfg, i) for (cfg, _), s in zip(fits, splits) for i in s[3]]
            preds = list(pool.map(lambda j: predict(args.npusim, j[0], rows[j[1]]), jobs))
    held = {i: p for (_, i), p in zip(jobs, preds)}
    print("cross-validation of %s: %d folds by shape, keys fitted per class on the other folds "
          "(%s)" % (os.path.relpath(path, ROOT), args.folds, os.path.relpath(args.fit_keys, ROOT)))
    if not args.quiet:
        for (f, c, train, out), (_, params) in zip(splits, fits):
            print("  fold %d %-9s fit on %2d rows, %2d held out: %s" % (
                f + 1, c, len(train), len(out),
                " ".join("%s=%.4g" % (k, after) for k, _, after in params)))
    calib_errs, cv_errs = {}, {}
    for i, r in enumerate(rows):
        meas_s = float(r["time_us"]) * 1e-6
        calib_errs.setdefault(r["class"], []).append(math.log(shipped[i]["time_s"] / meas_s))
        cv_errs.setdefault(r["class"], []).append(math.log(held[i]["time_s"] / meas_s))
    ok = check_bounds("calibration file, shipped", calib_errs, 1.0)
    ok = check_bounds("cross-validated (x%.1f)" % CV_FACTOR, cv_errs, CV_FACTOR) and ok
    if args.csv:
        write_predictions(args.csv, rows, folds, shipped, held)
    return ok


def write_predictions(path, rows, folds, shipped, held):
    """Every row twice: costed with the shipped config ("calib") and held out
    ("cv"); fixed formats, file order: the same run writes the same bytes."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["set", "class", "fold", "op", "shape", "dtype", "causal", "layout",
                    "measured_us", "predicted_us", "error"])
        for name, preds in (("calib", shipped), ("cv", held)):
            for i, r in enumerate(rows):
                meas_us, pred_us = float(r["time_us"]), preds[i]["time_s"] * 1e6
                w.writerow([name, r["class"], folds[i] + 1, r["op"], r["shape"], r["dtype"],
                            r.get("causal") or "", r.get("layout") or "", "%.4f" % meas_us,
                            "%.4f" % pred_us, "%.6f" % (pred_us / meas_us - 1)])


def self_test():
    """Checks of the fold assignment and the error sums; returns the exit status."""
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    def row(op, shape, causal="", layout=""):
        return {"op": op, "shape": shape, "class": op_class(op), "causal": causal,
                "layout": layout, "dtype": "bf16", "time_us": "1"}

    rows = [row("matmul", "2048x4608x12288", layout="nt"), row("matmul", "1024x1024x1024"),
            row("attention_fwd", "1x12x2048x128", "1"), row("rmsnorm", "4096x8192"),
            row("matmul", "2048x12288x4608", layout="nn"), row("layernorm", "4096x8192"),
            row("attention_bwd", "1x12x2048x128", "1"),
            row("matmul", "4608x12288x2048", layout="tn"),
            row("attention_fwd", "1x12x2048x128"), row("matmul", "2048x4608x12288x2"),
            row("rmsnorm", "4096x8192"), row("attention_fwd", "2x12x2048x128")]
    folds = assign_folds(rows, 2)
    expect(folds == assign_folds(rows, 2), "fold assignment is deterministic")
    expect(len({folds[0], folds[4], folds[7]}) == 1, "the layouts of one GEMM share a fold")
    expect(folds[0] != folds[1], "the next GEMM problem goes to the next fold")
    expect(folds[9] == folds[0], "a batched GEMM is a problem of its own (third: fold 1 of 2)")
    expect(len({folds[2], folds[6], folds[8]}) == 1, "attention fwd/bwd, causal or not, share one")
    expect(folds[11] != folds[2], "another attention shape: the next fold")
    expect(folds[3] == folds[10] and folds[3] != folds[5], "vector: one op at one shape")
    for path in (CALIB,):
        _, real = read_table(path)
        for k in (2, 5, 7):
            fr = assign_folds(real, k)
            groups = {}
            for r, f in zip(real, fr):
                groups.setdefault(shape_group(r), set()).add(f)
            expect(all(len(v) == 1 for v in groups.values()), "k=%d: one fold per shape" % k)
            expect(all(0 <= f < k for f in fr), "k=%d: folds in range" % k)
            seen = []
            for f, c, train, held in cv_splits(real, fr, k):
                expect(not set(train) & set(held), "k=%d: training and held-out rows apart" % k)
                expect(sorted(train + held) == [i for i, r in enumerate(real) if r["class"] == c],
                       "k=%d: a split covers its class" % k)
                seen += held
            expect(sorted(seen) == list(range(len(real))), "k=%d: every row held out once" % k)
            for c in CLASSES:
                used = {f for r, f in zip(real, fr) if r["class"] == c}
                expect(len(used) == min(k, len({shape_group(r) for r in real if r["class"] == c})),
                       "k=%d: %s spread over the folds" % (k, c))
    expect(abs(geomean_pct([math.log(1.1), -math.log(1.1)]) - 10) < 1e-9,
           "geomean: 10% too slow and 10% too fast (log) are 10%")
    expect(geomean_pct([0.0, 0.0]) == 0, "geomean of exact rows is 0")
    expect(abs(geomean_pct([math.log(2), 0.0]) - 100 * (math.sqrt(2) - 1)) < 1e-9,
           "geomean is exp(mean |log|) - 1")
    expect(abs(max_pct([math.log(0.2), math.log(1.1)]) - 80) < 1e-9, "max: 80% too fast is 80%")
    sink = open(os.devnull, "w")
    good = {"matmul": [math.log(1.05)], "attention": [math.log(0.9)], "vector": [math.log(1.05)]}
    one_bad_row = [0.0] * 9 + [math.log(1.3)]  # geomean 2.7%, max 30%
    expect(check_bounds("t", good, 1.0, sink), "bounds met within them")
    expect(not check_bounds("t", dict(good, vector=one_bad_row), 1.0, sink),
           "vector max over 25% misses")
    expect(check_bounds("t", dict(good, vector=one_bad_row), CV_FACTOR, sink),
           "x1.5 for cross-validated errors")
    expect(not check_bounds("t", dict(good, matmul=[math.log(1.07)]), 1.0, sink),
           "matmul over 6% misses")
    expect(not check_bounds("t", {"matmul": good["matmul"]}, 1.0, sink),
           "a class without rows misses")
    sink.close()
    for what in failures:
        print("validate_ops --self-test: FAILED: %s" % what)
    print("validate_ops --self-test: %d failed" % len(failures))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("--only", help="one table instead of every ops_*.csv")
    ap.add_argument("--check", action="store_true", help="exit 1 if a held-out target fails")
    ap.add_argument("--pins", action="store_true", help="exit 1 if a held-out error grew")
    ap.add_argument("--write-pins", action="store_true", help="record the held-out errors")
    ap.add_argument("--quiet", action="store_true", help="summaries only, no rows")
    ap.add_argument("--cv", action="store_true",
                    help="cross-validate the calibration file by shape (k folds)")
    ap.add_argument("--check-calib", action="store_true",
                    help="with --cv: exit 1 unless issue #27's bounds are met")
    ap.add_argument("--calib", default=CALIB, help="the calibration file (ops_h100_calib.csv)")
    ap.add_argument("--folds", type=int, default=5, help="k of the k-fold cross-validation")
    ap.add_argument("--fit-keys", default=FIT_KEYS, help="keys fitted per class (JSON)")
    ap.add_argument("--csv", help="with --cv: write every prediction (tests/validation/plot_ops.py)")
    ap.add_argument("--self-test", action="store_true", help="check the folds and error sums")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(self_test())
    if args.folds < 2:
        sys.exit("validate_ops: --folds: expected 2 or more, found %d" % args.folds)
    tables = [args.only] if args.only else sorted(glob.glob(os.path.join(DATA, "ops_*.csv")))
    if not tables:
        sys.exit("validate_ops: expected tests/data/validation/ops_*.csv, found none")
    pins = {}
    if args.pins:
        with open(PINS) as f:
            pins = json.load(f)
    current, costed = {}, {}
    ok = all([validate(args, t, pins, current, costed) for t in tables])
    if args.cv or args.check_calib or args.csv:
        met = crossvalidate(args, costed)
        ok = ok and (met or not args.check_calib)
    if args.write_pins:
        with open(PINS, "w") as f:
            json.dump(current, f, indent=1, sort_keys=True)
            f.write("\n")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
