#!/usr/bin/env python3
"""metamorphic.py NPUSIM - relations between runs of every command (coll, op,
replay, train, serve, cluster) that hold whatever the right answer is, so
they catch wrong answers no golden number pins (issue #26). Run from the
repository root.

  faster     more bandwidth is never slower: each of the system's link
             bandwidths (scale-up, die, supernode, NIC), its HBM and L2
             bandwidth and its chip clock doubled by --set, one at a time and
             all at once, never raises a time: coll's time_us per size, op's
             time_s, replay's and train's step_time_s, serve's TTFT, TPOT and
             end-to-end latency (mean, p50, p90, p99), under load and with
             requests served apart (see SERVE_APART), cluster's time together
             and each job's step alone and together;
  same       the same input twice gives the same bytes: every command in
             every --format (coll also in its --style tables), and the files
             beside (--chrome-trace, --emit-trace, --timeseries);
  cluster    one job in `cluster` is `replay` of its trace: its step alone
             and together equal replay's step_time_s, and the run together
             takes --steps of them, for --steps 1 and 3, in both fidelities;
  emitted    train's --emit-trace and --emit-chakra replay to train's step
             time (both fidelities), with and without chip.variation (the
             replay given the same system, variation included);
  alone      serve at a rate near 0 (1e-4 requests/s: arrivals hours apart,
             each request meets an empty system) gives every request the
             TTFT, TPOT and end-to-end latency of a run of that request alone.

Values are compared as npusim prints them: exactly (a time that is not larger
does not print larger). The one sum compared, cluster's time together against
--steps replay steps, is held to the printing: 9 significant digits of each of
the --steps + 1 numbers.

Controls show the checks can fail: halving every bandwidth and the clock
makes a collective slower, two clocks give different bytes, requests
arriving together do not each see an empty system (each counted as a pair
of its relation).

Each relation prints its pairs checked and every failure (FAIL lines); exit
0 when all hold, 1 otherwise. About 300 npusim runs, most well under a second.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

NPUSIM = None
TMP = None
SYS_910B = "configs/systems/ascend-910b.json"
SYS_910C = "configs/systems/ascend-910c-cm384.json"
SYS_H100 = "configs/systems/h100-dgx.json"
TINY = "tests/data/train/tiny.json"
TINY_MOE = "tests/data/train/tiny-moe.json"
TRACES = ["traces/two_ranks_p2p.json", "traces/pipeline_4stage.json", "traces/mixed.json",
          "traces/tp_overlap.json.gz"]
EXCHANGE = "tests/data/cluster/exchange16.json"
EXCHANGE_HALF = "tests/data/cluster/exchange16_half.json"
SERVE_8B = "configs/workloads/serve-llama3-8b.json"
SERVE_70B = "configs/workloads/serve-llama2-70b-tp8.json"
SERVE_SMALL = ["--set", "serving.requests.count=24"]
# "faster" also serves requests apart (each meets an idle deployment): a
# request's latency is then a sum of step times, which a faster chip cannot
# raise. Under load a faster step could in principle make a request miss an
# iteration boundary (continuous batching's scheduling anomaly); the loaded
# cases hold today, the apart ones hold by construction. A throttled matmul that
# kept the plan chosen at a doubled clock made both fail (issue #27).
SERVE_APART = ["--set", "serving.requests.count=12", "--set", "serving.requests.rate_per_s=1e-4"]
# the keys "faster" doubles: every bandwidth and clock of the system
FASTER_KEYS = ("node.scale_up.link_bandwidth_GBps", "node.die_link.bandwidth_GBps",
               "cluster.supernode.link_bandwidth_GBps", "cluster.scale_out.nic_bandwidth_GBps",
               "chip.hbm.bandwidth_GBps", "chip.l2.bandwidth_GBps", "chip.freq_GHz")
STATS = ("mean", "p50", "p90", "p99")


class Relation:
    """One relation: the pairs checked and the ones that failed."""

    def __init__(self, name, what):
        self.name, self.what = name, what
        self.pairs, self.failures = 0, []

    def check(self, label, holds, detail=""):
        self.pairs += 1
        if not holds:
            self.failures.append(f"{label}: {detail}")
            print(f"FAIL {self.name}: {label}: {detail}", flush=True)

    def broken(self, label, detail):
        """A run the relation needed failed: counts as a failed pair."""
        self.check(label, False, detail)


def run(args, label=None):
    """npusim ARGS: (exit status, stdout bytes, stderr text)."""
    try:
        p = subprocess.run([NPUSIM] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=300)
    except subprocess.TimeoutExpired:
        return None, b"", f"{label or args[0]}: still running after 300 s"
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace").strip()


def run_json(rel, label, args):
    """The JSON npusim prints for ARGS (--format json added), or None after
    recording the failure on REL."""
    code, out, err = run(args + ["--format", "json"], label)
    if code != 0:
        rel.broken(label, f"exit {code}: {err[-300:]}")
        return None
    try:
        return json.loads(out)
    except ValueError as e:
        rel.broken(label, f"stdout is not JSON: {e}")
        return None


# ---- faster: more bandwidth is never slower ---------------------------------

def resolved_system(path):
    code, out, err = run(["validate", "--system", path, "--format", "json"])
    if code != 0:
        raise SystemExit(f"metamorphic: npusim validate --system {path}: {err}")
    return json.loads(out)


def upper_bounds():
    """Each FASTER_KEYS key's largest accepted value (npusim schema)."""
    code, out, err = run(["schema", "--format", "json"])
    if code != 0:
        raise SystemExit(f"metamorphic: npusim schema: {err}")
    bounds = {}
    for k in json.loads(out):
        m = re.search(r"in \[[^,]+, ([0-9.e+]+)\]", k["accepted"])
        if k["key"] in FASTER_KEYS and m:
            bounds[k["key"]] = float(m.group(1))
    return bounds


