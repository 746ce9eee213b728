#!/usr/bin/env python3
"""fuzz_serve.py - random serving deployments through `npusim serve`.

Each seed builds one deployment: a system (910B, H100 or A100 servers), a small
dense or MoE transformer (grouped-query or latent attention), co-located
instances or prefill and decode pools (tp, pp, dp, ep, expert dispatch), the
scheduler (max_num_seqs, token budget, chunked prefill or not, two-batch
overlap, host overhead, CUDA-graph padding; now and then speculative decoding
and prefix caching), the KV cache (block size, dtype, a derived, random or
tight capacity: a tight one holds the longest request and little more, read
from a probe run's kv_bytes_per_token; recompute or swap preemption), and the
requests: a trace written as JSONL, CSV or gzip (bursts, Poisson gaps, requests
far apart, arrivals 10^9 or 10^12 s late; now and then CRLF, a blank last
line, exponents, 12.0 for 12) or the generator (any rate from 0 and
10^-9/s up, fixed, uniform or log-normal lengths); sometimes an --slo and a
--timeseries file. Some values are out of range on purpose.

Oracles on every run: exit 0 with nothing on stderr, or exit 2 with exactly one
line on stderr and nothing on stdout; never another status, a signal or a hang.
On exit 0: the JSON parses with finite numbers only; every request completed;
each latency distribution has 0 <= min <= p50 <= p90 <= p99 <= max and
min <= mean <= max; TTFT > 0 and each TTFT figure at most the e2e one; the
makespan at least the longest e2e; goodput at most the request rate; energy at
least its idle part; KV transfers only when disaggregated, one per request
with more than one output token (traces); the time series has a row per
iteration, each ending no earlier than it starts.

A refusal names the workload, the system or the trace file. One seed in ten
also prints the table: the same exit status, no inf or nan. One seed in five
runs twice: the same bytes. Metamorphic checks, on some trace seeds: the trace shifted by 2^40 s (arrivals
on a 1/64 s grid, exact at that magnitude) prints the same bytes; and the
requests 10^6 s apart give, for each of TTFT, TPOT and e2e, the minimum and
maximum of the same requests run one by one (exactly) and their mean and
percentiles (recomputed from the printed single-request figures, so equal to
the 9 digits npusim prints).

Usage: tests/fuzz/fuzz_serve.py [--npusim PATH] [--seeds A:B] [--time SECONDS]
                             [--jobs N] [--keep DIR] [--quiet]
Python standard library only; the same seed builds the same case."""
import argparse
import concurrent.futures
import gzip
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYSTEMS = ["ascend-910b.json", "h100-dgx.json", "a100-dgx.json"]
NODE_NPUS = 8
TIMEOUT_S = 120
SHIFT_S = 2.0 ** 40  # on a 1/64 s grid, arrivals below 2^46 s stay exact after it


def log_int(rng, lo, hi):
    """An integer in [lo, hi], log-uniform."""
    return min(hi, max(lo, int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))))


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


# ---- the deployment ------------------------------------------------------------

def gen_model(rng):
    heads = rng.choice([4, 8, 16, 32])
    head_dim = rng.choice([32, 64, 128])
    m = {"name": "fuzz", "layers": rng.choice([1, 2, 3, 4, 8, 16]),
         "hidden": heads * head_dim, "heads": heads,
         "kv_heads": rng.choice(divisors(heads)),
         "ffn_hidden": heads * head_dim * rng.choice([2, 3, 4]),
         "vocab": rng.choice([1000, 32000, 128256]),
         "seq_len": rng.choice([512, 2048, 8192]),
         "activation": rng.choice(["gelu", "swiglu"]),
         "norm": rng.choice(["layernorm", "rmsnorm"])}
    if rng.random() < 0.4:
        experts = rng.choice([4, 8, 16, 64])
        moe = {"experts": experts, "top_k": rng.choice([k for k in (1, 2, 4, 8) if k <= experts]),
               "expert_ffn_hidden": heads * head_dim // rng.choice([1, 2, 4]),
               "shared_experts": rng.choice([0, 0, 1])}
        if rng.random() < 0.3:
            moe["dense_layers"] = rng.randrange(0, m["layers"])
        if rng.random() < 0.3 and experts >= 8:
            moe["groups"] = 4
            moe["top_groups"] = rng.choice([1, 2, 4])
        m["moe"] = moe
    if rng.random() < 0.2:
        m["mla"] = {"q_lora_rank": rng.choice([0, 64]), "kv_lora_rank": rng.choice([32, 128]),
                    "qk_nope_head_dim": head_dim, "qk_rope_head_dim": rng.choice([16, 32]),
                    "v_head_dim": head_dim}
    return m


