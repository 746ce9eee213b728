#!/usr/bin/env python3
"""nccl_tests_style.py NPUSIM - `npusim coll --style nccl-tests` and
`--style hccl-test` read by the parsers that scripts and dashboards use on the
real tools' output (issue #14). Run from the repository root.

nccl-tests: the parser below does what common ones do: it splits every line
that does not start with '#' into whitespace fields and takes the columns by
position (busbw: fields 7 and 11), and reads "# Avg bus bandwidth" and "# Out
of bounds values" by regex. Each npusim run must

- parse to the structure of the real nccl-tests logs stored in
  tests/data/formats/ (tests/data/formats/README.md names their sources): the
  same sequence of line kinds, the three column-header lines byte for byte, the
  same token layout in the run line and the device lines, 13 fields in every
  row with numbers where the real rows have numbers;
- carry npusim's own prediction: size, time, algbw and busbw of both halves
  equal to `--format json` of the same run (to the printed decimals), the count
  and redop/root nccl-tests would print, and the mean busbw in "Avg bus
  bandwidth".

hccl-test: the header and rows as hccl_test prints them with -c 0 (the printf
formats of hicann/oam-tools src/hccl_test, README.md there), parsed by
splitting on '|', with the same numbers as the JSON.

Negative controls: npusim's plain table, and the nccl-tests output with one
column dropped or with another header, must fail these checks (so the checks
can fail), and --style where it cannot apply is refused with one line.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from checks import failures, fail

FORMATS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "formats")
REAL_LOGS = ["nccl-tests_all_reduce_perf.log", "nccl-tests_alltoall_perf.log"]



# AddressSanitizer's notes on SimGrid's stack switches ("==PID==WARNING: ASan is
# ignoring requested __asan_handle_no_return ..."): not npusim's output.
ASAN_NOTE = re.compile(r"^(==\d+==.*|False positive error reports may follow|"
                       r"For details see https://github.com/google/sanitizers/issues/189)\n?",
                       re.M)


def run(npusim, args):
    p = subprocess.run([npusim] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, ASAN_NOTE.sub("", p.stderr)


# ---- the dashboard-like nccl-tests parser ----

AVG_RE = re.compile(r"^# Avg bus bandwidth\s*:\s*([-+0-9.eE]+|nan|inf)", re.M)
OOB_RE = re.compile(r"^# Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)", re.M)


def parse_nccl(text):
    """Rows by position (size count type redop root | time algbw busbw #wrong
    | time algbw busbw #wrong), the summary lines by regex. Raises ValueError
    where a dashboard's parser would break."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split()
        if len(f) < 13:
            raise ValueError("row of %d fields: %r" % (len(f), line))
        rows.append({
            "size": int(f[0]), "count": int(f[1]), "type": f[2], "redop": f[3],
            "root": int(f[4]),
            "oop": (float(f[5]), float(f[6]), float(f[7]), f[8]),
            "ip": (float(f[9]), float(f[10]), float(f[11]), f[12]),
        })
    avg = AVG_RE.search(text)
    oob = OOB_RE.search(text)
    return {"rows": rows, "avg": float(avg.group(1)) if avg else None,
            "oob": (int(oob.group(1)), oob.group(2)) if oob else None}


# ---- structure: line kinds and token layout ----

def token_kind(tok):
    if re.fullmatch(r"-?\d+", tok):
        return "INT"
    if re.fullmatch(r"-?\d+\.\d*|-?\d+(\.\d*)?[eE][-+]?\d+", tok):
        return "NUM"
    if re.fullmatch(r"[\d.]+\((factor|bytes)\)", tok):
        return "STEP"
    if re.fullmatch(r"\[[0-9a-fA-Fx:.]+\]", tok):
        return "BUSID"
    return tok


def line_shape(line):
    """(kind, detail): what a parser keyed on this line would see."""
    if not line.startswith("#"):
        f = line.split()
        kinds = []
        for i, t in enumerate(f):
            k = token_kind(t)
            if i in (8, 12) and (k == "INT" or t == "N/A"):
                k = "WRONG"  # #wrong: a count, or N/A without a check
            if i in (5, 6, 7, 9, 10, 11) and k == "INT":
                k = "NUM"  # times of 10000 us and more print without decimals
            if i in (2, 3):
                k = "WORD"
            kinds.append(k)
        return ("row", tuple(kinds))
    body = line.rstrip()
    f = body.split()
    if body == "#":
        return ("blank", None)
    if len(f) > 1 and f[1] == "nThread":
        return ("run", tuple(token_kind(t) for t in f))
    if body == "# Using devices":
        return ("devices", None)
    if len(f) > 1 and f[1] == "Rank":  # the host name (field 8) is any word
        return ("device", tuple("HOST" if i == 8 else token_kind(t) for i, t in enumerate(f[:12])))
    m = re.match(r"(# Out of bounds values\s*: )(\S+)(.*)$", body)
    if m:  # the label byte for byte (parsers split at ':' or match it whole)
        return ("oob", m.group(1), token_kind(m.group(2)), m.group(3))
    m = re.match(r"(# Avg bus bandwidth\s*: )(\S+)(.*)$", body)
    if m:  # %g: "0" or "106.526"
        return ("avg", m.group(1), "NUM" if token_kind(m.group(2)) == "INT" else
                token_kind(m.group(2)), m.group(3))
    if "out-of-place" in body or "#wrong" in body or "(elements)" in body:
        return ("header", body)  # byte for byte (but trailing blanks)
    return ("comment", body)


def shapes(text):
    """The line shapes with runs of device lines and of rows collapsed."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        s = line_shape(line)
        if out and s[0] in ("device", "row") and out[-1] == s:
            continue
        out.append(s)
    return out


def compare_structure(name, got_text, real_text, complete):
    """Differences between npusim's output and a real log (a truncated log,
    complete=False, is compared as far as it goes)."""
    got, want = shapes(got_text), shapes(real_text)
    if not complete:
        got = got[:len(want)]
    problems = []
    for i in range(max(len(got), len(want))):
        g = got[i] if i < len(got) else None
        w = want[i] if i < len(want) else None
        if g != w:
            problems.append("%s: line kind %d: got %r, real log has %r" % (name, i, g, w))
            break
    return problems


# ---- npusim's numbers against its JSON ----


def nccl_size(op, ranks, dtype, size):
    """The bytes nccl-tests runs for a requested size (its setupArgs and
    getCollByteCount): whole elements, whole per-rank slices where the size is
    all ranks' slices; alltoallv (its matrix's mean) as it is."""
    if op == "alltoallv":
        return size
    slices = ranks if op in PER_RANK_SLICE else 1
    return math.floor(math.floor(size / DTYPE_BYTES[dtype]) / slices) * slices * DTYPE_BYTES[dtype]


def json_at_nccl_sizes(npusim, args, js):
    """The JSON rows of the sizes nccl-tests runs: a row whose requested size
    is no whole number of elements (per rank) is run again at the rounded one."""
    op, ranks = opt(args, "--op", ""), int(opt(args, "--ranks", "0"))
    dtype = opt(args, "--dtype", "fp32")
    rows = []
    for j in js:
        size = nccl_size(op, ranks, dtype, j["bytes"])
        if size != j["bytes"]:
            at = list(args)
            at[at.index("--sizes") + 1] = str(size)
            rc, text, err = run(npusim, ["coll"] + at + ["--format", "json"])
            if rc != 0:
                raise ValueError("coll at %d bytes: exit %d: %s" % (size, rc, err.strip()))
            j = json.loads(text)[0]
        rows.append(j)
    return rows

NCCL_TYPES = {"fp16": "half", "bf16": "bfloat16", "fp32": "float", "int8": "int8",
              "fp8": "f8e4m3"}
DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1, "fp8": 1}
PER_RANK_SLICE = {"allgather", "reducescatter", "alltoall", "alltoallv"}
REDUCING = {"allreduce", "reducescatter", "reduce", "sendrecv"}


def decimals(tok):
    return len(tok.split(".")[1]) if "." in tok else 0


def close(printed, value, json_decimals):
    """printed (a token) is value rounded as printed, value itself rounded to
    json_decimals in the JSON."""
    tol = 0.5 * 10 ** -decimals(printed) + 0.5 * 10 ** -json_decimals + 1e-9
    return abs(float(printed) - value) <= tol


def opt(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def check_nccl_values(name, args, text, js):
    problems = []
    parsed = parse_nccl(text)
    rows = parsed["rows"]
    op, ranks = opt(args, "--op", ""), int(opt(args, "--ranks", "0"))
    dtype = opt(args, "--dtype", "fp32")
    root = int(opt(args, "--root", "0")) if op in ("broadcast", "reduce") else -1
    if len(rows) != len(js):
        return ["%s: %d rows, JSON has %d" % (name, len(rows), len(js))]
    raw = [l.split() for l in text.splitlines() if l.strip() and not l.startswith("#")]
    for r, f, j in zip(rows, raw, js):
        count = math.floor(j["bytes"] / DTYPE_BYTES[dtype])
        if op in PER_RANK_SLICE:
            count = math.floor(count / ranks)
        want = {"size": round(j["bytes"]), "count": count, "type": NCCL_TYPES[dtype],
                "redop": "sum" if op in REDUCING else "none", "root": root}
        for k, v in want.items():
            if r[k] != v:
                problems.append("%s: size %s: %s %r, expected %r" % (name, f[0], k, r[k], v))
        # size and count agree as nccl-tests prints them: the size is count
        # elements (count per rank, all ranks' slices for the sliced ops)
        slices = ranks if op in PER_RANK_SLICE else 1
        if r["size"] != r["count"] * DTYPE_BYTES[dtype] * slices:
            problems.append("%s: size %d is not count %d x %d B%s" % (
                name, r["size"], r["count"], DTYPE_BYTES[dtype],
                " x %d ranks" % slices if slices > 1 else ""))
        for half, base in (("out-of-place", 5), ("in-place", 9)):
            for off, key, jd in ((0, "time_us", 3), (1, "algbw_GBps", 4), (2, "busbw_GBps", 4)):
                if not close(f[base + off], j[key], jd):
                    problems.append("%s: size %s %s: %s %s, JSON %r"
                                    % (name, f[0], half, key, f[base + off], j[key]))
            if f[base + 3] != "N/A":
                problems.append("%s: #wrong %r, expected N/A (nothing is checked)"
                                % (name, f[base + 3]))
    mean = sum(j["busbw_GBps"] for j in js) / len(js)
    if parsed["avg"] is None or abs(parsed["avg"] - mean) > 1e-4 + 1e-5 * abs(mean):
        problems.append("%s: Avg bus bandwidth %r, mean busbw of the JSON %.6g"
                        % (name, parsed["avg"], mean))
    if parsed["oob"] != (0, "OK"):
        problems.append("%s: Out of bounds values %r, expected (0, 'OK')" % (name, parsed["oob"]))
    run_line = [l for l in text.splitlines() if l.startswith("# nThread")]
    if len(run_line) == 1:
        f = run_line[0].split()
        if int(f[f.index("minBytes") + 1]) != rows[0]["size"] or \
                int(f[f.index("maxBytes") + 1]) != rows[-1]["size"]:
            problems.append("%s: minBytes/maxBytes are not the first and last size" % name)
    devices = [l for l in text.splitlines() if l.startswith("#  Rank ")]
    if len(devices) != ranks:
        problems.append("%s: %d device lines for %d ranks" % (name, len(devices), ranks))
    return problems


def nccl_problems(name, args, text, js, reals):
    """Everything wrong with text as nccl-tests output of the run args."""
    problems = []
    for real_name, real_text in reals.items():
        complete = "Avg bus bandwidth" in real_text
        problems += compare_structure("%s vs %s" % (name, real_name), text, real_text, complete)
    try:
        problems += check_nccl_values(name, args, text, js)
    except (ValueError, IndexError, KeyError) as e:
        problems.append("%s: the parser breaks: %s" % (name, e))
    return problems


# ---- hccl-test ----

HCCL_HEADER = "data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:"
HCCL_FIRST = re.compile(r"^the minbytes is (\d+), maxbytes is (\d+), iters is (\d+), "
                        r"warmup_iters is (\d+)$")
HCCL_ROW = re.compile(r"^(\d+) *\| (\d+\.\d{2}) *\| (\d+\.\d{5}) *\| (NULL|success|failed)$")


def hccl_problems(name, text, js):
    lines = text.splitlines()
    problems = []
    if len(lines) < 3 or not HCCL_FIRST.match(lines[0]) or lines[1] != HCCL_HEADER:
        return ["%s: expected hccl_test's run line and header, found %r" % (name, lines[:2])]
    cols = [c.strip().rstrip(":") for c in lines[1].split("|")]
    rows = lines[2:]
    if len(rows) != len(js):
        return ["%s: %d rows, JSON has %d" % (name, len(rows), len(js))]
    for line, j in zip(rows, js):
        m = HCCL_ROW.match(line)
        cells = [c.strip() for c in line.split("|")]
        widths = [len(c) for c in line.split("|")]
        if not m or len(cells) != len(cols) or widths[:3] != [18, 16, 22]:
            problems.append("%s: row not in hccl_test's %%-17llu | %%-14.2f | %%-20.5f layout: %r"
                            % (name, line))
            continue
        rec = dict(zip(cols, cells))
        if int(rec["data_size(Bytes)"]) != round(j["bytes"]) or \
                not close(rec["aveg_time(us)"], j["time_us"], 3) or \
                not close(rec["alg_bandwidth(GB/s)"], j["algbw_GBps"], 4) or \
                rec["check_result"] != "NULL":
            problems.append("%s: row %r, JSON %r" % (name, line, j))
    m = HCCL_FIRST.match(lines[0])
    if int(m.group(1)) != round(js[0]["bytes"]) or int(m.group(2)) != round(js[-1]["bytes"]):
        problems.append("%s: minbytes/maxbytes are not the first and last size" % name)
    return problems


# ---- the runs ----

def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tests/e2e/nccl_tests_style.py NPUSIM")
    npusim = sys.argv[1]
    reals = {}
    for f in REAL_LOGS:
        with open(os.path.join(FORMATS, f)) as fh:
            reals[f] = fh.read()
    # the stored logs themselves parse (the parser is fit for real output)
    for f, text in reals.items():
        p = parse_nccl(text)
        if not p["rows"] or any(len(l.split()) != 13 for l in text.splitlines()
                                if l.strip() and not l.startswith("#")):
            fail("%s: the parser does not read the real log" % f)

    tmp = tempfile.mkdtemp()
    matrix = os.path.join(tmp, "matrix.json")
    with open(matrix, "w") as fh:
        json.dump([[0 if i == j else (i + 1) * 65536 for j in range(8)] for i in range(8)], fh)
    b910 = ["--system", "configs/systems/ascend-910b.json"]
    a100 = ["--system", "configs/systems/a100-dgx.json"]
    h100 = ["--system", "configs/systems/h100-dgx.json"]
    cases = [
        b910 + ["--op", "allreduce", "--ranks", "8", "--sizes", "1K:1G:16"],
        b910 + ["--op", "allreduce", "--ranks", "64", "--sizes", "64M:4G:4", "--fidelity",
                "analytic"],
        b910 + ["--op", "allgather", "--ranks", "16", "--sizes", "1M:64M:8"],
        b910 + ["--op", "reducescatter", "--ranks", "8", "--sizes", "8M", "--dtype", "fp16"],
        b910 + ["--op", "alltoall", "--ranks", "8", "--sizes", "1M:4M:1.5"],
        b910 + ["--op", "alltoallv", "--ranks", "8", "--matrix", matrix],
        a100 + ["--op", "broadcast", "--ranks", "16", "--root", "9", "--sizes", "1M:16M:4",
                "--dtype", "bf16"],
        h100 + ["--op", "reduce", "--ranks", "8", "--root", "2", "--sizes", "64K"],
        h100 + ["--op", "sendrecv", "--ranks", "16", "--sizes", "1M:1G:32", "--dtype", "int8"],
        # sizes of no whole number of elements (per rank): nccl-tests runs and
        # prints them rounded down, count and size agreeing
        b910 + ["--op", "allgather", "--ranks", "3", "--sizes", "1K:4K:2"],
        b910 + ["--op", "allreduce", "--ranks", "3", "--sizes", "1001", "--dtype", "fp16"],
        b910 + ["--op", "reducescatter", "--ranks", "6", "--sizes", "1M", "--fidelity",
                "analytic"],
    ]
    ran = 0
    for args in cases:
        name = "coll " + " ".join(a for a in args if a != matrix)
        rc, js_text, err = run(npusim, ["coll"] + args + ["--format", "json"])
        if rc != 0:
            fail("%s --format json: exit %d: %s" % (name, rc, err.strip()))
            continue
        js = json.loads(js_text)
        rc, text, err = run(npusim, ["coll"] + args + ["--style", "nccl-tests"])
        if rc != 0 or err:
            fail("%s --style nccl-tests: exit %d: %s" % (name, rc, err.strip()))
            continue
        try:
            js_nccl = json_at_nccl_sizes(npusim, args, js)
        except ValueError as e:
            fail("%s: %s" % (name, e))
            continue
        for p in nccl_problems(name, args, text, js_nccl, reals):
            fail(p)
        rc, htext, err = run(npusim, ["coll"] + args + ["--style", "hccl-test"])
        if rc != 0 or err:
            fail("%s --style hccl-test: exit %d: %s" % (name, rc, err.strip()))
            continue
        for p in hccl_problems(name, htext, js):
            fail(p)
        ran += 1

        if ran == 1:  # negative controls on the first case: the checks can fail
            rc, plain, _ = run(npusim, ["coll"] + args)
            if not nccl_problems("plain table", args, plain, js, reals):
                fail("the plain table passes the nccl-tests checks: they check nothing")
            if not hccl_problems("plain table", plain, js):
                fail("the plain table passes the hccl-test checks: they check nothing")
            dropped = "\n".join(
                l if l.startswith("#") else " ".join(l.split()[:3] + l.split()[4:])
                for l in text.splitlines())
            if not nccl_problems("redop dropped", args, dropped, js, reals):
                fail("output without the redop column passes the nccl-tests checks")
            renamed = text.replace("#wrong", " error", 1)
            if not nccl_problems("old header", args, renamed, js, reals):
                fail("output with another column header passes the nccl-tests checks")
            no_avg = "\n".join(l for l in text.splitlines() if "Avg bus" not in l)
            if not nccl_problems("no avg", args, no_avg, js, reals):
                fail("output without '# Avg bus bandwidth' passes the nccl-tests checks")
            shifted = text.replace("  N/A", "    0", 1)
            if not nccl_problems("#wrong 0", args, shifted, js, reals):
                fail("a #wrong of 0 (a check npusim does not make) passes the checks")

    # --style where it cannot apply: one line naming the option, exit 2, no output
    base = b910 + ["--op", "allreduce", "--ranks", "8", "--sizes", "1M"]
    for extra, want in (
            (["--style", "nccl-tests", "--format", "json"], "--style nccl-tests: expected --format table"),
            (["--style", "hccl-test", "--format", "csv"], "--style hccl-test: expected --format table"),
            (["--style", "nccl-tests", "--links"], "--style nccl-tests: expected no --links"),
            (["--style", "nccl"], '--style: expected nccl-tests or hccl-test, found "nccl"'),
            (["--style", "nccl-tests", "--op", "allgather", "--ranks", "512", "--sizes", "1K"],
             "--sizes: expected at least 2048 bytes with --style nccl-tests (one float element "
             "per rank), found 1024")):
        rc, out, err = run(npusim, ["coll"] + base + extra)
        if rc != 2 or out or len(err.splitlines()) != 1 or not err.startswith(want):
            fail("coll %s: exit %d, %d bytes out, stderr %r; expected exit 2 and one line "
                 "starting %r" % (" ".join(extra), rc, len(out), err, want))
    rc, out, err = run(npusim, ["op"] + b910 + ["--op", "matmul", "--shape", "64,64,64",
                                                "--style", "nccl-tests"])
    if rc != 2 or "unknown option" not in err or "--style" not in err:
        fail("op --style: exit %d, stderr %r; expected an unknown option" % (rc, err))

    os.remove(matrix)
    os.rmdir(tmp)
    print("nccl_tests_style: %d runs in both styles against %s; %d failed checks"
          % (ran, ", ".join(REAL_LOGS), len(failures)))
    sys.exit(1 if failures or ran != len(cases) else 0)


if __name__ == "__main__":
    main()
