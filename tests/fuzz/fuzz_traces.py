#!/usr/bin/env python3
"""fuzz_traces.py - random multi-stream traces through every replay engine.

Each seed builds one trace of 2 to 8 ranks, each rank its own program on 1 to 3
streams: compute and delays (some of zero length), buffers allocated and
freed, sends and recvs (tags from a small set, the peer
spelled as `peer` or `peer_offset` at random, a channel's messages spread over
several streams), collectives on a world and a partial communicator, record and
wait events and dependencies. The ops are laid out along one global order, so
the trace is valid and can complete; one seed in four is then mutated (two ops
of a program swapped, a recv dropped, a dependency pointed forward) so the
checks on reading get traces that may not.

Every trace is replayed four ways: analytic without the simulator (the sweep),
analytic on the SimGrid actors (NPUSIM_REPLAY_ACTORS=1), flow, and flow again
to check determinism. All four must agree on the exit status and, on failure,
on the one-line error; the two analytic engines must print the same bytes, and
so must the two flow runs. A disagreement is saved under --keep with the
commands that show it.
Usage: tests/fuzz/fuzz_traces.py [--npusim PATH] [--seeds A:B] [--jobs N]
                              [--keep DIR] [--quiet]
Python standard library only."""
import argparse
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYSTEM = os.path.join(ROOT, "configs", "systems", "ascend-910b.json")
TAGS = ["", "a", "b"]
STREAMS = ["compute", "s1", "s2"]


class Rank:
    def __init__(self, r, nstreams):
        self.r = r
        self.ops = []
        self.streams = STREAMS[:nstreams]
        self.events = 0

    def add(self, rng, op, stream=None):
        op["id"] = len(self.ops)
        op["stream"] = stream or rng.choice(self.streams)
        if self.ops and rng.random() < 0.3:  # a dependency on an earlier op
            op["deps"] = [rng.randrange(len(self.ops))]
        self.ops.append(op)
        return op


def p2p(rng, ranks, n):
    a, b = rng.sample(range(n), 2)
    tag = rng.choice(TAGS)
    nbytes = rng.choice([1024, 1 << 20, 64 << 20])
    for me, other, kind in ((a, b, "send"), (b, a, "recv")):
        op = {"kind": kind, "bytes": nbytes}
        if rng.random() < 0.5:
            op["peer"] = other
        else:
            op["peer_offset"] = other - me
        if tag:
            op["tag"] = tag
        ranks[me].add(rng, op)


def collective(rng, ranks, comms, comm_stream):
    name = rng.choice(sorted(comms))
    kind = rng.choice(["allreduce", "allgather", "broadcast", "reducescatter"])
    nbytes = rng.choice([4096, 1 << 20, 32 << 20])
    for r in comms[name]:
        op = {"kind": kind, "comm": name, "bytes": nbytes}
        if kind == "broadcast":
            op["root"] = 0
        ranks[r].add(rng, op, comm_stream[(r, name)])


def event(rng, rank):
    name = "e%d" % rank.events
    rank.events += 1
    rank.add(rng, {"kind": "record", "event": name})
    for _ in range(rng.randrange(1, 3)):
        rank.add(rng, {"kind": "wait", "event": name})


def memory(rng, rank):
    """A buffer comes into use, and half the time goes again (memory ops keep
    the analytic replay on the actors)."""
    name = "b%d" % len(rank.ops)
    rank.add(rng, {"kind": "alloc", "buffer": name, "bytes": rng.choice([0, 1 << 20, 1 << 30])})
    if rng.random() < 0.5:
        rank.add(rng, {"kind": "free", "buffer": name})


def mutate(rng, ranks):
    rank = rng.choice(ranks)
    if len(rank.ops) < 2:
        return
    what = rng.randrange(3)
    if what == 0:  # swap two ops' places (ids stay unique)
        i, j = rng.sample(range(len(rank.ops)), 2)
        rank.ops[i], rank.ops[j] = rank.ops[j], rank.ops[i]
    elif what == 1:  # drop a recv
        recvs = [k for k, op in enumerate(rank.ops) if op["kind"] == "recv"]
        if recvs:
            del rank.ops[rng.choice(recvs)]
    else:  # a dependency on a later op
        i = rng.randrange(len(rank.ops) - 1)
        rank.ops[i]["deps"] = [rank.ops[rng.randrange(i + 1, len(rank.ops))]["id"]]