def gen_split(rng, model):
    """One pool's split: tp divides heads (almost always), ep within the MoE."""
    tps = [d for d in divisors(model["heads"]) if d <= NODE_NPUS]
    tp = rng.choice(tps) if rng.random() < 0.97 else rng.choice([3, 5, 6])
    pp = rng.choice([p for p in (1, 1, 2, 4) if p <= model["layers"]])
    dp = rng.choice([1, 1, 2, 4])
    split = {"tp": tp, "pp": pp, "dp": dp}
    if "moe" in model:
        split["ep"] = rng.choice(sorted({1, tp, tp * dp}))
        split["ep_dispatch"] = rng.choice(["direct", "server_dedup"])
    return split


def npus_of(split, instances):
    return split["tp"] * split["pp"] * split["dp"] * instances


def fits(total):
    return total <= NODE_NPUS or (total % NODE_NPUS == 0 and total <= 4 * NODE_NPUS)


def gen_serving(rng, model):
    s = {}
    for _ in range(20):  # most deployments fit the servers; a few may not
        if rng.random() < 0.3:
            p, d = gen_split(rng, model), gen_split(rng, model)
            pi, di = rng.choice([1, 1, 2]), rng.choice([1, 1, 2])
            total = npus_of(p, pi) + npus_of(d, di)
            s = {"prefill": dict(p, instances=pi), "decode": dict(d, instances=di)}
        else:
            c, n = gen_split(rng, model), rng.choice([1, 1, 2, 3])
            total = npus_of(c, n)
            s = {"instances": n, "parallel": c}
        if fits(total) or rng.random() < 0.05:
            break
    s["weight_dtype"] = rng.choice(["bf16", "bf16", "fp16", "int8"])
    seqs = log_int(rng, 1, 256)
    s["scheduler"] = {"max_num_seqs": seqs,
                      "max_batched_tokens": log_int(rng, seqs if rng.random() < 0.95 else 1,
                                                    16384),
                      "chunked_prefill": rng.random() < 0.7,
                      "two_batch_overlap": "moe" in model and rng.random() < 0.5}
    if rng.random() < 0.2:
        s["scheduler"]["iteration_overhead_us"] = rng.choice([0.1, 50, 1000])
    s["kv_cache"] = {"block_tokens": rng.choice([1, 16, 16, 128]),
                     "dtype": rng.choice(["bf16", "fp16", "int8"]),
                     "preemption": rng.choice(["recompute", "swap"])}
    if rng.random() < 0.2:
        s["kv_cache"]["swap_bandwidth_GBps"] = rng.choice([0.01, 25, 1000])
    gen_effects(random.Random(json.dumps(s, sort_keys=True)), s)
    return s


def gen_effects(rng, s):
    """Speculative decoding, prefix caching, CUDA-graph padding, now and then; drawn from
    their own generator (seeded by the deployment) so the draws above stay as they were."""
    if rng.random() < 0.2:
        s["speculative"] = {"method": rng.choice(["mtp", "draft"]),
                            "draft_tokens": rng.choice([0, 1, 3]),
                            "acceptance_rate": rng.choice([0, 0.6, 1]),
                            "draft_cost_share": rng.choice([0, 0.1])}
    if rng.random() < 0.2:
        s["prefix_cache"] = {"shared_prefix_tokens": rng.choice([0, 16, 100, 1000]),
                             "hit_rate": rng.choice([0, 0.5, 1])}
    if rng.random() < 0.2:
        s["scheduler"]["cuda_graph_max_batch"] = rng.choice([0, 8, 256])


