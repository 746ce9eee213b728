#!/usr/bin/env python3
"""check_e2e.py - `npusim check`, `npusim diff` and `npusim calibrate
--collectives` end to end (issue #32).

  check: the shipped expectations (configs/expectations/published.json, the
    validation tables as npusim check rows; make_expectations.py --check says
    the file is what the tables give) pass, exit 0, and their JUnit XML, read
    by Python's XML parser, counts every row and no failure; a copy with one
    expected value changed exits 1 with exactly that testcase failed; a row
    whose command fails is an error (exit 1), never a skip; -j 1 and -j 4
    print the same bytes. The JUnit XML is read by junitparser (Debian's
    python3-junitparser, the reader CI plugins use), not by our own code.
  diff: two runs that differ in one key list exactly the figures that moved
    (found here by flattening both outputs), a run against itself none (exit 0),
    and the threshold leaves out exactly the smaller changes.
  npusim-sweep --baseline: a rerun against its own table flags nothing (exit
    0); against a copy with one figure changed, exactly that row and column
    (moved.csv, exit 1), and a threshold above the change none.
  calibrate --collectives: logs written by `coll --style nccl-tests` /
    `--style hccl-test` (its collective and ranks given) from a config with
    known link efficiencies and
    latencies give them back within 1% from another config; the fitted
    config loads and predicts the logs; on a real public nccl-tests log
    (tests/data/validation/coll_logs/) the held-out error is reported and
    lower after the fit than before.
Usage: tests/e2e/check_e2e.py NPUSIM [--quick]   (from the repository root;
--quick: of the shipped expectations only the collective rows, and no sweep
baseline, as the sanitizer build runs it)"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from checks import fail, finish, ok

try:
    import junitparser
except ImportError:  # Debian's package lives beside /usr/bin/python3: run there
    DEBIAN = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN) and os.access(DEBIAN, os.X_OK):
        os.execv(DEBIAN, [DEBIAN] + sys.argv)
    sys.exit("check_e2e: expected Debian's python3-junitparser (scripts/test.sh installs it)")

NPUSIM = os.path.abspath(sys.argv[1])
QUICK = "--quick" in sys.argv[2:]
EXPECT = "configs/expectations/published.json"
LOGS = "tests/data/validation/coll_logs"
H100 = "configs/systems/h100-dgx.json"


def run(args):
    p = subprocess.run([NPUSIM] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def junit(path):
    """(the one suite's counts, {testcase name: its result kinds}) as junitparser reads them."""
    suites = list(junitparser.JUnitXml.fromfile(path))
    if len(suites) != 1:
        fail("%s: %d test suites, expected 1" % (path, len(suites)))
        return {}, {}
    suite = suites[0]
    counts = {"tests": suite.tests, "failures": suite.failures, "errors": suite.errors}
    cases = {c.name: [type(r).__name__ for r in c.result] for c in suite}
    return counts, cases


def check_shipped(tmp):
    p = subprocess.run([sys.executable, "tests/validation/make_expectations.py", "--check"],
                       capture_output=True, text=True)
    if p.returncode:
        fail("make_expectations --check: " + (p.stdout + p.stderr).strip())
    rows = json.load(open(EXPECT))["expectations"]
    expect = EXPECT
    if QUICK:
        rows = [r for r in rows if r["args"][0] == "coll"]
        expect = os.path.join(tmp, "published_coll.json")
        json.dump({"expectations": rows}, open(expect, "w"))
    xml = os.path.join(tmp, "published.xml")
    rc, out, err = run(["check", expect, "-j", "2", "--junit", xml])
    if rc != 0:
        fail("check %s: exit %d (want 0): %s%s" % (EXPECT, rc, out[-2000:], err))
        return
    counts, cases = junit(xml)
    if counts != {"tests": len(rows), "failures": 0, "errors": 0} or len(cases) != len(rows) or \
            any(cases.values()):
        fail("JUnit of the shipped expectations: %s" % counts)
    else:
        ok("check %s: %d rows within tolerance, exit 0, JUnit (junitparser) %s"
           % (EXPECT, len(rows), counts))


def check_fails(tmp):
    rows = [r for r in json.load(open(EXPECT))["expectations"] if r["args"][0] == "coll"]
    changed = json.loads(json.dumps(rows))
    changed[2]["expected"] *= 1.5
    broken = {"name": "a command that fails",
              "args": ["coll", "--system", "no/such.json", "--op", "allreduce", "--ranks", "8"],
              "figure": "[0].busbw_GBps", "expected": 1, "tolerance_pct": 5}
    path = os.path.join(tmp, "changed.json")
    json.dump({"expectations": changed}, open(path, "w"))
    xml = os.path.join(tmp, "changed.xml")
    rc, out, _ = run(["check", path, "--junit", xml])
    counts, cases = junit(xml)
    failed = [n for n, kinds in cases.items() if "Failure" in kinds]
    if rc != 1 or failed != [changed[2]["name"]] or counts.get("failures") != 1:
        fail("one expected value changed: exit %d (want 1), failed %s" % (rc, failed))
    else:
        ok("one expected value changed: exit 1, exactly its testcase failed in the JUnit XML")
    json.dump({"expectations": rows[:1] + [broken]}, open(path, "w"))
    rc, out, _ = run(["check", path, "--junit", xml, "--format", "json"])
    res = json.loads(out)["results"] if out else []
    counts, cases = junit(xml)
    if rc != 1 or [r["result"] for r in res] != ["pass", "error"] or \
            "no/such.json" not in res[1].get("why", "") or counts.get("errors") != 1 or \
            cases.get(broken["name"]) != ["Error"]:
        fail("a row whose command fails: exit %d, results %s" % (rc, res))
    else:
        ok("a row whose command fails: an error naming why (%s), exit 1" % res[1]["why"][:60])
    json.dump({"expectations": rows}, open(path, "w"))
    one = run(["check", path, "-j", "1"])[1]
    four = run(["check", path, "-j", "4"])[1]
    if one != four:
        fail("check -j 1 and -j 4 print different tables")
    else:
        ok("check -j 1 and -j 4 print the same bytes")


def flatten(doc, path=""):
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            out.update(flatten(v, "%s.%s" % (path, k) if path else k))
        return out
    if isinstance(doc, list):
        out = {}
        for i, v in enumerate(doc):
            out.update(flatten(v, "%s[%d]" % (path, i)))
        return out
    return {path: doc}


def check_diff(tmp):
    base = ["coll", "--system", H100, "--op", "allreduce", "--ranks", "16", "--sizes", "1M:1G:8",
            "--fidelity", "analytic", "--format", "json"]
    a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
    open(a, "w").write(run(base)[1])
    open(b, "w").write(run(base + ["--set", "cluster.scale_out.efficiency=0.5"])[1])
    fa, fb = flatten(json.load(open(a))), flatten(json.load(open(b)))
    want = sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))
    rc, out, err = run(["diff", a, b, "--format", "json"])
    got = sorted(r["figure"] for r in json.loads(out)["moved"]) if out else []
    if rc != 1 or got != want or not want:
        fail("diff of two runs apart in one key: exit %d, listed %s, moved %s" % (rc, got, want))
    else:
        ok("diff of two runs apart in one key: exactly the %d figures that moved, exit 1"
           % len(want))
    rc, out, _ = run(["diff", a, a, "--format", "json"])
    if rc != 0 or json.loads(out)["moved"]:
        fail("diff of a run with itself: exit %d, %s" % (rc, out[:200]))
    else:
        ok("diff of a run with itself: nothing moved, exit 0")
    changes = {k: abs(fb[k] - fa[k]) / abs(fa[k]) * 100 for k in want
               if isinstance(fa.get(k), (int, float)) and isinstance(fb.get(k), (int, float))
               and fa[k] != 0}
    cut = sorted(changes.values())[len(changes) // 2]
    rc, out, _ = run(["diff", a, b, "--format", "json", "--threshold", "%.17g" % cut])
    got = sorted(r["figure"] for r in json.loads(out)["moved"])
    over = sorted(k for k in want if k not in changes or changes[k] > cut)
    if got != over:
        fail("diff --threshold %.3g: listed %s, want %s" % (cut, got, over))
    else:
        ok("diff --threshold %.3g%%: exactly the %d larger changes" % (cut, len(over)))


def check_sweep_baseline(tmp):
    spec = "configs/sweeps/llama2-70b-910b-bandwidth.json"
    out = os.path.join(tmp, "sweep")
    env = dict(os.environ, NPUSIM=NPUSIM)
    sweep = lambda *extra: subprocess.run(
        [sys.executable, "scripts/tools/npusim-sweep", spec, "--out", out, "-j", "2"] + list(extra),
        capture_output=True, text=True, env=env)
    first = sweep()
    if first.returncode:
        fail("npusim-sweep %s: %s" % (spec, first.stderr.strip()[-300:]))
        return
    with open(os.path.join(out, "results.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    base = os.path.join(tmp, "baseline.csv")
    shutil.copy(os.path.join(out, "results.csv"), base)
    same = sweep("--baseline", base)
    moved = open(os.path.join(out, "moved.csv")).read().splitlines()
    if same.returncode != 0 or len(moved) != 1:
        fail("sweep --baseline of an unchanged run: exit %d, moved.csv %s" % (same.returncode,
                                                                             moved))
    else:
        ok("sweep --baseline of an unchanged run: nothing moved, exit 0")
    rows[4]["step_time_s"] = repr(float(rows[4]["step_time_s"]) * 1.05)
    with open(base, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    changed = sweep("--baseline", base)
    moved = list(csv.DictReader(open(os.path.join(out, "moved.csv"))))
    if changed.returncode != 1 or len(moved) != 1 or moved[0]["column"] != "step_time_s" or \
            (moved[0]["hccs_GBps"], moved[0]["roce_GBps"]) != (rows[4]["hccs_GBps"],
                                                                rows[4]["roce_GBps"]):
        fail("sweep --baseline with one figure changed: exit %d, moved %s" %
             (changed.returncode, moved))
    else:
        ok("sweep --baseline with one figure changed: exactly that point's step_time_s "
           "(%s%%), exit 1" % moved[0]["change_pct"])
    quiet = sweep("--baseline", base, "--threshold", "5")
    if quiet.returncode != 0:
        fail("sweep --baseline --threshold 5 over a 4.8%% change: exit %d" % quiet.returncode)
    else:
        ok("sweep --baseline --threshold 5: the 4.8% change left out, exit 0")


KNOWN = {"node.scale_up.efficiency": 0.7, "node.scale_up.latency_us": 2.5,
         "cluster.scale_out.efficiency": 0.6, "cluster.scale_out.latency_us": 4.0}


def check_calibrate(tmp):
    sets = sum((["--set", "%s=%g" % kv] for kv in KNOWN.items()), [])
    logs = []
    for ranks, style in ((8, "nccl-tests"), (32, "nccl-tests"), (8, "hccl-test")):
        path = os.path.join(tmp, "known_%d_%s.log" % (ranks, style))
        rc, out, err = run(["coll", "--system", H100, "--op", "allreduce", "--ranks", str(ranks),
                            "--sizes", "8:4G:2", "--fidelity", "analytic", "--style", style] + sets)
        open(path, "w").write(out)
        logs.append(path)
    fitted = os.path.join(tmp, "fitted.json")
    args = ["calibrate", "--system", H100, "--op", "allreduce", "--format", "json",
            "--output", fitted]
    for path in logs[:2]:
        args += ["--collectives", path]
    rc, out, err = run(args)
    if rc != 0:
        fail("calibrate --collectives on logs of a known config: exit %d: %s" % (rc, err))
        return
    params = {p["key"]: p["after"] for p in json.loads(out)["parameters"]}
    off = {k: params.get(k, 0) / v - 1 for k, v in KNOWN.items()}
    if any(abs(e) > 0.01 for e in off.values()):
        fail("fitted parameters off the known ones: %s" % params)
    else:
        ok("nccl-tests logs of a known config: efficiencies and latencies within 1%% (%s)"
           % ", ".join("%s %+.3f%%" % (k.split(".")[-1], 100 * e) for k, e in off.items()))
    rc, out, err = run(["coll", "--system", fitted, "--op", "allreduce", "--ranks", "32",
                        "--sizes", "1G", "--fidelity", "analytic", "--format", "json"])
    rc2, out2, _ = run(["coll", "--system", H100, "--op", "allreduce", "--ranks", "32",
                        "--sizes", "1G", "--fidelity", "analytic", "--format", "json"] + sets)
    if rc or rc2 or abs(json.loads(out)[0]["time_us"] / json.loads(out2)[0]["time_us"] - 1) > 0.01:
        fail("the fitted config (%s) does not predict the known config's 1 GiB: %s" % (fitted, err))
    else:
        ok("the written config extends the system and predicts the known config within 1%")
    rc, out, err = run(["calibrate", "--system", H100, "--collectives", logs[2], "--op",
                        "allreduce", "--ranks", "8", "--format", "json"])
    params = {p["key"]: p["after"] for p in json.loads(out)["parameters"]} if rc == 0 else {}
    if rc or abs(params.get("node.scale_up.efficiency", 0) / 0.7 - 1) > 0.01:
        fail("an hccl_test log (--op, --ranks given): exit %d %s %s" % (rc, params, err))
    else:
        ok("an hccl_test log with --op and --ranks: scale-up efficiency within 1%")
    real = os.path.join(LOGS, "h100_together_1node_8gpu_allreduce_ring.txt")
    rc, out, err = run(["calibrate", "--system", H100, "--collectives", real, "--algo", "ring",
                        "--format", "json"])
    if rc:
        fail("calibrate on %s: exit %d: %s" % (real, rc, err))
        return
    r = json.loads(out)
    if r["logs"][0]["op"] != "allreduce":
        fail("%s: its all_reduce_perf read as %s" % (real, r["logs"][0]["op"]))
    else:
        ok("nccl-tests 2.17's start line names the collective: all_reduce_perf is allreduce")
    before, after = r["held_out_geomean_error_before_pct"], r["held_out_geomean_error_after_pct"]
    if r["held_out_sizes"] < 10 or not after < before:
        fail("real log: held-out error %.1f%% -> %.1f%% over %d sizes" % (before, after,
                                                                           r["held_out_sizes"]))
    else:
        ok("real 8x H100 ring log: held-out geomean |error| %.1f%% -> %.1f%% over %d sizes"
           % (before, after, r["held_out_sizes"]))
    nvls = os.path.join(LOGS, "h100_together_1node_8gpu_allreduce_nvls.txt")
    efa = os.path.join(LOGS, "h100_aws_p5_2node_16gpu_efa_allreduce.txt")
    rc, out, err = run(["calibrate", "--system", H100, "--collectives", nvls, "--collectives", efa,
                        "--op", "allreduce"])
    if rc or "cluster.scale_out.efficiency" not in out or "at its bound" not in out:
        fail("a parameter the fit leaves at its bound is not said so: exit %d %s"
             % (rc, out[-600:] + err))
    else:
        ok("the EFA log's scale-out efficiency ends at its bound, and the report says so")
    # two one-server logs of different links: one written by the system as
    # configured (no error before), one by a slower link; the compromise the
    # fit finds makes the first worse, and the report must say so
    exact, slow = os.path.join(tmp, "exact.log"), os.path.join(tmp, "slow.log")
    for path, extra in ((exact, []), (slow, ["--set", "node.scale_up.efficiency=0.5"])):
        rc, out, err = run(["coll", "--system", H100, "--op", "allreduce", "--ranks", "8",
                            "--sizes", "1M:1G:4", "--fidelity", "analytic", "--algo", "ring",
                            "--style", "nccl-tests"] + extra)
        open(path, "w").write(out)
    rc, out, err = run(["calibrate", "--system", H100, "--collectives", exact, "--collectives",
                        slow, "--algo", "ring", "--op", "allreduce"])
    worse = [l for l in out.splitlines() if l.startswith("warning: the fit made")]
    if rc or len(worse) != 1 or exact not in worse[0]:
        fail("a fit that makes a log worse is not said so: exit %d %s" % (rc, out[-600:] + err))
    else:
        ok("a fit that makes the exact log worse says so")
    # NVLS's pipeline: logs written with known collectives.nvls values are fitted back
    known_nv = {"collectives.nvls.latency_us": 12.0, "collectives.nvls.chunk_step_us": 3.0}
    nvlog = os.path.join(tmp, "nvls.log")
    rc, out, err = run(["coll", "--system", H100, "--op", "allreduce", "--ranks", "8", "--sizes",
                        "1M:8G:2", "--fidelity", "analytic", "--algo", "nvls", "--style",
                        "nccl-tests"] + sum((["--set", "%s=%g" % kv] for kv in known_nv.items()), []))
    open(nvlog, "w").write(out)
    rc, out, err = run(["calibrate", "--system", H100, "--collectives", nvlog, "--algo", "nvls",
                        "--op", "allreduce", "--format", "json"])
    params = {p["key"]: p["after"] for p in json.loads(out)["parameters"]} if rc == 0 else {}
    off = {k: params.get(k, 0) / v - 1 for k, v in known_nv.items()}
    if rc or any(abs(e) > 0.01 for e in off.values()):
        fail("calibrate --algo nvls on a log of known NVLS costs: exit %d %s %s" % (rc, params, err))
    else:
        ok("an NVLS log of known costs: latency and chunk step within 1%% (%s)"
           % ", ".join("%s %+.3f%%" % (k.split(".")[-1], 100 * e) for k, e in off.items()))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_shipped(tmp)
        check_fails(tmp)
        check_diff(tmp)
        if not QUICK:  # Python logic over train runs train_e2e makes under ASan already
            check_sweep_baseline(tmp)
        check_calibrate(tmp)
    finish("check_e2e")


if __name__ == "__main__":
    main()
