#!/usr/bin/env python3
"""extreme_json.py NPUSIM - every command's --format json on extreme configs.

Each numeric key of the system and workload schemas (`npusim schema --format
json`) is set to the least and the greatest value it accepts, one at a time, and
every command runs with --format json on it (op: a matmul, an attention and a
vector op; coll in both fidelities; replay of a sample trace in both; train;
validate). Each run must either exit 0 with JSON on stdout whose numbers are all
finite (no inf, nan: not JSON), or exit 2 with one line on stderr and nothing on
stdout (a plan the rules refuse, or the time limit). Anything else (a crash, an
abort with pages of stderr, exit 1) fails. Runs from the repository root; each
run has --time-limit and a memory ulimit so that a runaway is a failure, not a hang.
"""
import concurrent.futures
import json
import os
import re
import resource
import subprocess
import sys

NPUSIM = sys.argv[1]
SYSTEM = "configs/systems/ascend-910b.json"
WORKLOAD = "tests/data/train/tiny.json"
TIME_LIMIT = "20"
MEMORY_BYTES = 4 << 30

# (system_key_matters, workload_key_matters, args)
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
    ["train", "--system", SYSTEM, "--workload", WORKLOAD],
    ["cluster", "--system", SYSTEM, "--job", "tests/data/cluster/exchange16.json@spread",
     "--job", "tests/data/cluster/exchange16_half.json@spread"],
]
WORKLOAD_RUNS = [
    ["validate", "--system", SYSTEM, "--workload", WORKLOAD],
    ["train", "--system", SYSTEM, "--workload", WORKLOAD],
]

RANGE = re.compile(r"(an integer|a number) (0 or )?in ([\[(])([-0-9.e+]+), ([-0-9.e+]+)\]")


def extremes(config):
    """(key, value) for each numeric key of config at its bounds."""
    out = subprocess.run([NPUSIM, "schema", "--format", "json"], capture_output=True, text=True,
                         check=True).stdout
    for row in json.loads(out):
        if row["config"] != config:
            continue
        m = RANGE.match(row["accepted"])
        if not m:
            continue
        integer = m.group(1) == "an integer"
        lo, hi = float(m.group(4)), float(m.group(5))
        if m.group(3) == "(":
            lo = lo + 1 if integer else lo * (1 + 1e-12) + 1e-300
        values = [lo, hi] + ([0] if m.group(2) else [])
        for v in values:
            yield row["key"], (str(int(v)) if integer else repr(v))


def reject(constant):
    raise ValueError("not JSON: " + constant)


def finite(value, where):
    if isinstance(value, float) and value != value:  # cannot happen after parse_constant
        raise ValueError(where + ": NaN")
    if isinstance(value, dict):
        for k, v in value.items():
            finite(v, where)
    elif isinstance(value, list):
        for v in value:
            finite(v, where)


def sanitized():
    """AddressSanitizer reserves terabytes of address space: no memory limit there."""
    with open(NPUSIM, "rb") as f:
        return b"__asan_init" in f.read()


SANITIZED = sanitized()


def limits():
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def run(args):
    cmd = [NPUSIM] + args + ["--format", "json", "--time-limit", TIME_LIMIT]
    what = " ".join(cmd[1:])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, preexec_fn=limits)
    except subprocess.TimeoutExpired:
        return what + ": ran past 120 s despite --time-limit"
    except UnicodeDecodeError:
        return what + ": output is not UTF-8"
    if p.returncode == 0:
        try:
            finite(json.loads(p.stdout, parse_constant=reject), what)
        except ValueError as e:
            return "%s: exit 0 with bad JSON: %s: %s" % (what, e, p.stdout[:200])
        return None
    lines = p.stderr.splitlines()
    if p.returncode == 2 and len(lines) == 1 and p.stdout == "":
        return None
    return "%s: exit %d, %d stderr lines: %s" % (what, p.returncode, len(lines),
                                                 p.stderr[:300].replace("\n", " | "))


def main():
    jobs = []
    for key, v in extremes("system"):
        for args in SYSTEM_RUNS:
            jobs.append(args + ["--set", "%s=%s" % (key, v)])
    for key, v in extremes("workload"):
        for args in WORKLOAD_RUNS:
            jobs.append(args + ["--set", "%s=%s" % (key, v)])
    failures = 0
    workers = max(2, min(8, os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for err in pool.map(run, jobs):
            if err:
                failures += 1
                print("FAIL " + err)
    print("extreme configs: %d runs, %d failed" % (len(jobs), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