def gen_trace(rng, model):
    """[(arrival_s, prompt_tokens, output_tokens)] in time order."""
    n = log_int(rng, 1, 48)
    ctx = model["seq_len"]
    pattern = rng.choice(["burst", "poisson", "poisson", "far", "mixed"])
    base = rng.choice([0.0, 0.0, 0.0, 1e9, 1e12])
    gap = rng.choice([0.001, 0.05, 1.0])
    decode_heavy = rng.random() < 0.5  # short prompts, long outputs: the cache grows
    out, t = [], 0.0
    for i in range(n):
        if pattern == "poisson" or (pattern == "mixed" and rng.random() < 0.5):
            t += rng.expovariate(1 / gap) if i else 0.0
        elif pattern == "far":
            t += 1e6 if i else 0.0
        prompt = log_int(rng, 1, max(1, min(ctx - 1, 256 if decode_heavy else 4096)))
        most = max(1, min(ctx - prompt, 1024 if decode_heavy else 512))
        output = (1 if rng.random() < 0.15 else
                  log_int(rng, min(most, 64) if decode_heavy else 1, most))
        out.append((round((base + t) * 64) / 64, prompt, output))
    return out


def write_trace(path_base, reqs, kind, style="plain"):
    """The trace as JSONL, CSV (columns in another order) or gzip; its path.
    style: plain, crlf (CRLF line ends), blank_end (a blank line after the
    last), exp (arrivals in exponent notation), floats (token counts as 12.0)."""
    def num(v, is_time):
        if is_time:
            return f"{v:.17e}" if style == "exp" else repr(v)
        return f"{v}.0" if style == "floats" else str(v)

    if kind.startswith("csv"):
        lines = ["output_tokens,arrival_s,prompt_tokens"] + [
            f"{num(o, False)},{num(a, True)},{num(p, False)}" for a, p, o in reqs]
        path = path_base + ".csv"
    else:
        lines = [f'{{"arrival_s": {num(a, True)}, "prompt_tokens": {num(p, False)}, '
                 f'"output_tokens": {num(o, False)}}}' for a, p, o in reqs]
        path = path_base + ".jsonl"
    end = "\r\n" if style == "crlf" else "\n"
    text = end.join(lines) + end + (end if style == "blank_end" else "")
    if kind.endswith("gz"):
        path += ".gz"
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
    return path


