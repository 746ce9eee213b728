#!/usr/bin/env python3
"""plot_serve_test.py NPUSIM - `scripts/npusim-plot serve` on the time series
of a disaggregated Llama-3-8B run (`npusim serve --timeseries`): a non-empty
PNG named as the run's CSV with .png (and at --out), printed on stdout; a CSV
of another header is one line and exit 2 with nothing written. Run from the
repository root.
"""
import os
import subprocess
import sys
import tempfile

PLOT = "scripts/npusim-plot"
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
    print(f"plot_serve: {len(failures)} failed" if failures else "plot_serve: all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