def faster_sets(system, bounds, factor=2.0):
    """[(name, --set arguments)]: each key the system has (non-zero) times
    FACTOR (within its accepted range), then all of them at once."""
    conf = resolved_system(system)
    sets = []
    for key in FASTER_KEYS:
        node = conf
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, (int, float)) and node > 0:
            value = min(factor * node, bounds.get(key, factor * node))
            if value != node:
                sets.append((key, ["--set", f"{key}={value!r}"]))
    every = [a for _, s in sets for a in s]
    return sets + [("all of them", every)]


def coll_times(d):
    return {f"{r['op']} {r['bytes']} B time_us": r["time_us"] for r in d}


def op_time(d):
    return {"time_s": d["time_s"]}


def step_time(d):
    return {"step_time_s": d["step_time_s"]}


def serve_times(d):
    return {f"{m} {s}": d[m][s] for m in ("ttft_s", "tpot_s", "e2e_s") for s in STATS}


def cluster_times(d):
    out = {"together_s": d["together_s"]}
    for j in d["jobs"]:
        out[f"job {j['job']} step_time_alone_s"] = j["step_time_alone_s"]
        out[f"job {j['job']} step_time_together_s"] = j["step_time_together_s"]
    return out


FASTER_CASES = [  # (label, system, arguments, the times of its JSON)
    ("coll allreduce flow", SYS_910B, ["coll", "--op", "allreduce", "--ranks", "16",
                                       "--sizes", "64K:64M:16"], coll_times),
    ("coll allreduce analytic", SYS_910B, ["coll", "--op", "allreduce", "--ranks", "16",
                                           "--sizes", "64K:64M:16", "--fidelity", "analytic"],
     coll_times),
    ("coll alltoall flow", SYS_910B, ["coll", "--op", "alltoall", "--ranks", "16",
                                      "--sizes", "1M:16M:16"], coll_times),
    ("coll allgather flow, supernode and dies", SYS_910C,
     ["coll", "--op", "allgather", "--ranks", "64", "--sizes", "1M:16M:16"], coll_times),
    ("op matmul", SYS_910B, ["op", "--op", "matmul", "--shape", "4096,4096,4096"], op_time),
    ("op attention_fwd", SYS_910B, ["op", "--op", "attention_fwd", "--shape",
                                    "1,32,4096,128", "--causal"], op_time),
    ("op rmsnorm", SYS_910B, ["op", "--op", "rmsnorm", "--shape", "8192,4096"], op_time),
    ("op attention_decode on h100", SYS_H100, ["op", "--op", "attention_decode", "--shape",
                                               "16,32,4096,128,8"], op_time),
] + [
    (f"replay {os.path.basename(t)}", SYS_910B, ["replay", "--trace", t], step_time)
    for t in TRACES
] + [
    ("train tiny analytic", SYS_910B, ["train", "--workload", TINY], step_time),
    ("train tiny flow", SYS_910B, ["train", "--workload", TINY, "--fidelity", "flow"], step_time),
    ("train tiny-moe analytic", SYS_910B, ["train", "--workload", TINY_MOE], step_time),
    ("serve llama3-8b", SYS_H100, ["serve", "--workload", SERVE_8B] + SERVE_SMALL, serve_times),
    ("serve llama2-70b tp8", SYS_H100, ["serve", "--workload", SERVE_70B] + SERVE_SMALL,
     serve_times),
    ("serve llama3-8b, requests apart", SYS_H100, ["serve", "--workload", SERVE_8B] + SERVE_APART,
     serve_times),
    ("serve llama2-70b tp8, requests apart", SYS_H100, ["serve", "--workload", SERVE_70B] +
     SERVE_APART, serve_times),
    ("cluster two exchanges spread", SYS_910B, ["cluster", "--job", f"{EXCHANGE}@spread",
                                                "--job", f"{EXCHANGE_HALF}@spread"],
     cluster_times),
    ("cluster a train step and a trace", SYS_910B,
     ["cluster", "--job", TINY, "--job", "traces/tp_overlap.json.gz", "--fidelity", "flow"],
     cluster_times),
]


