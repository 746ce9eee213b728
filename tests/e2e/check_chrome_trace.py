#!/usr/bin/env python3
"""check_chrome_trace.py - validates a Chrome trace (Trace Event Format, as
Perfetto reads it) that npusim wrote: FILE.json or FILE.json.gz.

Checks:
  - the file is one JSON object with a "traceEvents" array (npusim's layout,
    an event per line, is read line by line: any size in bounded memory);
  - every event has the fields its phase needs, of the right types
    (X: name, ts, dur >= 0, pid, tid; B/E: name, ts, pid, tid; M: process/thread name or sort index
    with args; s/f: id, ts, pid, tid; f has bp "e"; i: ts and a scope s of
    g, p or t, with pid and tid unless global);
  - slices of one track (pid, tid) come in time order and never overlap in
    part: a slice starts after the previous one ends or lies inside it (a
    nested slice, such as a collective's straggler wait); times are compared
    exactly, as decimals, the way they are written;
  - a slice written as a B/E pair (as npusim writes them): per track the
    edges come in time order and each E closes the innermost open B, with
    the same name and args (speedscope matches them by both), none left open;
  - every flow arrow's start has its finish and the other way round;
  - every pid and (pid, tid) with slices is named.
Prints one line per problem (at most 20) and exits 1 if there is any; 0 and
a summary line otherwise. Python standard library only.
Usage: check_chrome_trace.py FILE [--ranks FIRST-LAST]
  --ranks: the pids must be exactly FIRST..LAST."""
import decimal
import gzip
import json
import sys

D = decimal.Decimal


