#!/usr/bin/env python3
"""timeline_doubles.py - do a timeline's slices nest the same when a viewer
reads its times as doubles as they do in the decimals written? Checks every
slice edge of FILE.json[.gz] (a Chrome trace npusim wrote) three ways, as
viewers compute them: the double of ts as written (Perfetto, JSON.parse),
ts less the track's first ts (speedscope 1.25) and ts / 1000 (catapult's ms).
An "X" slice's end is start + dur in doubles, a B/E pair's the E's own ts.
Per track, the edges sorted by their exact decimal time must keep that order
in doubles, equal exactly where the decimals are equal (so the end of one
slice is the start of the next) and strictly less where they are less.

Prints a summary; exits 1 with the first problems if any edge moves (an "X"
timeline of whole nanoseconds fails: 0.1 + 0.2 > 0.3), 2 on bad usage.
Python standard library only.
Usage: timeline_doubles.py FILE..."""
import decimal
import gzip
import json
import sys

D = decimal.Decimal
VIEWS = {
    "ts as a double": (lambda ts, first: ts, lambda dur: dur),
    "ts less the track's first ts": (lambda ts, first: ts - first, lambda dur: dur),
    "ts / 1000": (lambda ts, first: ts / 1000, lambda dur: dur / 1000),
}


def tracks(path):
    """{(pid, tid): [(phase, ts text, dur text or None)]} of the slice events."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=str, parse_int=str)
    out = {}
    for e in doc["traceEvents"] if isinstance(doc, dict) else doc:
        if e.get("ph") in ("B", "E", "X"):
            out.setdefault((e["pid"], e["tid"]), []).append((e["ph"], e["ts"], e.get("dur")))
    return out


def edges(events, view):
    """[(exact decimal, double as the view computes it)] of a track's edges."""
    shift, scale = VIEWS[view]
    first = min(float(ts) for _, ts, _ in events)
    out = []
    for ph, ts, dur in events:
        start = shift(float(ts), first)
        out.append((D(ts), start))
        if ph == "X":
            out.append((D(ts) + D(dur), start + scale(float(dur))))
    return out


def check(path):
    problems, nedges = [], 0
    for key, events in tracks(path).items():
        for view in VIEWS:
            es = sorted(edges(events, view), key=lambda e: e[0])
            nedges += len(es)
            for (d0, f0), (d1, f1) in zip(es, es[1:]):
                if (d0 == d1) != (f0 == f1) or f1 < f0:
                    problems.append(f"pid {key[0]} tid {key[1]}, {view}: {d0} then {d1} read as "
                                    f"{f0!r} then {f1!r}")
    return problems, nedges


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__.splitlines()[-1], file=sys.stderr)
        return 2
    status = 0
    for path in sys.argv[1:]:
        problems, nedges = check(path)
        for p in problems[:5]:
            print(f"{path}: {p}")
        if problems:
            print(f"{path}: {len(problems)} of {nedges} edge pairs move when read as doubles")
            status = 1
        else:
            print(f"{path}: {nedges} edges (3 views) keep their order and ties as doubles")
    return status


if __name__ == "__main__":
    sys.exit(main())