def faster(rel):
    bounds = upper_bounds()
    sets_of = {}
    for label, system, args, times in FASTER_CASES:
        sets = sets_of.setdefault(system, faster_sets(system, bounds))
        base_d = run_json(rel, f"{label} (base)", args + ["--system", system])
        if base_d is None:
            continue
        base = times(base_d)
        for name, sets_args in sets:
            d = run_json(rel, f"{label}, {name} x2", args + ["--system", system] + sets_args)
            if d is None:
                continue
            got = times(d)
            worse = {k: (base[k], got.get(k)) for k in base
                     if got.get(k) is None or got[k] > base[k]}
            rel.check(f"{label}, {name} x2", not worse,
                      "slower: " + "; ".join(f"{k} {a} -> {b}" for k, (a, b) in
                                             list(worse.items())[:4]))
    # control: everything halved is slower, so the comparison sees a slowdown
    label, system, args, times = FASTER_CASES[0]
    halved = faster_sets(system, bounds, 0.5)[-1][1]
    base_d = run_json(rel, "control (base)", args + ["--system", system])
    slow_d = run_json(rel, "control: all halved", args + ["--system", system] + halved)
    if base_d and slow_d:
        base, slow = times(base_d), times(slow_d)
        rel.check(f"control: {label}, all halved is slower", all(slow[k] > base[k] for k in base),
                  f"{base} -> {slow}")


# ---- same: the same input twice gives the same bytes ------------------------

SAME_CASES = [  # (label, arguments, output files it also writes)
    ("coll", ["coll", "--system", SYS_910B, "--op", "allreduce", "--ranks", "16",
              "--sizes", "1M:16M:4", "--links"], []),
    ("op", ["op", "--system", SYS_910B, "--op", "matmul", "--shape", "4096,4096,4096",
            "--explain"], []),
    ("replay", ["replay", "--system", SYS_910B, "--trace", "traces/mixed.json",
                "--chrome-trace", "{tmp}/replay.trace.json"], ["replay.trace.json"]),
    ("train", ["train", "--system", SYS_910B, "--workload", TINY, "--fidelity", "flow",
               "--chrome-trace", "{tmp}/train.trace.json.gz",
               "--emit-trace", "{tmp}/train.step.json"],
     ["train.trace.json.gz", "train.step.json"]),
    ("serve", ["serve", "--system", SYS_H100, "--workload", SERVE_8B] + SERVE_SMALL +
     ["--timeseries", "{tmp}/serve.csv", "--chrome-trace", "{tmp}/serve.trace.json"],
     ["serve.csv", "serve.trace.json"]),
    ("cluster", ["cluster", "--system", SYS_910B, "--job", f"{EXCHANGE}@spread",
                 "--job", f"{EXCHANGE_HALF}@spread", "--chrome-trace",
                 "{tmp}/cluster.trace.json"], ["cluster.trace.json"]),
]


