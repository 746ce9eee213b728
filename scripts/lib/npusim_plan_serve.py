"""npusim_plan_serve.py - `npusim-plan --serve`: the deployments of a serving
workload on at most N NPUs, each run with `npusim serve`, ranked by goodput per
NPU (requests/s within the SLO, per NPU used), ties by output tokens/s per NPU.

Candidates (every one expressed as `--set serving....` flags on the workload,
so `npusim serve` with the same flags gives the same numbers):

- shapes (tp, pp, dp, ep) of one instance: tp a divisor of model.heads and at
  most --max-tp (default: NPUs per server); pp in 1, 2, 4 (at most the
  layers); dense models dp = ep = 1; MoE models dp in 1, 2, 4, ... and ep in
  {1, tp, tp x dp}. Each shape is first probed (one request, one instance):
  a shape npusim refuses (weights over HBM, no room for a KV cache) is
  dropped, counted under npusim's reason.
- co-located: each fitting shape with instances = floor(N / NPUs per
  instance) (--fewer-instances: also 1, 2, 4, ... below that).
- disaggregated: a prefill and a decode shape (the smallest pp that fits
  for each tp, dp, ep), prefill instances 1, 2, 4, ... up to what leaves one
  decode instance, decode instances as many as the rest holds.
- totals npusim's topology admits (at most one server's NPUs, or whole
  servers) and TP groups that stay inside a server.

Over --max-plans (default 200) candidates, an evenly spaced subset runs. A run
that npusim refuses, or whose requests did not all complete, is not ranked: it
is counted under its reason.

--max-rate (the capacity question): per plan, the highest Poisson rate at
which at least --attain (default 0.9) of the requests meet --slo. Each run
offers requests for --window-s seconds (default 60: count = rate x window),
so the answer is a rate the plan sustains, not a burst it absorbs: past its
capacity C a queue grows by (rate - C) requests every second, and over 60 s
a rate 1% over C delays the last requests by 0.6 s. (A fixed count would
not: 300 requests at 600/s arrive within half a second, and 8 H100s clear
that burst within the SLO although they sustain about a third of the rate.)
The rate is bracketed by doubling (or halving) from 1 request/s, then
bisected geometrically until the bracket is within RATE_TOLERANCE; every
run uses the workload's seed, so the generator draws the same lengths and
inter-arrival times scaled by 1/rate. Plans are ranked by that rate per NPU.
A workload with serving.prefill and serving.decode gives disaggregated
plans only (--set cannot remove a section).
"""

import concurrent.futures
import csv
import json
import math
import re
import sys
import threading
import time
from collections import namedtuple

import npusim_sweep_lib as lib

PROBE_COUNT = 1  # requests in a shape's probe: it checks memory, not speed
RATE_START = 1.0        # requests/s: the first rate --max-rate tries
RATE_LIMITS = (1e-3, 1e6)  # requests/s: the search's bracket stops here
MAX_RATE_COUNT = 2_000_000  # requests in one --max-rate run: the bracket stops below
RATE_TOLERANCE = 0.02   # the bisection stops when high/low is within 1 + this
Shape = namedtuple("Shape", "tp pp dp ep")


def npus_of(shape):
    return shape.tp * shape.pp * shape.dp


def rate_arg(text):
    """--rate: requests/s, 0 (all at time 0) or a finite positive number."""
    return lib.float_0_to_1e9(text, "requests/s from 0 (all at once)")


def parse_slo(text):
    """--slo ttft_ms=T,tpot_ms=P (either may be left out) as npusim reads it."""
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key not in ("ttft_ms", "tpot_ms") or key in out:
            raise lib.SpecError(f"--slo: expected ttft_ms=T,tpot_ms=P (either may be left "
                                f"out), found {text!r}")
        try:
            v = float(value)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and v > 0):
            raise lib.SpecError(f"--slo: {key}: expected a positive number of ms, found {value!r}")
        out[key] = v
    return out


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def shapes(model, npus, max_tp):
    """Every (tp, pp, dp, ep) of one instance on at most `npus` NPUs."""
    moe = bool(model.get("moe"))
    out = []
    for tp in divisors(model["heads"]):
        if tp > max_tp or tp > npus:
            continue
        for pp in (1, 2, 4):
            if pp > model["layers"] or tp * pp > npus:
                continue
            dp = 1
            while tp * pp * dp <= npus:
                for ep in sorted({1, tp, tp * dp}) if moe else [1]:
                    out.append(Shape(tp, pp, dp, ep))
                if not moe:
                    break
                dp *= 2
    return out


