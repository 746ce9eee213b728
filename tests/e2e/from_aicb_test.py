#!/usr/bin/env python3
"""from_aicb_test.py NPUSIM [CONVERTER] - scripts/tools/npusim-from-aicb on the AICB
samples in traces/aicb/, replayed by npusim (issue #15). Run from the
repository root; CONVERTER defaults to scripts/tools/npusim-from-aicb.

For each sample the trace must
- replay: `npusim replay --system configs/systems/ascend-910b.json --trace T
  --fidelity analytic --format json` exits 0 with one row per rank;
- hold the communicators the file's header says: tp groups of
  model_parallel_NPU_group consecutive ranks, dp groups of all_gpus / (tp x pp)
  ranks tp apart inside a stage, ep groups of ep consecutive data-parallel
  positions, dp_ep groups of dp / ep positions ep apart; each rank in one group
  of each;
- hold per rank the collectives of the file (kind and communicator counted
  from the comm-type columns: no suffix is tp for forward and input-grad, dp
  for weight-grad; _EP ep; _DP_EP dp_ep; none of 0 bytes or in a group of one
  rank), and the pipeline send/recv of pp_comm bytes (ga micro-batches each
  way) between stages;
- hold per rank compute ops whose durations add up to the file's forward +
  input-grad + weight-grad times (ns), and the replay's compute_s must equal
  that sum on every rank;
- replay's per-communicator collective count equals the per-rank count x
  the number of groups.
The expected figures are recounted here from the file's text, and also written
out by hand for each sample (EXPECTED), so a converter and a recount that
drift together still fail.

AICB's shipped workload files (tests/data/aicb/, 11, and SimAI's example:
12; issue #29): each converts as it is (older header, MICRO) and replays; the
ranks, layer lines and per-rank collectives by kind and communicator are
written out by hand (SHIPPED) and recounted from the text; every rank holds
the file's collectives with the file's bytes (a MICRO file's in file order)
and its compute; the notes name what was assumed (one line for the older
header, naming SimAI's warning). Two again with --gpus 16; --gpus against a
file's all_gpus: refused.

Bad input (a copy of a sample with one defect each): one line on stderr,
FILE:LINE: expected ..., exit 2, nothing on stdout, no output file.

Hostile input (issue #26), each under a 256 MiB address-space limit and 30 s:
a layer count past 2^20, a number of 5000 digits, a line over 1 MiB, a FIFO
and a device (refused unread), lines whose trace would pass npusim's 256 MiB
(refused before a byte is written): one line, exit 2, no output file, no
traceback; 200,000 lines that almost repeat (pp 2, ga 2) and 2^20 ranks
(communicators of a million ranks): converted, the micro-batches found and
the groups whole.

Negative controls: the checks run on traces with one defect each (a compute
op dropped, a collective moved to another communicator, a group changed, a
send dropped) must report a failure, so the checks can fail.
"""
import copy
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile

from checks import failures, fail

SYSTEM = "configs/systems/ascend-910b.json"
SAMPLES = ["traces/aicb/microAllReduce.txt", "traces/aicb/moe_tp2_pp2_ep2.txt"]
# Written out by hand from the sample files (see traces/aicb/README.md).
EXPECTED = {
    "traces/aicb/microAllReduce.txt": {
        "ranks": 8, "groups": {"tp": (1, 8)},
        "collectives": {("allreduce", "tp"): 2},
        "compute_ns": 2 * (556000 + 1 + 1), "p2p": {},
    },
    "traces/aicb/moe_tp2_pp2_ep2.txt": {
        "ranks": 16,
        "groups": {"tp": (8, 2), "dp": (4, 4), "ep": (8, 2), "dp_ep": (8, 2)},
        "collectives": {("allreduce", "tp"): 5, ("allgather", "tp"): 4,
                        ("reducescatter", "tp"): 4, ("allgather", "dp"): 1,
                        ("reducescatter", "dp"): 1, ("allreduce", "dp"): 1,
                        ("alltoall", "ep"): 8, ("allreduce", "ep"): 2,
                        ("allgather", "dp_ep"): 1, ("reducescatter", "dp_ep"): 1},
        "compute_ns": 17450031,
        # stage -> sorted (kind, peer_offset, bytes) of its send/recv
        "p2p": {0: [("recv", 8, 4194304)] * 2 + [("send", 8, 4194304)] * 2,
                1: [("recv", -8, 4194304)] * 2 + [("send", -8, 4194304)] * 2},
    },
}