def same(rel):
    for label, args, files in SAME_CASES:
        variants = [["--format", f] for f in ("table", "json", "csv")]
        if label == "coll":
            variants += [["--style", "nccl-tests"], ["--style", "hccl-test"]]
        for fmt in variants:
            outputs = []
            for attempt in range(2):
                folder = os.path.join(TMP, f"same{attempt}")
                os.makedirs(folder, exist_ok=True)
                argv = [a.replace("{tmp}", folder) for a in args]
                if fmt[0] == "--style":   # the nccl-tests tables take no --links
                    argv = [a for a in argv if a != "--links"]
                code, out, err = run(argv + fmt, label)
                blobs = [out]
                for name in files:
                    try:
                        with open(os.path.join(folder, name), "rb") as f:
                            blobs.append(f.read())
                    except OSError as e:
                        blobs.append(f"missing: {e}".encode())
                outputs.append((code, err, blobs))
            what = f"{label} {' '.join(fmt)}"
            (c1, e1, b1), (c2, e2, b2) = outputs
            if c1 != 0:
                rel.broken(what, f"exit {c1}: {e1[-300:]}")
                continue
            differ = [(["stdout"] + files)[k] for k in range(len(b1)) if b1[k] != b2[k]]
            rel.check(what, c1 == c2 and not differ, f"the second run differs in {differ}")
    # control: another clock, other bytes
    args = SAME_CASES[1][1] + ["--format", "json"]
    a, b = run(args), run(args + ["--set", "chip.freq_GHz=1.7"])
    rel.check("control: op at another clock gives other bytes", a[0] == 0 and a[1] != b[1],
              "the same bytes")


# ---- cluster: one job is replay of its trace -------------------------------

def one_job(rel):
    for fid in ("analytic", "flow"):
        for trace in TRACES:
            r = run_json(rel, f"replay {trace} {fid}", ["replay", "--system", SYS_910B,
                                                        "--trace", trace, "--fidelity", fid])
            if r is None:
                continue
            step = r["step_time_s"]
            for steps in (1, 3):
                label = f"{os.path.basename(trace)} {fid} --steps {steps}"
                c = run_json(rel, label, ["cluster", "--system", SYS_910B, "--job", trace,
                                          "--steps", str(steps), "--fidelity", fid])
                if c is None:
                    continue
                job = c["jobs"][0]
                rel.check(f"{label}: step alone = replay's step",
                          job["step_time_alone_s"] == step,
                          f"cluster {job['step_time_alone_s']}, replay {step}")
                rel.check(f"{label}: step together = replay's step",
                          job["step_time_together_s"] == step,
                          f"cluster {job['step_time_together_s']}, replay {step}")
                # printed to 9 significant digits: each of the steps + 1 numbers
                # is within half a unit of the 9th digit of its value
                slack = 5e-9 * (steps * step + c["together_s"])
                rel.check(f"{label}: together = {steps} x replay's step",
                          abs(c["together_s"] - steps * step) <= slack,
                          f"together {c['together_s']}, {steps} x {step} = {steps * step}")


# ---- emitted: --emit-trace and --emit-chakra replay to train's step ---------

def emitted(rel):
    variations = [("no variation", []),
                  ("rank 1 at 0.8", ["--set", "chip.variation.speed_factors=1:0.8"]),
                  ("speed_sigma 0.05", ["--set", "chip.variation.speed_sigma=0.05"]),
                  ("jitter_sigma 0.05", ["--set", "chip.variation.jitter_sigma=0.05"])]
    for fid in ("analytic", "flow"):
        for vname, vset in variations:
            label = f"tiny {fid}, {vname}"
            prefix = os.path.join(TMP, f"emit_{fid}_{len(vset)}_{vname[:4]}")
            t = run_json(rel, f"{label}: train", ["train", "--system", SYS_910B, "--workload",
                                                  TINY, "--fidelity", fid] + vset +
                         ["--emit-trace", prefix + ".json", "--emit-chakra", prefix])
            if t is None:
                continue
            for what, extra in (("--emit-trace", ["--trace", prefix + ".json"]),
                                ("--emit-chakra", ["--trace", prefix, "--comm-group",
                                                   prefix + ".comm_groups.json"])):
                r = run_json(rel, f"{label}: replay of {what}", ["replay", "--system", SYS_910B,
                                                                 "--fidelity", fid] + vset +
                             extra)
                if r is None:
                    continue
                rel.check(f"{label}: replay of {what} = train's step",
                          r["step_time_s"] == t["step_time_s"] and r["ranks"] == t["npus"],
                          f"replay {r['step_time_s']} on {r['ranks']} ranks, train "
                          f"{t['step_time_s']} on {t['npus']}")