def topo_ok(total, system):
    """npusim's placement: at most one server's NPUs, or whole servers
    (and no more servers than the cluster has, when it says)."""
    per_node = system["node"]["npus"]
    nodes = (system.get("cluster") or {}).get("nodes") or 0
    if nodes and total > nodes * per_node:
        return False
    return total <= per_node or total % per_node == 0


def tp_inside_servers(first, shape, instances, per_node):
    """Every TP group (tp consecutive ranks) of the pool inside one server."""
    start = first
    for _ in range(instances * shape.pp * shape.dp):
        if start // per_node != (start + shape.tp - 1) // per_node:
            return False
        start += shape.tp
    return True


def shape_text(s):
    text = f"tp{s.tp}"
    if s.pp > 1:
        text += f" pp{s.pp}"
    if s.dp > 1 or s.ep > 1:
        text += f" dp{s.dp} ep{s.ep}"
    return text


def pool_sets(prefix, shape, instances, instances_key):
    return [f"{instances_key}={instances}"] + [
        f"{prefix}.{k}={getattr(shape, k)}" for k in ("tp", "pp", "dp", "ep")]


class Candidate:
    def __init__(self, mode, pools):
        """pools: [(kind, shape, instances)]: colocated, or prefill + decode."""
        self.mode, self.pools = mode, pools
        self.npus = sum(npus_of(s) * n for _, s, n in pools)
        if mode == "colocated":
            _, s, n = pools[0]
            self.text = f"{n} x {shape_text(s)}"
            self.sets = pool_sets("serving.parallel", s, n, "serving.instances")
        else:
            (_, ps, pn), (_, ds, dn) = pools
            self.text = f"P {pn} x {shape_text(ps)} + D {dn} x {shape_text(ds)}"
            self.sets = (pool_sets("serving.prefill", ps, pn, "serving.prefill.instances") +
                         pool_sets("serving.decode", ds, dn, "serving.decode.instances"))

    def pools_json(self):
        return [{"kind": k, "instances": n, **s._asdict()} for k, s, n in self.pools]


def colocated(fitting, npus, system, fewer):
    out = []
    for s in fitting:
        most = npus // npus_of(s)
        while most and not topo_ok(most * npus_of(s), system):
            most -= 1
        counts = {most} if most else set()
        k = 1
        while fewer and k < most:
            if topo_ok(k * npus_of(s), system):
                counts.add(k)
            k *= 2
        for n in sorted(counts):
            if tp_inside_servers(0, s, n, system["node"]["npus"]):
                out.append(Candidate("colocated", [("colocated", s, n)]))
    return out


def disaggregated(fitting, npus, system):
    smallest = {}
    for s in fitting:  # the smallest pp that fits each tp, dp, ep: pp only adds bubbles here
        key = (s.tp, s.dp, s.ep)
        if key not in smallest or s.pp < smallest[key].pp:
            smallest[key] = s
    pool_shapes = list(smallest.values())
    per_node = system["node"]["npus"]
    out, seen = [], set()
    for p in pool_shapes:
        for d in pool_shapes:
            sp, sd = npus_of(p), npus_of(d)
            if sp + sd > npus:
                continue
            most = (npus - sd) // sp
            counts, k = {most}, 1
            while k < most:
                counts.add(k)
                k *= 2
            for pn in sorted(counts):
                dn = (npus - pn * sp) // sd
                while dn >= 1 and not topo_ok(pn * sp + dn * sd, system):
                    dn -= 1
                if dn < 1 or (p, pn, d, dn) in seen:
                    continue
                if not (tp_inside_servers(0, p, pn, per_node) and
                        tp_inside_servers(pn * sp, d, dn, per_node)):
                    continue
                seen.add((p, pn, d, dn))
                out.append(Candidate("disaggregated", [("prefill", p, pn), ("decode", d, dn)]))
    return out


