#!/usr/bin/env python3
"""extreme_json.py NPUSIM [--formats F,...] [--keys REGEX] [--stride K] - every
command's output on extreme configs, in every format.

Each numeric key of the system and workload schemas (`npusim schema --format
json`) is set to the least and the greatest value it accepts, one at a time, and
so are the keys whose values are lists (chip.variation.speed_factors: a rank and
all ranks at the least and greatest factor; cluster.faults.links: a link kind at
the least factor, from the start and from the least and greatest time, and dying
at those times), their ranges read from the schema's text too. Every command runs
on each (op: a matmul, an attention and a vector op; coll in both fidelities;
replay of a sample trace in both; train in both and on servers of two chips
(cluster.node_types); cluster; serve; validate), with --format json, table and
csv. Each run must either exit 0 with output that is whole and right, or exit 2
with one line on stderr and nothing on stdout (a plan the rules refuse, or the
time limit). Whole and right: JSON that parses with finite numbers only (no
inf, nan: not JSON); a table or CSV without a number printed as not finite (inf,
-inf, nan, -nan, in either case); and a step, collective or op time that must be
positive printed above 0 (not 0.000). Anything else (a crash, an abort with pages
of stderr, exit 1: the output guard's internal error) fails. Runs from the
repository root; each run has --time-limit and a memory ulimit so that a runaway
is a failure, not a hang. --stride K keeps every K-th key (in the schema's
order, system keys then workload keys), both its extremes: the sanitizer build
runs half the keys so that CI stays inside its 30 minutes; the Release build
runs them all.
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import resource
import subprocess
import sys

SYSTEM = "configs/systems/ascend-910b.json"
OTHER_CHIP = "configs/systems/ascend-910a.json"
WORKLOAD = "tests/data/train/tiny.json"
SERVE_WORKLOAD = "configs/workloads/serve-llama3-8b.json"
TIME_LIMIT = "20"
MEMORY_BYTES = 4 << 30

TRAIN = ["train", "--system", SYSTEM, "--workload", WORKLOAD]
# the tiny model on two servers, the second of another chip (fp16: both compute it)
TRAIN_TWO_CHIPS = TRAIN + ["--set", "workload.parallel.dp=4", "--set",
                           "workload.training.precision=fp16", "--set",
                           "cluster.node_types=1:" + OTHER_CHIP]
SERVE = ["serve", "--system", SYSTEM, "--workload", SERVE_WORKLOAD, "--set",
         "workload.serving.requests.count=40", "--set", "workload.serving.parallel.tp=8"]

SYSTEM_RUNS = [
    ["validate", "--system", SYSTEM],
    ["op", "--system", SYSTEM, "--op", "matmul", "--shape", "4096,4096,4096"],
    ["op", "--system", SYSTEM, "--op", "matmul", "--shape", "8192,8192,8192", "--dtype", "fp32",
     "--explain"],
    ["op", "--system", SYSTEM, "--op", "attention_fwd", "--shape", "1,32,4096,128", "--causal"],
    ["op", "--system", SYSTEM, "--op", "softmax", "--shape", "8192,4096", "--explain"],
    ["op", "--system", SYSTEM, "--op", "gelu", "--shape", "4096", "--sweep"],
    ["coll", "--system", SYSTEM, "--op", "allreduce", "--ranks", "16", "--sizes", "1:1G:1024",
     "--fidelity", "analytic"],
    ["coll", "--system", SYSTEM, "--op", "alltoall", "--ranks", "16", "--sizes", "1K:64M:256",
     "--fidelity", "flow", "--links"],
    ["replay", "--system", SYSTEM, "--trace", "traces/mixed.json", "--fidelity", "analytic"],
    ["replay", "--system", SYSTEM, "--trace", "traces/mixed.json", "--fidelity", "flow"],
    TRAIN,
    TRAIN + ["--fidelity", "flow"],
    TRAIN_TWO_CHIPS,
    ["cluster", "--system", SYSTEM, "--job", "tests/data/cluster/exchange16.json@spread",
     "--job", "tests/data/cluster/exchange16_half.json@spread"],
    SERVE,
]
WORKLOAD_RUNS = [
    ["validate", "--system", SYSTEM, "--workload", WORKLOAD],
    TRAIN,
    SERVE,
]
FORMATS = ["json", "table", "csv"]

NUMBER = r"([-0-9.e+]+)"
RANGE = re.compile(r"(an integer|a number) (0 or )?in ([\[(])%s, %s\]" % (NUMBER, NUMBER))
# list keys: "FACTOR in [LO, HI]" or "FACTOR 0 or in [LO, HI]"; "T in [LO, HI] s"
FACTOR = re.compile(r"FACTOR (0 or )?in \[%s, %s\]" % (NUMBER, NUMBER))
TIME = re.compile(r"T (0 or )?in \[%s, %s\]" % (NUMBER, NUMBER))
# the same ranges as earlier schemas wrote them: "0 < FACTOR <= 100", "0 <= FACTOR <= 1"
FACTOR_BETWEEN = re.compile(r"%s (<=?) FACTOR <= %s" % (NUMBER, NUMBER))


def least_above(lo):
    """The least double above lo that strtod reads without a range error."""
    return sys.float_info.min if lo == 0 else math.nextafter(lo, math.inf)


def factor_range(text):
    """(least, greatest) factor a list key's text accepts."""
    m = FACTOR.search(text)
    if m:
        return float(m.group(2)), float(m.group(3))
    m = FACTOR_BETWEEN.search(text)
    lo = float(m.group(1))
    return (lo if m.group(2) == "<=" else least_above(lo)), float(m.group(3))