# ---- the file, recounted from its text -------------------------------------

KINDS = {"ALLREDUCE": "allreduce", "ALLGATHER": "allgather",
         "REDUCESCATTER": "reducescatter", "ALLTOALL": "alltoall"}


def read_aicb(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    tok = lines[0].split()
    head = {tok[i].rstrip(":"): tok[i + 1] for i in range(1, len(tok) - 1)
            if tok[i].endswith(":") or tok[i] == "pp_comm"}
    tp, pp, ep, n = (int(head[k]) for k in ("model_parallel_NPU_group", "pp", "ep", "all_gpus"))
    dp = n // (tp * pp)
    rows = [l.split() for l in lines[2:] if l.split()]
    assert len(rows) == int(lines[1]), path
    size = {"tp": tp, "dp": dp, "ep": ep, "dp_ep": dp // ep}
    colls = {}
    compute = 0
    for r in rows:
        for phase, c in (("fwd", 2), ("ig", 5), ("wg", 8)):
            compute += int(r[c])
            if r[c + 1] == "NONE" or int(r[c + 2]) == 0:
                continue
            base = next(b for b in KINDS if r[c + 1].startswith(b))
            suffix = r[c + 1][len(base):]
            comm = {"": "dp" if phase == "wg" else "tp", "_EP": "ep", "_DP_EP": "dp_ep"}[suffix]
            if size[comm] > 1:
                colls[(KINDS[base], comm)] = colls.get((KINDS[base], comm), 0) + 1
    return {"n": n, "tp": tp, "dp": dp, "pp": pp, "ep": ep, "size": size,
            "ga": int(head["ga"]), "pp_comm": int(float(head.get("pp_comm", 0))),
            "collectives": colls, "compute_ns": compute}


# ---- checks on a trace: lists of problems ------------------------------------

def expand(ranks):
    if isinstance(ranks, list):
        return ranks
    out = []
    for part in str(ranks).split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def check_groups(f, trace):
    """The communicators are exactly the ones the header implies."""
    bad = []
    n, tp, dp = f["n"], f["tp"], f["dp"]
    stage = tp * dp
    want = {}
    for r in range(n):
        s, d, t = r // stage, (r % stage) // tp, r % tp
        base = s * stage + t
        want.setdefault("tp", {})[r] = tuple(range(r - t, r - t + tp))
        want.setdefault("dp", {})[r] = tuple(base + k * tp for k in range(dp))
        g0 = d - d % f["ep"]
        want.setdefault("ep", {})[r] = tuple(base + (g0 + j) * tp for j in range(f["ep"]))
        want.setdefault("dp_ep", {})[r] = tuple(base + (d % f["ep"] + k * f["ep"]) * tp
                                               for k in range(dp // f["ep"]))
    used = {k[1] for k in f["collectives"]}
    names = [c["name"] for c in trace["communicators"]]
    if sorted(names) != sorted(used):
        bad.append(f"communicators {sorted(names)}, expected {sorted(used)}")
    for c in trace["communicators"]:
        seen = {}
        for g in c["groups"]:
            members = tuple(expand(g))
            for r in members:
                if r in seen:
                    bad.append(f"{c['name']}: rank {r} in two groups")
                seen[r] = members
        for r in range(n):
            if c["name"] in want and tuple(sorted(seen.get(r, ()))) != \
                    tuple(sorted(want[c["name"]][r])):
                bad.append(f"{c['name']}: rank {r} in {seen.get(r)}, "
                           f"expected {want[c['name']][r]}")
                break
    return bad


def program_of(trace, rank):
    for p in trace["programs"]:
        if rank in expand(p["ranks"]):
            return p
    return None


def check_programs(f, trace, hand):
    """Per rank: compute sum, collective counts, pipeline messages."""
    bad = []
    stage_size = f["tp"] * f["dp"]
    for rank in range(f["n"]):
        p = program_of(trace, rank)
        if p is None:
            bad.append(f"rank {rank}: no program")
            continue
        ops = p["ops"]
        ns = sum(round(op["duration_us"] * 1000) for op in ops if op["kind"] == "compute")
        if ns != f["compute_ns"] or ns != hand["compute_ns"]:
            bad.append(f"rank {rank}: compute {ns} ns, file {f['compute_ns']}, "
                       f"by hand {hand['compute_ns']}")
        colls = {}
        for op in ops:
            if "comm" in op:
                colls[(op["kind"], op["comm"])] = colls.get((op["kind"], op["comm"]), 0) + 1
        if colls != f["collectives"] or colls != hand["collectives"]:
            bad.append(f"rank {rank}: collectives {sorted(colls.items())}, "
                       f"file {sorted(f['collectives'].items())}")
        p2p = sorted((op["kind"], op["peer_offset"], op["bytes"]) for op in ops
                     if op["kind"] in ("send", "recv"))
        stage = rank // stage_size
        if f["pp"] > 1:
            want = []
            if stage > 0:
                want += [("recv", -stage_size, f["pp_comm"]), ("send", -stage_size, f["pp_comm"])]
            if stage < f["pp"] - 1:
                want += [("recv", stage_size, f["pp_comm"]), ("send", stage_size, f["pp_comm"])]
            want = sorted(want * f["ga"])
        else:
            want = []
        if p2p != want or (stage in hand["p2p"] and p2p != sorted(hand["p2p"][stage])):
            bad.append(f"rank {rank}: send/recv {p2p}, expected {want}")
        if len(bad) > 5:
            break
    return bad


def check_replay(f, hand, out):
    bad = []
    if len(out["per_rank"]) != f["n"] or out["ranks"] != hand["ranks"]:
        bad.append(f"replay: {len(out['per_rank'])} ranks, expected {f['n']}")
    for r in out["per_rank"]:
        want = f["compute_ns"] * 1e-9
        if abs(r["compute_s"] - want) > 1e-8 * want + 1e-12:
            bad.append(f"replay: rank {r['rank']} compute_s {r['compute_s']}, expected {want}")
            break
    per = {}
    for (kind, comm), k in f["collectives"].items():
        per[comm] = per.get(comm, 0) + k
    got = {c["name"]: c["collectives"] for c in out["communicators"]}
    want = {c: k * (f["n"] // f["size"][c]) for c, k in per.items()}
    if got != want:
        bad.append(f"replay: collectives per communicator {got}, expected {want}")
    for c, (groups, size) in hand["groups"].items():
        if f["size"][c] != size or f["n"] // size != groups:
            bad.append(f"{c}: groups of {f['size'][c]}, expected {groups} of {size}")
    return bad


# ---- AICB's shipped files (tests/data/aicb/, issue #29) -----------------------

SHIPPED_DIR = "tests/data/aicb"
AR, AG, RS, A2A = "allreduce", "allgather", "reducescatter", "alltoall"
OLD = "older header: no ep:, pp:, vpp:, ga:, all_gpus:; taken as"
MICRO = "MICRO: all_gpus 8 taken"
# Written out by hand from the files (tests/data/aicb/SOURCE): per file the
# ranks, the layer lines converted, the collectives per rank by kind and
# communicator, and words the notes must hold. AICB's 11 workload files and
# SimAI's example (an AICB file, kept in traces/aicb/): 12.
SHIPPED = {
    "G13B-M1-C01_GPT13B_megatron_tp8_pp1_mbs1_A100.txt":
        (8, 92, {(AG, "tp"): 1, (AR, "tp"): 171}, [OLD, "1 BROADCAST"]),
    "G13B-M1-C02_GPT13B_megatron_tp8_pp1_mbs1_sp_A100.txt":
        (8, 172, {(AG, "tp"): 161, (AR, "tp"): 11, (RS, "tp"): 160}, [OLD, "1 BROADCAST"]),
    "G175B-M1-C03_GPT175B_megatron_tp8_pp1_mbs1_A100.txt":
        (8, 33, {(AR, "tp"): 31}, [OLD]),
    "L65B-M1-C05_Llama65B_megatron_tp8_pp1_mbs1_A100.txt":
        (8, 33, {(AR, "tp"): 31}, [OLD, "line 2 announces 839 layer lines, the file has 33"]),
    "L65B_D1_C08_Llama65B_deepspeed_zero3_A100.txt":
        (8, 12, {(RS, "dp"): 1}, [OLD, "12 collective(s) per rank in a group of one rank"]),
    "L7B-D1-C02_Llama7B_deepspeed_zero3_A100.txt":
        (8, 12, {(RS, "dp"): 1}, [OLD, "12 collective(s) per rank in a group of one rank"]),
    "L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1_A100.txt":
        (8, 76, {(AG, "tp"): 1, (AR, "tp"): 139, (RS, "dp"): 1}, [OLD, "1 BROADCAST"]),
    "all_gather.txt": (8, 19, {(AG, "dp"): 19}, [MICRO, "each of the 19 lines"]),
    "all_reduce.txt": (8, 19, {(AR, "dp"): 19}, [MICRO, "each of the 19 lines"]),
    "all_to_all.txt": (8, 19, {(A2A, "dp"): 19}, [MICRO, "each of the 19 lines"]),
    # tp 8 on 8 GPUs: the weight-grad all-reduces have a DP group of one rank
    "muti_all_reduce.txt": (8, 19, {}, [OLD, "19 collective(s) per rank in a group of one"]),
    "../../../traces/aicb/microAllReduce.txt": (8, 2, {(AR, "tp"): 2}, ["vpp: 8 ignored"]),
}


def read_shipped(path, gpus=None):
    """A shipped file recounted from its text, as SimAI runs it: an older
    header's missing fields are ep 1, pp 1 and all_gpus GPUS or 8 (a multiple
    of tp); MICRO: only the weight-grad collectives, on all ranks; BROADCAST,
    0 bytes and groups of one rank carry nothing. Returns the figures and the
    per-rank collectives as (kind, communicator, bytes), sorted and in file
    order."""
    lines = open(path, encoding="utf-8").read().split("\n")
    tok = lines[0].split()
    head = {tok[i]: tok[i + 1] for i in range(1, len(tok) - 1)}
    micro = tok[0] == "MICRO"
    tp = 1 if micro else int(head["model_parallel_NPU_group:"])
    n = int(head.get("all_gpus:", 0)) or gpus or tp * -(-8 // tp)
    ep = int(head.get("ep:", 1))
    size = {"tp": tp, "dp": n // tp, "ep": ep, "dp_ep": n // tp // ep}
    rows = [l.split() for l in lines[2:] if l.split()]
    colls, compute = [], 0
    for r in rows:
        for phase, c in ((("wg", 8),) if micro else (("fwd", 2), ("ig", 5), ("wg", 8))):
            compute += 0 if micro else int(r[c])
            if r[c + 1] in ("NONE", "BROADCAST") or int(r[c + 2]) == 0:
                continue
            base = next(b for b in KINDS if r[c + 1].startswith(b))
            suffix = r[c + 1][len(base):]
            comm = {"": "dp" if phase == "wg" else "tp", "_EP": "ep", "_DP_EP": "dp_ep"}[suffix]
            if size[comm] > 1:
                colls.append((KINDS[base], comm, int(r[c + 2])))
    counts = {}
    for kind, comm, _ in colls:
        counts[(kind, comm)] = counts.get((kind, comm), 0) + 1
    return {"n": n, "tp": tp, "dp": n // tp, "ep": ep, "size": size, "micro": micro, "rows": len(rows), "announced": int(lines[1]),
            "collectives": counts, "sizes": sorted(colls), "in_order": colls,
            "compute_ns": compute}


def check_shipped_trace(f, trace, order):
    """Every rank's program holds the file's collectives with the file's
    bytes (ORDER: also in file order, as a MICRO file runs them) and its
    compute; the communicators are the header's."""
    bad = check_groups(f, trace)
    for rank in range(f["n"]):
        p = program_of(trace, rank)
        if p is None:
            return bad + [f"rank {rank}: no program"]
        colls = [(op["kind"], op["comm"], op["bytes"]) for op in p["ops"] if "comm" in op]
        if sorted(colls) != f["sizes"] or (order and colls != order):
            return bad + [f"rank {rank}: collectives {colls[:4]}..., the file's "
                          f"{f['sizes'][:4]}..."]
        ns = sum(round(op["duration_us"] * 1000) for op in p["ops"] if op["kind"] == "compute")
        if ns != f["compute_ns"]:
            return bad + [f"rank {rank}: compute {ns} ns, the file {f['compute_ns']}"]
    return bad


def check_shipped(npusim, conv, tmp, name, gpus=None):
    """One shipped file converted (with --gpus GPUS when given) and replayed;
    returns True when it does both."""
    path = os.path.normpath(os.path.join(SHIPPED_DIR, name))
    ranks, rows, colls, words = SHIPPED[name]
    out = os.path.join(tmp, os.path.basename(path) + ".json")
    r = convert(conv, path, out, *(["--gpus", str(gpus)] if gpus else []))
    if r.returncode != 0:
        fail(f"{name}: converter exit {r.returncode}: {r.stderr.strip()}")
        return False
    f = read_shipped(path, gpus)
    if gpus:   # the figures change with the GPU count: the recount alone
        ranks, rows, colls, words = gpus, f["rows"], f["collectives"], []
    notes = r.stderr.rstrip("\n").split("\n")
    problems = [f"notes miss {w!r}: {notes}" for w in words if not any(w in n for n in notes)]
    if not all(n.startswith("npusim-from-aicb: note: ") for n in notes):
        problems.append(f"stderr not notes alone: {notes}")
    if OLD in words and sum("Input workload format mismatch" in n for n in notes) != 1:
        problems.append("the older header is not one note naming SimAI's warning")
    if (f["n"], f["rows"], f["collectives"]) != (ranks, rows, colls):
        problems.append(f"the file recounts as {f['n']} ranks, {f['rows']} lines, "
                        f"{f['collectives']}; by hand {ranks}, {rows}, {colls}")
    trace = load(out)
    if trace["ranks"] != ranks:
        problems.append(f"trace of {trace['ranks']} ranks, expected {ranks}")
    problems += check_shipped_trace(f, trace, f["in_order"] if f["micro"] else None)
    rr = replay(npusim, out)
    if rr.returncode != 0:
        problems.append(f"replay exit {rr.returncode}: {rr.stderr.strip()}")
    else:
        problems += check_replay(f, {"ranks": ranks, "groups": {}}, json.loads(rr.stdout))
    for p in problems:
        fail(f"{name}: {p}")
    if problems:
        return False
    print(f"ok {os.path.basename(path)}{f' --gpus {gpus}' if gpus else ''}: {ranks} ranks, "
          f"{rows} lines, {sum(colls.values())} collectives per rank of the file's sizes, "
          f"{f['compute_ns']} ns of compute, replayed")
    return True


def shipped_files(npusim, conv, tmp):
    """All 12 shipped files convert as they are and replay; two again with
    --gpus 16 (a DP group of 2 for muti_all_reduce.txt's all-reduces, 16
    ranks for a MICRO file); --gpus against the file's all_gpus: refused."""
    ok = sum(check_shipped(npusim, conv, tmp, name) for name in SHIPPED)
    print(f"{ok} of {len(SHIPPED)} shipped AICB files convert and replay")
    if ok != len(SHIPPED) or len(SHIPPED) != 12:
        fail(f"shipped AICB files: {ok} of {len(SHIPPED)} convert and replay, expected 12 of 12")
    for name in ("muti_all_reduce.txt", "all_reduce.txt"):
        check_shipped(npusim, conv, tmp, name, gpus=16)
    if read_shipped(os.path.join(SHIPPED_DIR, "muti_all_reduce.txt"), 16)["collectives"] != \
            {(AR, "dp"): 19}:
        fail("muti_all_reduce.txt --gpus 16: expected 19 all-reduces on dp")
    # negative controls: a collective's bytes changed, two MICRO sizes swapped
    f = read_shipped(os.path.join(SHIPPED_DIR, "all_gather.txt"))
    out = os.path.join(tmp, "all_gather.txt.json")
    trace = load(out) if os.path.exists(out) else None
    if trace is not None:
        ops = trace["programs"][0]["ops"]
        swapped = copy.deepcopy(trace)
        swapped["programs"][0]["ops"][0], swapped["programs"][0]["ops"][2] = ops[2], ops[0]
        resized = copy.deepcopy(trace)
        resized["programs"][0]["ops"][0]["bytes"] += 1
        for what, t in (("two sizes swapped", swapped), ("a size changed", resized)):
            if check_shipped_trace(f, t, f["in_order"]):
                print(f"ok negative control: {what} is caught")
            else:
                fail(f"negative control: the checks miss {what}")
    out = os.path.join(tmp, "gpus.json")
    r = convert(conv, "traces/aicb/microAllReduce.txt", out, "--gpus", "16")
    if r.returncode != 2 or "--gpus: expected 8" not in r.stderr or os.path.exists(out):
        fail(f"--gpus 16 against all_gpus: 8: exit {r.returncode}, {r.stderr.strip()!r}")
    else:
        print(f"ok --gpus against the file's all_gpus: {r.stderr.strip()}")


# ---- running -----------------------------------------------------------------

def convert(conv, src, out, *extra):
    return subprocess.run([sys.executable, conv, src, "-o", out, *extra],
                          capture_output=True, text=True)


def replay(npusim, trace):
    return subprocess.run([npusim, "replay", "--system", SYSTEM, "--trace", trace,
                           "--fidelity", "analytic", "--format", "json"],
                          capture_output=True, text=True)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def check_sample(npusim, conv, tmp, sample):
    name = os.path.basename(sample)
    out = os.path.join(tmp, name + ".json")
    r = convert(conv, sample, out)
    if r.returncode != 0:
        fail(f"{name}: converter exit {r.returncode}: {r.stderr.strip()}")
        return None
    notes = r.stderr.strip().split("\n")
    if not notes or not all(n.startswith("npusim-from-aicb: note: ") for n in notes) or \
            not any("vpp" in n for n in notes):
        fail(f"{name}: expected notes on stderr (vpp among them), found {notes}")
    f = read_aicb(sample)
    hand = EXPECTED[sample]
    trace = load(out)
    problems = check_groups(f, trace) + check_programs(f, trace, hand)
    rr = replay(npusim, out)
    if rr.returncode != 0:
        problems.append(f"replay exit {rr.returncode}: {rr.stderr.strip()}")
    else:
        problems += check_replay(f, hand, json.loads(rr.stdout))
    for p in problems:
        fail(f"{name}: {p}")
    # gzip output and determinism: same trace, same replay
    gz = os.path.join(tmp, name + ".json.gz")
    r2 = convert(conv, sample, gz)
    with open(gz, "rb") as fh:
        magic = fh.read(2)
    if r2.returncode != 0 or magic != b"\x1f\x8b" or load(gz) != trace:
        fail(f"{name}: .json.gz output differs from .json (exit {r2.returncode})")
    elif rr.returncode == 0:
        rg = replay(npusim, gz)
        if rg.stdout != rr.stdout:
            fail(f"{name}: replay of the .json.gz differs")
    again = os.path.join(tmp, name + ".again.json")
    convert(conv, sample, again)
    if open(again, "rb").read() != open(out, "rb").read():
        fail(f"{name}: two conversions differ")
    print(f"ok {name}: {f['n']} ranks, {sum(f['collectives'].values())} collectives and "
          f"{f['compute_ns']} ns of compute per rank, replayed")
    return f, hand, trace


def negative_controls(f, hand, trace):
    """Each defect must be reported by the checks above."""
    def defects():
        t = copy.deepcopy(trace)
        ops = t["programs"][0]["ops"]
        i = next(k for k, op in enumerate(ops) if op["kind"] == "compute" and
                 op["duration_us"] >= 1)
        ops[i]["duration_us"] += 0.001
        yield "a compute op 1 ns longer", t
        t = copy.deepcopy(trace)
        op = next(op for op in t["programs"][-1]["ops"] if op.get("comm") == "tp")
        op["comm"] = op["stream"] = "dp" if any(c["name"] == "dp" for c in t["communicators"]) \
            else "tp2"
        yield "a collective on another communicator", t
        t = copy.deepcopy(trace)
        c = t["communicators"][0]
        gs = [expand(g) for g in c["groups"]]
        if len(gs) > 1:   # two groups swap their last ranks
            gs[0][-1], gs[1][-1] = gs[1][-1], gs[0][-1]
        else:             # the one group loses a rank
            gs[0] = gs[0][:-1]
        c["groups"] = gs
        yield "a group changed", t
        if any(op["kind"] == "send" for p in trace["programs"] for op in p["ops"]):
            t = copy.deepcopy(trace)
            ops = t["programs"][0]["ops"]
            del ops[next(k for k, op in enumerate(ops) if op["kind"] == "send")]
            yield "a send dropped", t
    for what, t in defects():
        if not check_groups(f, t) + check_programs(f, t, hand):
            fail(f"negative control: the checks miss {what}")
        else:
            print(f"ok negative control: {what} is caught")


def bad_inputs(conv, tmp):
    src = "traces/aicb/moe_tp2_pp2_ep2.txt"
    lines = open(src, encoding="utf-8").read().split("\n")

    def edit(no, old, new):
        out = list(lines)
        assert old in out[no - 1], (no, old)
        out[no - 1] = out[no - 1].replace(old, new, 1)
        return out
    cases = [  # (what, lines, line number named, words the message holds)
        ("missing header field", edit(1, " model_parallel_NPU_group: 2", ""), 1,
         "model_parallel_NPU_group:"),
        ("header value not a number", edit(1, "ga: 2", "ga: two"), 1, "ga"),
        ("bad number", edit(9, "300000", "3e5"), 9, "column 3"),
        ("negative bytes", edit(10, "8388608", "-8388608"), 10, "column 5"),
        ("unknown comm type", edit(10, "ALLGATHER", "GATHER"), 10, "GATHER"),
        ("unknown suffix", edit(12, "ALLTOALL_EP", "ALLTOALL_XP"), 12, "ALLTOALL_XP"),
        ("wrong column count", edit(11, "\t100", ""), 11, "12 columns"),
        ("too many lines", edit(2, "20", "19"), 22, "after the 19 layer lines"),
        ("count not a number", edit(2, "20", "twenty"), 2, "number of layer lines"),
        ("unknown run type", edit(1, "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "DATA"), 1, "DATA"),
    ]
    for what, text, line, words in cases:
        path = os.path.join(tmp, "bad.txt")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(text))
        out = os.path.join(tmp, "bad.json")
        r = convert(conv, path, out)
        err = r.stderr.rstrip("\n")
        ok = (r.returncode == 2 and "\n" not in err and
              err.startswith(f"{path}:{line}: expected ") and words in err and
              r.stdout == "" and not os.path.exists(out))
        if ok:
            print(f"ok bad input ({what}): {err}")
        else:
            fail(f"bad input ({what}): exit {r.returncode}, stderr {err!r}, expected one line "
                 f"'{path}:{line}: expected ...' naming {words!r}, exit 2, no output")


HOSTILE_AS_BYTES = 256 << 20
HOSTILE_TIMEOUT_S = 30
HEADER = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {tp} ep: {ep} pp: {pp} " \
    "vpp: 1 ga: {ga} all_gpus: {n}"


def limited(conv, path, out):
    """The conversion of PATH to OUT under the limits; None past the time."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (HOSTILE_AS_BYTES, HOSTILE_AS_BYTES))
    try:
        return subprocess.run([sys.executable, conv, path, "-o", out], capture_output=True,
                              text=True, errors="replace", preexec_fn=limit,
                              timeout=HOSTILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None


def hostile_inputs(conv, tmp):
    path, out = os.path.join(tmp, "hostile.txt"), os.path.join(tmp, "hostile.json")
    row = "a\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t1\n"
    big_name = "n" * 1_000_000
    busy = f"{big_name}\t-1\t5\tALLREDUCE\t8\t5\tALLREDUCE\t8\t5\tALLREDUCE\t8\t100\n"
    refused = [  # (what, text, where the line points, words it holds)
        ("a layer count past 2^20", HEADER.format(tp=2, ep=1, pp=1, ga=1, n=8) + "\n2097152\n"
         + row, f"{path}:2:", "from 1 to 1048576"),
        ("ga of 5000 digits", HEADER.format(tp=2, ep=1, pp=1, ga="9" * 5000, n=8) + "\n1\n"
         + row, f"{path}:1:", "ga: an integer"),
        ("a line over 1 MiB", HEADER.format(tp=2, ep=1, pp=1, ga=1, n=8) + "\n1\n"
         + "a" * (2 << 20) + row[1:], f"{path}:3:", "a line of at most 1048576 bytes"),
        # 12 lines whose names of a million characters label 27 ops each
        ("a trace past 256 MiB", HEADER.format(tp=2, ep=1, pp=3, ga=1, n=24) + " pp_comm: 8\n12\n"
         + busy * 12, f"{path}:", "at most 268435456 bytes"),
    ]
    for what, text, where, words in refused:
        with open(path, "w") as f:
            f.write(text)
        if os.path.exists(out):
            os.unlink(out)
        r = limited(conv, path, out)
        err = r.stderr.rstrip("\n") if r else ""
        if r is None:
            fail(f"hostile input ({what}): still running after {HOSTILE_TIMEOUT_S} s")
        elif r.returncode == 2 and "\n" not in err and err.startswith(where) and words in err \
                and not r.stdout and not os.path.exists(out):
            print(f"ok hostile input ({what}): {err[:150]}")
        else:
            fail(f"hostile input ({what}): exit {r.returncode}, stderr {err[-300:]!r}, expected "
                 f"one line '{where} ...' naming {words!r}, exit 2, no output")
    fifo = os.path.join(tmp, "fifo.txt")
    os.mkfifo(fifo)
    for special in (fifo, "/dev/zero"):
        r = limited(conv, special, out)
        err = r.stderr.rstrip("\n") if r else ""
        if r is None or r.returncode != 2 or err != f"{special}: expected a regular file, found " \
                "a special file" or os.path.exists(out):
            fail(f"{special}: expected one line 'expected a regular file', exit 2; got "
                 f"{r and r.returncode} {err!r}")
        else:
            print(f"ok {special}: {err}")

    # lines that almost repeat: trying each block length took quadratic time
    # (lines of no op, so only finding the blocks takes time)
    n = 200_000
    idle = "a\t-1\t0\tNONE\t0\t0\tNONE\t0\t0\tNONE\t0\t0\n"
    lines = [idle] * n
    lines[n // 2] = "b" + idle[1:]
    with open(path, "w") as f:
        f.write(HEADER.format(tp=1, ep=1, pp=2, ga=2, n=2) + " pp_comm: 8\n"
                f"{n}\n" + "".join(lines))
    r = limited(conv, path, out)
    if r is None or r.returncode != 0:
        fail(f"{n} lines that almost repeat: {'still running after 30 s' if r is None else r.stderr}")
    else:
        # the longest L whose two blocks (lines 0 .. 2L - 1) hold no b line
        # at one place only: L = n / 4 (any longer, line n / 2 is in block 2
        # facing an a); the lines after them are the suffix
        want = f"the 2 micro-batch(es) of lines 3-{3 + 2 * (n // 4) - 1} pass"
        if want not in r.stderr:
            fail(f"{n} lines that almost repeat: expected the note '{want}', got {r.stderr!r}")
        else:
            print(f"ok {n} lines that almost repeat: {want}")

    # a million ranks: the communicators are written a few thousand ranks at a time
    with open(path, "w") as f:
        f.write(HEADER.format(tp=2, ep=2, pp=1, ga=1, n=1 << 20) + "\n2\n"
                "a\t-1\t5\tALLREDUCE\t8\t5\tALLREDUCE_EP\t8\t5\tALLREDUCE\t8\t1\n"
                "a\t-1\t5\tNONE\t0\t5\tALLREDUCE_DP_EP\t8\t5\tNONE\t0\t1\n")
    r = limited(conv, path, out)
    if r is None or r.returncode != 0:
        fail(f"2^20 ranks: {'still running after 30 s' if r is None else r.stderr[-300:]}")
        return
    bad = group_by_group(1 << 20, 2, 2, load(out))
    if bad:
        fail(f"2^20 ranks: {bad[:3]}")
    else:
        print("ok 2^20 ranks: tp, dp, ep and dp_ep groups whole")


def group_by_group(n, tp, ep, trace):
    """check_groups for one stage of N ranks, group by group (check_groups
    holds every rank's groups: too much for a million ranks)."""
    dp = n // tp
    bad = []
    if sorted(c["name"] for c in trace["communicators"]) != sorted(["tp", "dp", "ep", "dp_ep"]):
        bad.append(f"communicators {[c['name'] for c in trace['communicators']]}")
    for c in trace["communicators"]:
        seen = bytearray(n)
        for g in c["groups"]:
            members = sorted(expand(g))
            r = members[0]
            d, t = r // tp, r % tp
            want = {"tp": range(r, r + tp), "dp": range(t, n, tp),
                    "ep": range(r, r + ep * tp, tp),
                    "dp_ep": range(r, n, ep * tp)}[c["name"]]
            if members != list(want) or d % ep and c["name"] == "ep" \
                    or d >= ep and c["name"] == "dp_ep":
                bad.append(f"{c['name']}: group {str(g)[:60]} is not one of the header's")
                break
            for m in members:
                seen[m] += 1
        if seen.count(1) != n:
            bad.append(f"{c['name']}: {n - seen.count(1)} ranks not in exactly one group")
    return bad


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: from_aicb_test.py NPUSIM [CONVERTER]", file=sys.stderr)
        return 2
    npusim = sys.argv[1]
    conv = sys.argv[2] if len(sys.argv) == 3 else "scripts/tools/npusim-from-aicb"
    with tempfile.TemporaryDirectory() as tmp:
        for sample in SAMPLES:
            got = check_sample(npusim, conv, tmp, sample)
            if got:
                negative_controls(*got)
        shipped_files(npusim, conv, tmp)
        bad_inputs(conv, tmp)
        hostile_inputs(conv, tmp)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
