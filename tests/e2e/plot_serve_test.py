#!/usr/bin/env python3
"""plot_serve_test.py NPUSIM - `scripts/tools/npusim-plot serve` on the time series
of a disaggregated Llama-3-8B run (`npusim serve --timeseries`): a non-empty
PNG named as the run's CSV with .png (and at --out), printed on stdout; a CSV
of another header is one line and exit 2 with nothing written. Run from the
repository root.

Then where a chart goes (issue #26), as npusim writes its outputs: --out a
FIFO is written in place (renaming over it would replace a device such as
/dev/null with a PNG when run as root), a symlink is followed and kept, a
file keeps its mode; a sweep.json FIFO beside the results is not opened (it
waited for a writer forever); a results.jsonl with NaN is one line, exit 2.
"""
import os
import stat
import subprocess
import sys
import tempfile
import threading

PLOT = "scripts/tools/npusim-plot"
failures = []


def check(name, cond, detail=""):
    print(f"{'ok  ' if cond else 'FAIL'} {name}{': ' + str(detail) if detail and not cond else ''}")
    if not cond:
        failures.append(name)


def png(path):
    try:
        with open(path, "rb") as f:
            head = f.read(8)
        return head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 10_000
    except OSError:
        return False


def plot(*args):
    """npusim-plot's run; returncode None when it ran past 60 s."""
    try:
        return subprocess.run([PLOT, *args], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, None, "", "still running after 60 s")


def outputs(tmp):
    res = os.path.join(tmp, "sweep.out")
    os.mkdir(res)
    results = os.path.join(res, "results.csv")
    with open(results, "w") as f:
        f.write("status,x,step_time_s\nok,1,2.0\nok,2,1.5\nok,4,1.2\n")
    chart = os.path.join(tmp, "c.png")
    fifo_beside = os.path.join(tmp, "fifo.out")
    os.mkdir(fifo_beside)
    with open(os.path.join(fifo_beside, "results.csv"), "w") as f:
        f.write(open(results).read())
    os.mkfifo(os.path.join(fifo_beside, "sweep.json"))   # nobody ever writes it
    p = plot(fifo_beside, "--x", "x", "--y", "step_time_s", "--out", chart)
    check("plot beside a sweep.json FIFO: not waited on, a PNG", p.returncode == 0 and png(chart),
          (p.returncode, p.stderr))

    fifo = os.path.join(tmp, "out.fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    p = plot(results, "--x", "x", "--y", "step_time_s", "--out", fifo)
    reader.join(10)
    check("--out a FIFO: written in place (still a FIFO, the reader got the PNG)",
          p.returncode == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode) and got
          and got[0][:8] == b"\x89PNG\r\n\x1a\n", (p.returncode, p.stderr, os.lstat(fifo)))
    if not got and stat.S_ISFIFO(os.lstat(fifo).st_mode):   # unblock the reader
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    target, link = os.path.join(tmp, "target.png"), os.path.join(tmp, "link.png")
    with open(target, "w") as f:
        f.write("old")
    os.chmod(target, 0o640)
    os.symlink("target.png", link)
    p = plot(results, "--x", "x", "--y", "step_time_s", "--out", link)
    check("--out a symlink: kept, its target now the PNG with its mode 0640",
          p.returncode == 0 and os.path.islink(link) and png(target)
          and stat.S_IMODE(os.stat(target).st_mode) == 0o640, (p.returncode, p.stderr))

    jsonl = os.path.join(tmp, "nan.jsonl")
    with open(jsonl, "w") as f:
        f.write('{"status": "ok", "x": 1, "step_time_s": 2.0}\n'
                '{"status": "ok", "x": 2, "step_time_s": NaN}\n')
    p = plot(jsonl, "--x", "x", "--y", "step_time_s", "--out", chart)
    check("results.jsonl with NaN: exit 2, one line", p.returncode == 2 and
          p.stderr.count("\n") == 1 and "expected finite numbers" in p.stderr,
          (p.returncode, p.stderr))


def main():
    npusim = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="plot_serve.") as tmp:
        ts = os.path.join(tmp, "run.csv")
        r = subprocess.run([npusim, "serve", "--system", "configs/systems/h100-dgx.json",
                            "--workload", "configs/workloads/serve-llama3-8b.json",
                            "--set", "serving.requests.count=100",
                            "--set", "serving.prefill.instances=1",
                            "--set", "serving.decode.instances=2",
                            "--timeseries", ts], capture_output=True, text=True, timeout=120)
        check("npusim serve --timeseries: exit 0", r.returncode == 0, r.stderr)
        p = subprocess.run([PLOT, "serve", ts], capture_output=True, text=True, timeout=120)
        want = os.path.join(tmp, "run.png")
        check("plot serve: exit 0, prints the PNG's name",
              p.returncode == 0 and p.stdout == want + "\n", (p.returncode, p.stdout, p.stderr))
        check("plot serve: a non-empty PNG beside the CSV", png(want))
        out = os.path.join(tmp, "chart.png")
        p = subprocess.run([PLOT, "serve", ts, "--out", out, "--title", "PD", "--bins", "50"],
                           capture_output=True, text=True, timeout=120)
        check("plot serve --out: a non-empty PNG there", p.returncode == 0 and png(out), p.stderr)

        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write("a,b\n1,2\n")
        p = subprocess.run([PLOT, "serve", bad], capture_output=True, text=True, timeout=120)
        check("plot serve, another CSV: exit 2, one line, no PNG",
              p.returncode == 2 and p.stderr.count("\n") == 1 and
              "expected the header of npusim serve --timeseries" in p.stderr and
              not os.path.exists(os.path.join(tmp, "bad.png")), (p.returncode, p.stderr))
        req = os.path.join(tmp, "req.csv")
        r = subprocess.run([npusim, "serve", "--system", "configs/systems/h100-dgx.json",
                            "--workload", "configs/workloads/serve-llama3-8b.json",
                            "--set", "serving.requests.count=100",
                            "--set", "serving.prefill.instances=1",
                            "--set", "serving.decode.instances=2", "--slo", "ttft_ms=100",
                            "--requests-out", req], capture_output=True, text=True, timeout=120)
        check("npusim serve --requests-out: exit 0", r.returncode == 0, r.stderr)
        p = subprocess.run([PLOT, "serve", req], capture_output=True, text=True, timeout=120)
        check("plot serve of --requests-out: the CDFs in a non-empty PNG beside the CSV",
              p.returncode == 0 and png(os.path.join(tmp, "req.png")), (p.returncode, p.stderr))
        with open(bad, "w") as f:
            f.write(open(req).readline() + "0,0,1,1,colocated,0,colocated,0,0,-1,0,0,0,met\n")
        p = subprocess.run([PLOT, "serve", bad], capture_output=True, text=True, timeout=120)
        check("plot serve, a request with a negative TTFT: exit 2, one line naming the row",
              p.returncode == 2 and p.stderr.count("\n") == 1 and "bad.csv:2:" in p.stderr,
              (p.returncode, p.stderr))
        outputs(tmp)
    print(f"plot_serve: {len(failures)} failed" if failures else "plot_serve: all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