def time_range(text):
    """(least, greatest) time after 0 a fault may strike."""
    m = TIME.search(text)
    if m:
        return least_above(float(m.group(2))), float(m.group(3))
    return least_above(0), 999999999.0  # "T >= 0 s" (times below 1e9 s)


def list_extremes(key, text):
    """Values of a list key at its extremes."""
    if key == "chip.variation.speed_factors":
        lo, hi = factor_range(text)
        return ["3:%r" % lo, "0-7:%r" % lo, "0-7:%r" % hi]  # every job has ranks 0 to 7
    if key == "cluster.faults.links":
        lo, hi = factor_range(text)
        if lo == 0:  # "0 <= FACTOR": the least slow link above dead
            lo = least_above(0)
        t_lo, t_hi = time_range(text)
        out = []
        for kind in ("scale_up", "nic", "uplink"):
            out += ["%s:%r" % (kind, lo), "%s:%r@%r" % (kind, lo, t_lo),
                    "%s:%r@%r" % (kind, lo, t_hi)]
        out += ["scale_up:0@%r" % t_lo, "scale_up:0@%r" % t_hi, "scale_up:%r@%r" % (hi, t_lo),
                "nic:%r,s0.nic0:%r" % (lo, lo)]
        return out
    return []


def extremes(npusim, config):
    """(key, value) for each numeric or list key of config at its bounds."""
    out = subprocess.run([npusim, "schema", "--format", "json"], capture_output=True, text=True,
                         check=True).stdout
    for row in json.loads(out):
        if row["config"] != config:
            continue
        for v in list_extremes(row["key"], row["accepted"]):
            yield row["key"], v
        m = RANGE.match(row["accepted"])
        if not m:
            continue
        integer = m.group(1) == "an integer"
        lo, hi = float(m.group(4)), float(m.group(5))
        if m.group(3) == "(":
            lo = lo + 1 if integer else least_above(lo)
        values = [lo, hi] + ([0] if m.group(2) else [])
        for v in values:
            yield row["key"], (str(int(v)) if integer else repr(v))


# ---- what a right output is ----

NONFINITE = re.compile(r"(?<![\w.+-])[-+]?(inf|nan|INF|NAN)(?![\w.+-])")
# times that must be positive: JSON keys and CSV columns, table rows and columns
POSITIVE_KEYS = {"step_time_s", "time_us", "time_s", "makespan_s", "together_s",
                 "step_time_alone_s", "step_time_together_s"}
POSITIVE_COLUMNS = {"time_us", "alone_ms", "together_ms"}
POSITIVE_ROWS = [re.compile(r"^step time:?\s+(\S+)"), re.compile(r"completed in (\S+) s")]


def reject(constant):
    raise ValueError("not JSON: " + constant)


def positive(value, where):
    if not (isinstance(value, (int, float)) and value > 0):
        raise ValueError("%s: expected a time above 0, found %r" % (where, value))


def check_json(value, where="", top=True):
    """Every number finite (parse_constant refuses the rest); the times positive.
    Returns how many times were checked."""
    n = 0
    if isinstance(value, dict):
        for k, v in value.items():
            # time_s is the op's time at the top; elsewhere (serve's parts) it may be 0
            if k in POSITIVE_KEYS and (k != "time_s" or top):
                positive(v, where + "." + k)
                n += 1
            n += check_json(v, where + "." + k, False)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            n += check_json(v, "%s[%d]" % (where, i), top and isinstance(v, dict))
    elif isinstance(value, float) and value != value:
        raise ValueError(where + ": NaN")
    return n