def evenly(items, keep):
    if len(items) <= keep:
        return items
    return [items[i * len(items) // keep] for i in range(keep)]


# ---- running -------------------------------------------------------------------

class TtyProgress:
    """`plan: 5/12 done, 1 rejected, ETA 4s`, rewritten in place, on a
    terminal only (a log gets the summary line alone)."""

    def __init__(self, total, label):
        self.total, self.label, self.done, self.rejected = total, label, 0, 0
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.lock = threading.Lock()

    def add(self, ok):
        with self.lock:
            self.done += 1
            self.rejected += not ok
            if not self.tty:
                return
            eta = (time.monotonic() - self.start) / self.done * (self.total - self.done)
            sys.stderr.write(f"\r{self.label}: {self.done}/{self.total} done, {self.rejected} "
                             f"rejected, ETA {eta:.0f}s\033[K")
            sys.stderr.flush()
            lib._progress_open = True  # lib.say ends the line first

    def close(self):
        if self.tty and lib._progress_open:  # the line goes: the summary follows
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            lib._progress_open = False


def run_one(npusim, base, sets, slo_text, timeout):
    """(result, error) of one `npusim serve` run."""
    args = [npusim, "serve"] + base
    for s in sets:
        args += ["--set", s]
    if slo_text:
        args += ["--slo", slo_text]
    r = lib.CHILDREN.run(args + ["--format", "json"], timeout)
    if r.timed_out:
        return None, f"timed out after {timeout:g} s (--timeout)"
    if r.returncode == 0:
        try:
            res = json.loads(r.stdout.decode("utf-8", "replace"))
        except ValueError:
            return None, "npusim printed no valid JSON"
        # a plan that leaves requests unfinished has no latencies worth ranking
        # (npusim refuses such a run itself; this keeps an older one honest)
        if not isinstance(res, dict) or res.get("completed") != res.get("requests"):
            done = res.get("completed") if isinstance(res, dict) else None
            want = res.get("requests") if isinstance(res, dict) else None
            return None, (f"npusim serve completed {done} of {want} requests (exit 0): "
                          "infeasible, not ranked")
        return res, None
    if r.returncode < 0:
        return None, f"npusim killed by {lib.signal_name(-r.returncode)}"
    return None, lib.last_line(r.stderr, f"npusim exited {r.returncode}")


def attainment(res):
    return res["good_requests"] / res["completed"] if res["completed"] else 0.0


def max_rate(npusim, base, sets, slo_text, attain, window_s, timeout):
    """(result at the highest rate that meets the SLO for `attain` of the
    requests, with max_rate_per_s and rate_runs added; error). A plan that
    misses at the least rate sustains 0 (its result is that run's)."""
    runs = 0

    def count(rate):
        return max(1, math.ceil(rate * window_s))

    def at(rate):
        nonlocal runs
        runs += 1
        return run_one(npusim, base, sets + [f"serving.requests.rate_per_s={lib.fmt(rate)}",
                                             f"serving.requests.count={count(rate)}"],
                       slo_text, timeout)

    def meets(res):
        return attainment(res) >= attain

    lo = hi = lo_res = None
    rate = RATE_START
    while True:
        res, err = at(rate)
        if err:
            return None, err
        if meets(res):
            lo, lo_res = rate, res
        else:
            hi = rate
        if lo is None or hi is None:  # bracket: double up, or halve down
            rate = lo * 2 if hi is None else hi / 2
            if not RATE_LIMITS[0] <= rate <= RATE_LIMITS[1] or count(rate) > MAX_RATE_COUNT:
                break
        elif hi / lo > 1 + RATE_TOLERANCE:  # bisect, geometrically
            rate = math.sqrt(lo * hi)
        else:
            break
    if lo is None:  # misses even at the least rate: sustains nothing (its last run shown)
        return dict(res, max_rate_per_s=0.0, rate_runs=runs), None
    return dict(lo_res, max_rate_per_s=lo, rate_runs=runs), None


def run_all(jobs, label, tasks):
    """Runs the callables in `tasks` on `jobs` threads; their results in
    order. Interrupted, it kills the running children and re-raises."""
    progress = TtyProgress(len(tasks), label)
    results = [None] * len(tasks)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(t): i for i, t in enumerate(tasks)}
        for fut in concurrent.futures.as_completed(futures):
            results[futures[fut]] = fut.result()
            progress.add(results[futures[fut]][1] is None)
    except BaseException:
        lib.CHILDREN.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    progress.close()
    return results


def reason_class(error):
    """npusim's line with its numbers blanked: one class per kind of refusal."""
    return re.sub(r"\d+(\.\d+)?", "#", error)


# ---- the plan ----------------------------------------------------------------

COLUMNS = ("rank", "plan", "npus", "goodput/s/NPU", "tokens/s/NPU", "TTFT p90 ms",
           "TPOT p90 ms", "in SLO")
# --max-rate: the rate each plan sustains (its latencies and share at that rate)
COLUMNS_MAX_RATE = ("rank", "plan", "npus", "max rate/s", "rate/s/NPU", "tokens/s/NPU",
                    "TTFT p90 ms", "TPOT p90 ms", "in SLO")
CSV_COLUMNS = ("rank", "mode", "plan", "npus", "instances", "goodput_per_s_per_npu",
               "output_tokens_per_s_per_npu", "ttft_p90_ms", "tpot_p90_ms", "good_requests",
               "completed", "set")


def plan(args, npusim, system, workload):
    start = time.monotonic()
    s = workload.get("serving")
    if not s:
        raise lib.SpecError(f"--serve: expected a serving workload (a serving section), found "
                            f"none in {args.workload} (a training plan runs without --serve)")
    disagg_base = "prefill" in s or "decode" in s
    modes = args.pools or "both"
    if disagg_base and modes == "colocated":
        raise lib.SpecError(f"--colocated: expected a workload without serving.prefill and "
                            f"serving.decode (--set cannot remove a section), found both in "
                            f"{args.workload}")
    trace = s["requests"].get("trace")
    if trace and (args.rate is not None or args.count is not None):
        raise lib.SpecError(f"--{'rate' if args.rate is not None else 'count'}: expected a "
                            f"workload whose requests are generated, found the trace {trace!r} "
                            "(serving.requests.trace)")
    slo = parse_slo(args.slo) if args.slo else {}
    base_sets = list(args.set)
    if args.rate is not None:
        base_sets.append(f"serving.requests.rate_per_s={lib.fmt(args.rate)}")
    if args.count is not None:
        base_sets.append(f"serving.requests.count={args.count}")
    base = ["--system", args.system, "--workload", args.workload]
    rate = args.rate if args.rate is not None else s["requests"]["rate_per_s"]
    count = args.count if args.count is not None else s["requests"]["count"]
    model = workload["model"]
    max_tp = args.max_tp or system["node"]["npus"]

    # 1. probe each shape once: does one instance of it fit?
    every = shapes(model, args.npus, max_tp)

    def probe_sets(sh):
        if disagg_base:
            return (pool_sets("serving.prefill", sh, 1, "serving.prefill.instances") +
                    pool_sets("serving.decode", sh, 1, "serving.decode.instances"))
        return pool_sets("serving.parallel", sh, 1, "serving.instances")

    probes = run_all(args.jobs, "plan: shapes", [
        (lambda sh=sh: run_one(npusim, base, base_sets + probe_sets(sh) +
                               ([] if trace else [f"serving.requests.count={PROBE_COUNT}"]),
                               "", args.timeout)) for sh in every])
    fitting, refused = [], {}
    for sh, (_, err) in zip(every, probes):
        if err is None or "expected a deployment that fits" in err:  # placement: judged per plan
            fitting.append(sh)
        else:
            refused.setdefault(reason_class(err), [0, shape_text(sh), err])[0] += 1

    # 2. the deployments of the fitting shapes
    cands = []
    if modes in ("both", "colocated") and not disagg_base:
        cands += colocated(fitting, args.npus, system, args.fewer_instances)
    if modes in ("both", "disaggregated"):
        cands += disaggregated(fitting, args.npus, system)
    enumerated = len(cands)
    cands = evenly(cands, args.max_plans)

    # 3. run them (--max-rate: search each one's rate)
    if args.max_rate:
        runs = run_all(args.jobs, "plan: max rate", [
            (lambda c=c: max_rate(npusim, base, base_sets + c.sets, args.slo, args.attain,
                                  args.window_s, args.timeout)) for c in cands])
    else:
        runs = run_all(args.jobs, "plan", [
            (lambda c=c: run_one(npusim, base, base_sets + c.sets, args.slo or "", args.timeout))
            for c in cands])
    rejected = {}
    ok = []
    for i, (c, (res, err)) in enumerate(zip(cands, runs)):
        if err is None:
            ok.append((i, c, res))
        else:
            rejected.setdefault(reason_class(err), [0, c.text, err])[0] += 1
    if args.max_rate:
        ok.sort(key=lambda t: (-t[2]["max_rate_per_s"] / t[2]["npus"],
                               -t[2]["output_tokens_per_s_per_npu"], t[0]))
    else:
        ok.sort(key=lambda t: (-t[2]["goodput_per_s_per_npu"],
                               -t[2]["output_tokens_per_s_per_npu"], t[0]))
    shown = ok[:args.top]
    slo_text = args.slo or ""
    report(args, shown, base_sets, system, workload, rate, count, slo, enumerated, cands,
           ok, refused, rejected, every)

    good = [t for t in ok if (t[2]["max_rate_per_s"] > 0 if args.max_rate
                              else t[2]["good_requests"] > 0)]
    n_co = sum(c.mode == "colocated" for c in cands)
    kept = "" if enumerated == len(cands) else (
        f" (an evenly spaced {len(cands)} of {enumerated}; --max-plans raises the limit)")
    lib.say(f"npusim-plan: {len(cands)} serving plans on at most {args.npus} NPUs{kept}: "
            f"{n_co} co-located, {len(cands) - n_co} disaggregated, from {len(fitting)} of "
            f"{len(every)} instance shapes that fit"
            f"{' (co-located ones need a workload without serving.prefill/decode)' if disagg_base and modes == 'both' else ''}"
            f"; {len(ok)} simulated, "
            f"{len(cands) - len(ok)} rejected by npusim, {len(good)} with requests within the "
            f"SLO{rate_note(args, ok)}; {time.monotonic() - start:.1f} s")
    for what, groups in (("shapes that do not fit", refused), ("plans", rejected)):
        for _, (n, example, line) in sorted(groups.items()):
            lib.say(f"  rejected {n} {what} (e.g. {example}): {line}")
    if not cands:
        lib.say(f"npusim-plan: expected a deployment of {model['name']} on at most "
                f"{args.npus} NPUs of {system['name']}, found none that npusim accepts")
        return 1
    if not ok:
        lib.say("npusim-plan: expected some plan npusim simulates, found none (reasons above)")
        return 1
    if not good and args.max_rate:
        lib.say(f"npusim-plan: expected a plan that meets --slo {slo_text} for "
                f"{args.attain:g} of the requests at some rate, found none (not even at "
                f"{RATE_LIMITS[0]:g} requests/s)")
        return 1
    if not good:
        best_ttft = min(t[2]["ttft_s"]["p90"] for t in ok) * 1e3
        best_tpot = min(t[2]["tpot_s"]["p90"] for t in ok) * 1e3
        lib.say(f"npusim-plan: expected a plan with requests within --slo {slo_text} at "
                f"{rate:g} requests/s, found none: every goodput is 0 (the best TTFT p90 "
                f"is {best_ttft:.1f} ms, TPOT p90 {best_tpot:.1f} ms); the table ranks by "
                "tokens/s per NPU")
        return 1
    return 0


def rate_note(args, ok):
    if not args.max_rate:
        return ""
    return (f"; --max-rate: {sum(t[2]['rate_runs'] for t in ok)} runs, each plan's rate "
            f"within {RATE_TOLERANCE:.0%}, {args.attain:g} of the requests within the SLO, "
            f"arrivals over {args.window_s:g} s")


def row_values(rank, c, r):
    return {"rank": rank, "mode": c.mode, "plan": c.text, "npus": r["npus"],
            "max_rate_per_s": r.get("max_rate_per_s"),
            "max_rate_per_s_per_npu": (r["max_rate_per_s"] / r["npus"]
                                       if "max_rate_per_s" in r else None),
            "instances": r["instances"],
            "goodput_per_s_per_npu": r["goodput_per_s_per_npu"],
            "output_tokens_per_s_per_npu": r["output_tokens_per_s_per_npu"],
            "ttft_p90_ms": r["ttft_s"]["p90"] * 1e3, "tpot_p90_ms": r["tpot_s"]["p90"] * 1e3,
            "good_requests": r["good_requests"], "completed": r["completed"]}


def report(args, shown, base_sets, system, workload, rate, count, slo, enumerated, cands, ok,
           refused, rejected, every):
    if args.format == "json":
        plans = []
        for n, (_, c, r) in enumerate(shown):
            row = row_values(n + 1, c, r)
            row.update({"pools": c.pools_json(), "set": base_sets + c.sets, "result": r})
            plans.append(row)
        doc = {"system": system["name"], "workload": workload["model"]["name"],
               "npus": args.npus, "rate_per_s": None if args.max_rate else rate,
               "max_rate": args.max_rate, "attain": args.attain if args.max_rate else None,
               "count": count, "slo": slo,
               "shapes": len(every), "candidates": enumerated, "evaluated": len(cands),
               "simulated": len(ok),
               "rejected": [{"count": n, "example": ex, "reason": line, "stage": stage}
                            for stage, groups in (("shape", refused), ("plan", rejected))
                            for _, (n, ex, line) in sorted(groups.items())],
               "plans": plans}
        print(json.dumps(doc, indent=1))
        return
    csv_columns = CSV_COLUMNS + (("max_rate_per_s", "max_rate_per_s_per_npu")
                                 if args.max_rate else ())
    if args.format == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(csv_columns)
        for n, (_, c, r) in enumerate(shown):
            v = row_values(n + 1, c, r)
            v["set"] = " ".join(base_sets + c.sets)
            w.writerow([v[k] for k in csv_columns])
        return
    cells = [list(COLUMNS_MAX_RATE if args.max_rate else COLUMNS)]
    for n, (_, c, r) in enumerate(shown):
        v = row_values(n + 1, c, r)
        share = v["good_requests"] / v["completed"] * 100 if v["completed"] else 0
        lead = ([f"{v['max_rate_per_s']:.3g}", f"{v['max_rate_per_s_per_npu']:.4f}"]
                if args.max_rate else [f"{v['goodput_per_s_per_npu']:.4f}"])
        cells.append([str(v["rank"]), v["plan"], str(v["npus"])] + lead +
                     [f"{v['output_tokens_per_s_per_npu']:.1f}", f"{v['ttft_p90_ms']:.1f}",
                      f"{v['tpot_p90_ms']:.2f}", f"{share:.0f}%"])
    widths = [max(len(r[k]) for r in cells) for k in range(len(cells[0]))]
    for r in cells:
        print("  ".join(c.ljust(w) if k == 1 else c.rjust(w)
                        for k, (c, w) in enumerate(zip(r, widths))).rstrip())