def events(path):
    """The trace's events. npusim writes one event per line between a first line
    that opens the traceEvents array and a last "]}": those are parsed line by
    line, so a trace of any size is checked in bounded memory (and the lines
    together are valid JSON exactly when each is). Any other layout is parsed
    whole."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        first = f.readline()
        if first.rstrip().endswith('"traceEvents": ['):
            json.loads(first.rstrip() + "]}")  # the header is valid JSON
            closed = False
            for n, line in enumerate(f, start=2):
                line = line.rstrip("\n")
                if line == "]}":
                    closed = True
                    continue
                if closed:
                    raise ValueError(f"line {n}: text after the closing ]}}")
                if not line:
                    continue
                yield json.loads(line[:-1] if line.endswith(",") else line, parse_float=D)
            if not closed:
                raise ValueError("expected the closing ]} of the traceEvents array")
            return
        doc = json.loads(first + f.read(), parse_float=D)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError("expected an object with a traceEvents array")
    yield from doc["traceEvents"]


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return is_int(v) or isinstance(v, D)


def check(evs, ranks=None):
    problems = []

    def bad(msg):
        problems.append(msg)

    tracks, flows, named_pids, named_tids, pids = {}, {}, set(), set(), set()
    opened, last_edge = {}, {}  # per track: the open B events; the last edge's ts
    nslices = 0
    for i, e in enumerate(evs):
        where = f"event {i}"
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            bad(f"{where}: expected an object with a string name")
            continue
        ph = e.get("ph")
        if ph == "X":
            if not all(is_num(e.get(k)) for k in ("ts", "dur")) or e["dur"] < 0:
                bad(f"{where} ({e['name']}): expected numeric ts and dur >= 0")
                continue
            if not (is_int(e.get("pid")) and is_int(e.get("tid"))):
                bad(f"{where}: expected integer pid and tid")
                continue
            if "args" in e and not isinstance(e["args"], dict):
                bad(f"{where}: expected args to be an object")
            key = (e["pid"], e["tid"])
            pids.add(e["pid"])
            stack = tracks.setdefault(key, [])  # the open slices, outermost first
            start, end = e["ts"], e["ts"] + e["dur"]
            if stack and start < stack[-1][0]:
                bad(f"{where} ({e['name']}): ts {start} before the previous slice's "
                    f"{stack[-1][0]} on pid {key[0]} tid {key[1]}")
            while stack and start >= stack[-1][1]:
                stack.pop()
            if stack and end > stack[-1][1]:
                bad(f"{where} ({e['name']}): starts at {start}, before the previous slice "
                    f"on pid {key[0]} tid {key[1]} ends ({stack[-1][1]}), and ends after it")
            stack.append((start, end))
            nslices += 1
        elif ph in ("B", "E"):
            if not (is_num(e.get("ts")) and is_int(e.get("pid")) and is_int(e.get("tid"))):
                bad(f"{where} ({e['name']}): expected numeric ts and integer pid and tid")
                continue
            key = (e["pid"], e["tid"])
            pids.add(e["pid"])
            tracks.setdefault(key, [])
            stack = opened.setdefault(key, [])
            if e["ts"] < last_edge.get(key, e["ts"]):
                bad(f"{where} ({e['name']}): ts {e['ts']} before the previous edge's "
                    f"{last_edge[key]} on pid {key[0]} tid {key[1]}")
            last_edge[key] = e["ts"]
            if ph == "B":
                stack.append(e)
                continue
            if not stack:
                bad(f"{where} ({e['name']}): an E with no open B on pid {key[0]} tid {key[1]}")
                continue
            b = stack.pop()
            if b["name"] != e["name"] or b.get("args") != e.get("args"):
                bad(f"{where} ({e['name']}): the E of {b['name']!r} (ts {b['ts']}) differs "
                    f"from its B in name or args on pid {key[0]} tid {key[1]}")
            nslices += 1
        elif ph == "M":
            args = e.get("args")
            if e["name"] in ("process_name", "thread_name"):
                if not isinstance(args, dict) or not isinstance(args.get("name"), str):
                    bad(f"{where}: expected args.name for {e['name']}")
                    continue
                if e["name"] == "process_name":
                    named_pids.add(e.get("pid"))
                else:
                    named_tids.add((e.get("pid"), e.get("tid")))
            elif e["name"] in ("process_sort_index", "thread_sort_index"):
                if not isinstance(args, dict) or not is_int(args.get("sort_index")):
                    bad(f"{where}: expected an integer args.sort_index")
            else:
                bad(f"{where}: unknown metadata {e['name']}")
        elif ph in ("s", "f"):
            if not (isinstance(e.get("id"), str) and is_num(e.get("ts")) and is_int(e.get("pid"))
                    and is_int(e.get("tid"))):
                bad(f"{where}: expected id, ts, pid and tid on a flow event")
                continue
            if ph == "f" and e.get("bp") != "e":
                bad(f"{where}: expected bp \"e\" on a flow's finish")
            flows.setdefault(e["id"], []).append(ph)
        elif ph == "i":  # an instant: a timed link fault, across the timeline
            if not is_num(e.get("ts")) or e.get("s") not in ("g", "p", "t"):
                bad(f"{where} ({e['name']}): expected a numeric ts and a scope s of g, p or t "
                    f"on an instant event")
            elif e.get("s") != "g" and not (is_int(e.get("pid")) and is_int(e.get("tid"))):
                bad(f"{where}: expected integer pid and tid on a process or thread instant")
        else:
            bad(f"{where}: unexpected phase {ph!r}")
    for key, stack in opened.items():
        for b in stack:
            bad(f"{b['name']!r} (ts {b['ts']}) on pid {key[0]} tid {key[1]}: a B never closed")
    for fid, phs in flows.items():
        if sorted(phs) != ["f", "s"]:
            bad(f"flow {fid}: expected one start and one finish, found {phs}")
    for key in tracks:
        if key[0] not in named_pids:
            bad(f"pid {key[0]}: has slices but no process_name")
        if key not in named_tids:
            bad(f"pid {key[0]} tid {key[1]}: has slices but no thread_name")
    if ranks is not None and pids != set(range(ranks[0], ranks[1] + 1)):
        bad(f"expected pids {ranks[0]}-{ranks[1]}, found {sorted(pids)[:8]}...")
    return problems, len(tracks), nslices


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__.splitlines()[-3], file=sys.stderr)
        return 2
    ranks = None
    if len(args) == 3 and args[1] == "--ranks":
        a, b = args[2].split("-")
        ranks = (int(a), int(b))
    try:
        problems, ntracks, nslices = check(events(args[0]), ranks)
    except (ValueError, OSError, EOFError) as e:  # json.JSONDecodeError is a ValueError
        problems, ntracks, nslices = [f"not a valid trace: {e}"], 0, 0
    for p in problems[:20]:
        print(f"{args[0]}: {p}")
    if problems:
        print(f"{args[0]}: {len(problems)} problems")
        return 1
    print(f"{args[0]}: valid: {nslices} slices on {ntracks} tracks, none overlapping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