def check_csv(text):
    import csv
    import io
    rows = list(csv.reader(io.StringIO(text)))
    header, n = None, 0
    for row in rows:
        if not row:
            header = None
            continue
        if header is None:
            header = row
            continue
        for name, v in zip(header, row):
            if name in POSITIVE_KEYS:
                positive(float(v), "column " + name)
                n += 1
    return n


def check_table(text):
    n = 0
    header = None
    for line in text.splitlines():
        if not line.strip():
            header = None
            continue
        for rx in POSITIVE_ROWS:
            m = rx.search(line)
            if m:
                positive(float(m.group(1)), "row: " + line.strip()[:60])
                n += 1
        words = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", line)]
        if any(w[2] in POSITIVE_COLUMNS for w in words):
            header = words
            continue
        if header:
            for _, end, name in header:
                if name not in POSITIVE_COLUMNS:
                    continue
                under = [w for w in words if w[1] == end]  # numbers are right-aligned
                if under:
                    positive(float(under[0][2]), "column %s: %s" % (name, line.strip()[:60]))
                    n += 1
    return n


def check_output(fmt, text):
    """Raises ValueError for an output that is not whole and right; returns how
    many positive times it checked."""
    if fmt == "json":
        return check_json(json.loads(text, parse_constant=reject))
    m = NONFINITE.search(text)
    if m:
        line = text[:m.start()].count("\n") + 1
        raise ValueError("line %d prints %r" % (line, m.group()))
    return check_csv(text) if fmt == "csv" else check_table(text)


def sanitized(npusim):
    """AddressSanitizer reserves terabytes of address space: no memory limit there."""
    with open(npusim, "rb") as f:
        return b"__asan_init" in f.read()


def run(npusim, limit_memory, args, fmt):
    """None if the run is right, or what is wrong with it; and the times it checked."""
    cmd = [npusim] + args + ["--format", fmt, "--time-limit", TIME_LIMIT]
    what = " ".join(cmd[1:])

    def limits():
        if limit_memory:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, preexec_fn=limits)
    except subprocess.TimeoutExpired:
        return what + ": ran past 120 s despite --time-limit", 0
    except UnicodeDecodeError:
        return what + ": output is not UTF-8", 0
    if p.returncode == 0:
        try:
            return None, check_output(fmt, p.stdout)
        except ValueError as e:
            return "%s: exit 0 with a wrong %s output: %s: %s" % (what, fmt, e, p.stdout[:200]), 0
    lines = p.stderr.splitlines()
    if p.returncode == 2 and len(lines) == 1 and p.stdout == "":
        return None, 0
    return "%s: exit %d, %d stderr lines: %s" % (what, p.returncode, len(lines),
                                                 p.stderr[:300].replace("\n", " | ")), 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("npusim")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--keys", default="", help="only keys matching this regular expression")
    ap.add_argument("--stride", type=int, default=1, help="every K-th key only")
    a = ap.parse_args()
    if a.stride < 1:
        sys.exit("extreme_json: --stride: expected an integer of at least 1, found %d" % a.stride)
    formats = a.formats.split(",")
    keys = re.compile(a.keys)
    limit_memory = not sanitized(a.npusim)

    # the checks must see the times they hold: each run at its shipped values
    # prints at least one, in every format
    base = [(args, fmt) for args in SYSTEM_RUNS if args[0] != "validate" for fmt in formats]
    jobs, last, nkeys = [], None, 0
    for config, runs in (("system", SYSTEM_RUNS), ("workload", WORKLOAD_RUNS)):
        for key, v in extremes(a.npusim, config):
            if not keys.search(key):
                continue
            if key != last:  # a key's extremes come one after another
                last, nkeys = key, nkeys + 1
            if (nkeys - 1) % a.stride == 0:
                jobs += [(args + ["--set", "%s=%s" % (key, v)], fmt) for args in runs
                         for fmt in formats]
    failures = 0
    workers = max(2, min(8, os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for (args, fmt), (err, times) in zip(base, pool.map(
                lambda j: run(a.npusim, limit_memory, *j), base)):
            if err or times == 0:
                failures += 1
                print("FAIL %s" % (err or "%s --format %s: no time checked in the output of the "
                                   "shipped config" % (" ".join(args), fmt)))
        for err, _ in pool.map(lambda j: run(a.npusim, limit_memory, *j), jobs):
            if err:
                failures += 1
                print("FAIL " + err)
    print("extreme configs: %d runs, %d failed" % (len(base) + len(jobs), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