def build(seed):
    rng = random.Random(seed)
    n = rng.randrange(2, 9)
    ranks = [Rank(r, rng.randrange(1, 4)) for r in range(n)]
    sub = sorted(rng.sample(range(n), rng.randrange(2, n + 1)))
    comms = {"world": list(range(n)), "sub": sub}
    comm_stream = {(r, c): rng.choice(ranks[r].streams) for r in range(n) for c in comms
                   if r in comms[c]}
    for _ in range(rng.randrange(4, 40)):
        x = rng.random()
        if x < 0.45:
            p2p(rng, ranks, n)
        elif x < 0.6:
            collective(rng, ranks, comms, comm_stream)
        elif x < 0.7:
            event(rng, rng.choice(ranks))
        elif x < 0.75:
            memory(rng, rng.choice(ranks))
        else:
            rank = rng.choice(ranks)
            if rng.random() < 0.8:
                rank.add(rng, {"kind": "compute", "duration_us": rng.choice([0, 1, 10, 250])})
            else:
                rank.add(rng, {"kind": "delay", "duration_us": rng.choice([0, 2, 50])})
    if rng.random() < 0.25:
        mutate(rng, ranks)
    return {"format": "npusim-trace", "version": 1, "name": "fuzz seed %d" % seed,
            "ranks": n,
            "ranks_per_node": rng.choice([d for d in (2, 4, 8) if n % d == 0 or n <= d]),
            "communicators": [{"name": c, "groups": [g]} for c, g in sorted(comms.items())],
            "programs": [{"ranks": [rk.r], "ops": rk.ops} for rk in ranks]}


def replay(npusim, path, fidelity, actors):
    env = dict(os.environ)
    env.pop("NPUSIM_REPLAY_ACTORS", None)
    if actors:
        env["NPUSIM_REPLAY_ACTORS"] = "1"
    try:
        run = subprocess.run([npusim, "replay", "--system", SYSTEM, "--trace", path,
                              "--fidelity", fidelity, "--format", "json"], capture_output=True,
                             env=env, timeout=120)
    except subprocess.TimeoutExpired:
        return "timeout", b"", b"ran past 120 s\n"
    return run.returncode, run.stdout, run.stderr


def check(npusim, seed, keep):
    trace = build(seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        with open(path, "w") as f:
            json.dump(trace, f)
        runs = {"sweep": replay(npusim, path, "analytic", False),
                "actors": replay(npusim, path, "analytic", True),
                "flow": replay(npusim, path, "flow", False),
                "flow again": replay(npusim, path, "flow", False)}
    problem = None
    codes = {k: v[0] for k, v in runs.items()}
    errors = {k: v[2] for k, v in runs.items()}
    if len(set(codes.values())) > 1:
        problem = "exit status differs: %s" % codes
    elif codes["sweep"] not in (0, 2):
        problem = "exit status %s" % codes["sweep"]
    elif codes["sweep"] == 2 and (len(set(errors.values())) > 1 or
                                  errors["sweep"].count(b"\n") != 1):
        problem = "errors differ or span lines: %s" % errors
    elif codes["sweep"] == 0 and runs["sweep"][1] != runs["actors"][1]:
        problem = "analytic sweep and actors print different bytes"
    elif codes["sweep"] == 0 and runs["flow"][1] != runs["flow again"][1]:
        problem = "two flow runs print different bytes"
    if problem and keep:
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, "seed%d.json" % seed), "w") as f:
            json.dump(trace, f, indent=1)
    return seed, codes["sweep"], problem


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("--seeds", default="0:200", help="A:B, seeds A to B-1")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", help="directory for the traces that disagree")
    ap.add_argument("--quiet", action="store_true", help="print disagreements only")
    args = ap.parse_args()
    try:
        lo, hi = (int(x) for x in args.seeds.split(":"))
    except ValueError:
        sys.exit("fuzz_traces: --seeds: expected A:B, found %s" % args.seeds)
    counts = {0: 0, 2: 0}
    bad = []
    progress = sys.stderr.isatty()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = pool.map(lambda s: check(args.npusim, s, args.keep), range(lo, hi))
        for done, (seed, code, problem) in enumerate(results, 1):  # in seed order
            counts[code] = counts.get(code, 0) + 1
            if problem:
                bad.append((seed, problem))
                print("seed %d: %s" % (seed, problem))
            elif not args.quiet:
                print("seed %d: %s" % (seed, "completed" if code == 0 else "rejected"))
            if progress and done % 50 == 0:
                print("\r%d/%d traces" % (done, hi - lo), end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    print("random traces: %d replayed 4 ways, %d completed, %d rejected with one line, "
          "%d disagreements" % (hi - lo, counts.get(0, 0), counts.get(2, 0), len(bad)))
    if counts.get(0, 0) < (hi - lo) // 2:  # else the agreement proves little
        print("fuzz_traces: expected most generated traces to complete, found %d of %d"
              % (counts.get(0, 0), hi - lo))
        sys.exit(1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