# ---- alone: serve at a rate near 0 = each request alone ----------------------

def alone(rel):
    shapes = [(512, 64), (2048, 16)]
    for system, workload in ((SYS_H100, SERVE_8B), (SYS_H100, SERVE_70B)):
        for prompt, output in shapes:
            fixed = ["--set", "serving.requests.prompt.distribution=fixed",
                     "--set", f"serving.requests.prompt.mean={prompt}",
                     "--set", f"serving.requests.prompt.max={prompt}",
                     "--set", "serving.requests.output.distribution=fixed",
                     "--set", f"serving.requests.output.mean={output}",
                     "--set", f"serving.requests.output.max={output}"]
            label = f"{os.path.basename(workload)} prompt {prompt} output {output}"
            base = ["serve", "--system", system, "--workload", workload] + fixed
            one = run_json(rel, f"{label}: one request", base + [
                "--set", "serving.requests.count=1"])
            many = run_json(rel, f"{label}: 5 requests at 1e-4/s", base + [
                "--set", "serving.requests.count=5", "--set", "serving.requests.rate_per_s=1e-4"])
            if one is None or many is None:
                continue
            for m in ("ttft_s", "tpot_s", "e2e_s"):
                rel.check(f"{label}: {m}", all(many[m][s] == one[m]["mean"] for s in STATS),
                          f"5 requests apart {many[m]}, one alone {one[m]['mean']}")
            if (prompt, output) == shapes[0] and workload == SERVE_8B:
                # control: 5 requests at once share the batch, so they differ
                jam = run_json(rel, f"{label}: 5 requests at once", base + [
                    "--set", "serving.requests.count=5", "--set",
                    "serving.requests.rate_per_s=0"])
                if jam:
                    rel.check("control: 5 requests at once are not each alone",
                              jam["e2e_s"]["p99"] != one["e2e_s"]["mean"],
                              f"together {jam['e2e_s']}, alone {one['e2e_s']['mean']}")


RELATIONS = [
    ("faster", "more bandwidth or clock is never slower", faster),
    ("same", "the same input twice gives the same bytes", same),
    ("cluster", "one job in cluster = replay of its trace, per step", one_job),
    ("emitted", "--emit-trace and --emit-chakra replay to train's step", emitted),
    ("alone", "serve at rate -> 0 = each request alone", alone),
]


def main():
    global NPUSIM, TMP
    if len(sys.argv) < 2:
        print("usage: metamorphic.py NPUSIM [RELATION...]", file=sys.stderr)
        return 2
    NPUSIM = os.path.abspath(sys.argv[1])
    only = set(sys.argv[2:])
    results = []
    with tempfile.TemporaryDirectory(prefix="metamorphic.") as tmp:
        TMP = tmp
        for name, what, fn in RELATIONS:
            if only and name not in only:
                continue
            rel = Relation(name, what)
            fn(rel)
            print(f"{'ok  ' if not rel.failures else 'FAIL'} {name} ({what}): {rel.pairs} pairs "
                  f"checked, {len(rel.failures)} failed", flush=True)
            results.append(rel)
    print()
    for rel in results:
        print(f"{rel.name:8} {rel.pairs:4} pairs, {len(rel.failures):3} failed  {rel.what}")
        for f in rel.failures:
            print(f"         - {f}")
    failed = sum(len(r.failures) for r in results)
    print(f"metamorphic: {failed} failure(s)" if failed else "metamorphic: all relations hold")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