def gen_generator(rng, model):
    ctx = model["seq_len"]

    def lengths(most):
        kind = rng.choice(["fixed", "uniform", "lognormal"])
        lo = log_int(rng, 1, most)
        hi = log_int(rng, lo, most)
        d = {"distribution": kind, "min": lo, "mean": log_int(rng, lo, hi), "max": hi}
        if kind == "lognormal":
            d["sigma"] = rng.choice([0, 0.5, 2])
        return d

    prompt = lengths(max(1, min(ctx // 2, 4096)))
    output = lengths(max(1, min(ctx - prompt["max"], 512)))
    return {"rate_per_s": rng.choice([0, 1e-9, 1e-3, 1, 50, 1e4, 1e9]),
            "count": log_int(rng, 1, 60), "seed": rng.randrange(1000),
            "prompt": prompt, "output": output}


class Case:
    """One seed's deployment, written under dir."""

    def __init__(self, seed, d):
        rng = random.Random(seed)
        self.seed, self.dir = seed, d
        self.system = os.path.join(ROOT, "configs", "systems", rng.choice(SYSTEMS))
        self.model = gen_model(rng)
        self.serving = gen_serving(rng, self.model)
        self.disaggregated = "prefill" in self.serving
        self.trace = gen_trace(rng, self.model) if rng.random() < 0.6 else None
        self.trace_kind = rng.choice(["jsonl", "csv", "jsonl.gz", "csv.gz"])
        extra = random.Random(seed * 7 + 1)  # later additions, leaving the draws above alone
        self.table = extra.random() < 0.1
        if self.trace:
            self.trace_style = extra.choice(["plain"] * 6 + ["crlf", "blank_end", "exp", "floats"])
            if extra.random() < 0.03:  # the last arrival past any span a run can price
                self.trace[-1] = (1e300,) + self.trace[-1][1:]
            self.serving["requests"] = {"trace": write_trace(
                os.path.join(d, "reqs"), self.trace, self.trace_kind, self.trace_style)}
        else:
            self.serving["requests"] = gen_generator(rng, self.model)
        budget = self.serving["scheduler"]["max_batched_tokens"]
        if not self.serving["scheduler"]["chunked_prefill"] and rng.random() < 0.9:
            # whole prompts in one iteration: a budget that holds the longest, mostly
            longest_prompt = (max(p for _, p, _ in self.trace) if self.trace else
                              self.serving["requests"]["prompt"]["max"])
            self.serving["scheduler"]["max_batched_tokens"] = max(budget, longest_prompt)
        self.capacity = rng.choice(["derived", "tight", "tight", "tight", "random"])
        self.capacity_factor = rng.uniform(1.0, 1.5)
        if self.capacity == "random":
            self.serving["kv_cache"]["capacity_GiB"] = round(
                math.exp(rng.uniform(math.log(0.001), math.log(4))), 6)
        self.slo = (f"ttft_ms={rng.choice([1, 100, 5000])},tpot_ms={rng.choice([1, 20, 500])}"
                    if rng.random() < 0.3 else None)
        self.timeseries = rng.random() < 0.25
        self.metamorphic = (self.trace is not None and len(self.trace) <= 4 and
                            rng.random() < 0.5)
        # prefix-cache hits are spread by a request's index: alone, each is request 0
        self.metamorphic &= self.serving.get("prefix_cache", {}).get("hit_rate", 1) in (0, 1)
        self.twice = rng.random() < 0.2

    def workload(self, path, serving=None):
        with open(path, "w") as f:
            json.dump({"name": f"fuzz-{self.seed}", "model": self.model,
                       "serving": serving or self.serving}, f, indent=1)
        return path

    def args(self, workload):
        a = ["serve", "--system", self.system, "--workload", workload, "--format", "json"]
        return a + (["--slo", self.slo] if self.slo else [])

    def longest(self):
        if self.trace:
            return max(p + o for _, p, o in self.trace)
        r = self.serving["requests"]
        return r["prompt"]["max"] + r["output"]["max"]


# ---- running and judging ------------------------------------------------------

def run(npusim, args):
    """(status, stdout, stderr); status None on a timeout."""
    try:
        r = subprocess.run([npusim] + args, capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, "", ""
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def not_finite(text):
    raise ValueError(f"a number that is not finite: {text}")


def judge_status(rc, out, err):
    """Problems with how a run ended; [] when it is exit 0 or a clean refusal."""
    if rc is None:
        return [f"no answer within {TIMEOUT_S} s"]
    if rc == 0:
        return [] if err == "" else [f"exit 0 with stderr {err[:300]!r}"]
    if rc == 2:
        lines = err.split("\n")
        if out != "" or len(lines) != 2 or lines[1] != "" or not lines[0].strip():
            return [f"exit 2 not as one line: stdout {out[:200]!r}, stderr {err[:500]!r}"]
        return []
    return [f"exit status {rc}: {err[:500]!r}"]


def dist_problems(name, d):
    keys = ("min", "p50", "p90", "p99", "max")
    out = []
    if any(not (d[k] >= 0) for k in keys + ("mean",)):
        out.append(f"{name}: a negative figure {d}")
    if any(d[a] > d[b] for a, b in zip(keys, keys[1:])):
        out.append(f"{name}: percentiles out of order {d}")
    if not d["min"] <= d["mean"] <= d["max"]:
        out.append(f"{name}: mean outside [min, max] {d}")
    return out


def judge_result(case, r, nreq):
    p = []
    if r["requests"] != nreq or r["completed"] != r["requests"]:
        p.append(f"completed {r['completed']} of {r['requests']} (expected {nreq} requests)")
    for k in ("ttft_s", "tpot_s", "e2e_s"):
        p += dist_problems(k, r[k])
    t, e = r["ttft_s"], r["e2e_s"]
    if not t["min"] > 0:
        p.append(f"a TTFT of 0: {t}")
    if any(t[k] > e[k] for k in t):
        p.append(f"TTFT above e2e: {t} / {e}")
    if e["max"] > r["makespan_s"]:
        p.append(f"an e2e {e['max']} above the makespan {r['makespan_s']}")
    if r["good_requests"] > r["completed"] or r["goodput_per_s"] > r["requests_per_s"]:
        p.append(f"goodput above the requests: {r['good_requests']}, {r['goodput_per_s']}")
    if not (r["output_tokens_per_s"] > 0 and r["iterations"] >= 1 and r["preemptions"] >= 0):
        p.append("no tokens or iterations")
    en = r["energy"]
    if en["modelled"] and not en["total_J"] >= en["idle_J"] >= 0:
        p.append(f"energy below its idle part: {en}")
    if not case.disaggregated and r["kv_transfers"] != 0:
        p.append(f"co-located with {r['kv_transfers']} KV transfers")
    if case.disaggregated and case.trace:
        multi = sum(o > 1 for _, _, o in case.trace)
        if r["kv_transfers"] != multi:
            p.append(f"{r['kv_transfers']} KV transfers for {multi} multi-token requests")
    return p


def judge_timeseries(path, iterations):
    with open(path) as f:
        rows = f.read().splitlines()[1:]
    if len(rows) != iterations:
        return [f"time series: {len(rows)} rows for {iterations} iterations"]
    bad = [r for r in rows if float(r.split(",")[1]) < float(r.split(",")[0])]
    return [f"time series: a row ending before it starts: {bad[0]}"] if bad else []


def percentile(v, q):
    """As serve_report.c: linear between ranks of the sorted values."""
    if not v:
        return 0.0
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return min(max(v[lo] + (v[hi] - v[lo]) * (pos - lo), v[lo]), v[hi])


def close(a, b):
    """Equal to the 9 significant digits npusim prints."""
    return abs(a - b) <= 1e-8 * max(abs(a), abs(b)) or a == b


def metamorphic(npusim, case, first_out):
    """The shifted trace's bytes; the far-apart requests against each alone."""
    p = []
    serving = json.loads(json.dumps(case.serving))
    shifted = [(a + SHIFT_S, q, o) for a, q, o in case.trace]
    if all(a - SHIFT_S == b for (a, _, _), (b, _, _) in zip(shifted, case.trace)):
        serving["requests"] = {"trace": write_trace(os.path.join(case.dir, "shifted"), shifted,
                                                    case.trace_kind, case.trace_style)}
        rc, out, err = run(npusim, case.args(case.workload(
            os.path.join(case.dir, "shifted.json"), serving)))
        if (rc, out) != (0, first_out):
            p.append(f"the trace {SHIFT_S:g} s later prints other bytes (exit {rc}, {err[:300]!r})")
    far = [(i * 1e6, q, o) for i, (_, q, o) in enumerate(case.trace)]
    serving["requests"] = {"trace": write_trace(os.path.join(case.dir, "far"), far, "jsonl")}
    rc, out, err = run(npusim, case.args(case.workload(os.path.join(case.dir, "far.json"),
                                                      serving)))
    if rc != 0:
        return p + judge_status(rc, out, err)
    together = json.loads(out)
    alone = {"ttft_s": [], "tpot_s": [], "e2e_s": []}
    for i, (_, q, o) in enumerate(case.trace):
        serving["requests"] = {"trace": write_trace(os.path.join(case.dir, f"one{i}"),
                                                    [(0.0, q, o)], "jsonl")}
        rc, out, err = run(npusim, case.args(case.workload(
            os.path.join(case.dir, f"one{i}.json"), serving)))
        if rc != 0:
            return p + [f"request {i} alone: exit {rc}, {err[:300]!r}"]
        one = json.loads(out)
        for k in alone:
            if k != "tpot_s" or o > 1:
                alone[k].append(one[k]["max"])
    for k, v in alone.items():
        v.sort()
        want = {"min": v[0] if v else 0.0, "max": v[-1] if v else 0.0,
                "mean": min(max(sum(v) / len(v), v[0]), v[-1]) if v else 0.0,
                "p50": percentile(v, 0.5), "p90": percentile(v, 0.9), "p99": percentile(v, 0.99)}
        got = together[k]
        if got["min"] != want["min"] or got["max"] != want["max"]:
            p.append(f"{k} far apart {got} against alone {v}: min/max differ")
        elif not all(close(got[s], want[s]) for s in want):
            p.append(f"{k} far apart {got} against alone {want}")
    return p


def tighten(npusim, case):
    """A tight capacity from a probe run's KV bytes per token (derived cache).
    Below the least capacity (1 MiB) the model gets more layers (more KV per
    token), once, so that the cache stays tight."""
    for _ in range(2):
        probe = json.loads(json.dumps(case.serving))
        probe["kv_cache"].pop("capacity_GiB", None)
        rc, out, _ = run(npusim, case.args(case.workload(os.path.join(case.dir, "probe.json"),
                                                         probe)))
        if rc != 0:
            return
        per_token = max(p["kv_bytes_per_token"] for p in json.loads(out)["pools"])
        bt = case.serving["kv_cache"]["block_tokens"]
        blocks = math.ceil(math.ceil(case.longest() / bt) * case.capacity_factor) + 1
        gib = blocks * bt * per_token / 2 ** 30 * (1 + 1e-9)
        case.serving["kv_cache"]["capacity_GiB"] = float(f"{max(gib, 0.001):.9g}") * (1 + 1e-8)
        if gib >= 0.001 or case.model["layers"] >= 64:
            return
        case.model["layers"] = min(128, case.model["layers"] * math.ceil(0.001 / gib))


def check(npusim, seed, keep):
    """(seed, summary, problems)."""
    d = tempfile.mkdtemp(prefix=f"fuzz-serve-{seed}-")
    try:
        case = Case(seed, d)
        if case.capacity == "tight":
            tighten(npusim, case)
        wl = case.workload(os.path.join(d, "workload.json"))
        args = case.args(wl)
        ts = os.path.join(d, "ts.csv")
        if case.timeseries:
            args += ["--timeseries", ts]
        rc, out, err = run(npusim, args)
        problems = judge_status(rc, out, err)
        summary = f"exit {rc}" + (f": {err.strip()[:160]}" if rc == 2 else "")
        named = [wl, case.system] + ([case.serving["requests"]["trace"]] if case.trace else [])
        if rc == 2 and not any(err.startswith(f"{path}:") for path in named):
            problems.append(f"a refusal that names none of the input files: {err.strip()!r}")
        if case.twice and not problems:
            again = run(npusim, args)
            if again != (rc, out, err):
                problems.append("the same case twice gives other bytes")
        if case.table and not problems:
            trc, tout, terr = run(npusim, [a for a in args if a not in ("--format", "json")])
            words = tout.replace("(", " ").split()
            if trc != rc or any(w.lower() in ("inf", "-inf", "nan", "-nan") for w in words):
                problems.append(f"the table: exit {trc} (json {rc}), {tout[-300:]!r} {terr!r}")
        if rc == 0 and not problems:
            try:
                r = json.loads(out, parse_constant=not_finite)
            except ValueError as e:
                r, problems = {}, [f"stdout is not JSON with finite numbers: {e}"]
            if not problems:
                try:
                    nreq = len(case.trace) if case.trace else case.serving["requests"]["count"]
                    problems += judge_result(case, r, nreq)
                    if case.timeseries:
                        problems += judge_timeseries(ts, r["iterations"])
                    elif os.path.exists(ts):
                        problems.append("a time series nobody asked for")
                    if case.metamorphic and not problems:
                        problems += metamorphic(npusim, case, out)
                    summary = (f"{r['completed']} requests, {r['iterations']} iterations, "
                               f"{r['preemptions']} preemptions"
                               + (", metamorphic" if case.metamorphic else ""))
                except (KeyError, TypeError, IndexError, ValueError) as e:
                    problems.append(f"the output lacks what the oracles read: {e!r}")
        elif rc != 0 and case.timeseries and os.path.exists(ts):
            problems.append("a refused run left its time series")
        if problems and keep:
            dest = os.path.join(keep, f"seed{seed}")
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(d, dest)
            with open(os.path.join(dest, "command"), "w") as f:
                f.write(" ".join([npusim] + args) + "\n")
        return seed, summary, problems
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("--seeds", default="0:100", help="A:B, seeds A to B-1")
    ap.add_argument("--time", type=float, default=0,
                    help="stop starting seeds after SECONDS (0: run them all)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", help="directory for the cases that fail an oracle")
    ap.add_argument("--quiet", action="store_true", help="print failures and the tally only")
    args = ap.parse_args()
    a, b = (int(x) for x in args.seeds.split(":"))
    start = time.monotonic()
    failed, done, refused = 0, 0, 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        pending, seeds = set(), iter(range(a, b))
        while True:
            while len(pending) < 2 * args.jobs:
                if args.time and time.monotonic() - start > args.time:
                    break
                seed = next(seeds, None)
                if seed is None:
                    break
                pending.add(pool.submit(check, args.npusim, seed, args.keep))
            if not pending:
                break
            finished, pending = concurrent.futures.wait(
                pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in sorted(finished, key=lambda f: f.result()[0]):
                seed, summary, problems = fut.result()
                done += 1
                refused += summary.startswith("exit 2")
                if problems:
                    failed += 1
                    print(f"seed {seed}: FAIL {summary}")
                    for line in problems:
                        print(f"  {line}")
                elif not args.quiet:
                    print(f"seed {seed}: ok, {summary}")
    print(f"fuzz_serve: {done} seeds in {time.monotonic() - start:.1f} s, {done - refused} "
          f"simulated, {refused} refused in one line, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
