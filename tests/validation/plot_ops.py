#!/usr/bin/env python3
"""plot_ops.py - predicted against measured kernel time, log-log, one panel per
op class (matmul, attention, vector), as an SVG written by hand.

  tests/validation/validate_ops.py --only tests/data/validation/ops_h100_calib.csv --cv --csv ops.csv
  tests/validation/plot_ops.py ops.csv docs/img/ops_h100.svg
  tests/validation/plot_ops.py --self-test

Reads the predictions validate_ops.py --csv writes (columns set, class,
measured_us, predicted_us; set "calib": the shipped config, "cv": held out in
the k-fold cross-validation) and draws, per class, the y = x line, the +-10%
band around it, the shipped config's points (filled) and the cross-validated
ones (open), with each set's geometric-mean |error| in the panel's title.
Numbers are written with fixed formats and the points in file order: the same
CSV gives the same bytes. Python standard library only."""
import csv
import math
import sys

CLASSES = ("matmul", "attention", "vector")
SETS = (("calib", "shipped config", "#1f5fa8"), ("cv", "cross-validated (held out)", "#d2601a"))
PANEL_W, PANEL_H = 300, 300          # plot area of one panel, px
LEFT, TOP, GAP, BOTTOM = 62, 46, 78, 66
BAND = 0.10                          # the +-10% band around y = x


def read(path):
    points = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            meas, pred = float(r["measured_us"]), float(r["predicted_us"])
            if not (meas > 0 and pred > 0 and math.isfinite(meas) and math.isfinite(pred)):
                sys.exit("plot_ops: %s: expected positive finite times, found %r" % (path, r))
            points.setdefault((r["class"], r["set"]), []).append((meas, pred))
    if not points:
        sys.exit("plot_ops: %s: expected validate_ops.py --csv rows, found none" % path)
    return points


def decades(points):
    """The decades (log10 of 1 us, 10 us, ...) that hold every time of a panel."""
    values = [v for pts in points for p in pts for v in p]
    lo = math.floor(math.log10(min(values)))
    hi = math.ceil(math.log10(max(values)))
    return lo, max(hi, lo + 1)


def geomean_pct(pts):
    return 100 * (math.exp(sum(abs(math.log(p / m)) for m, p in pts) / len(pts)) - 1)


def panel(out, x0, cls, sets, lo, hi):
    """One class: axes, band, y = x, points; x0 is the panel's left edge."""
    span = hi - lo

    def px(v):
        return x0 + LEFT + PANEL_W * (math.log10(v) - lo) / span

    def py(v):
        return TOP + PANEL_H * (1 - (math.log10(v) - lo) / span)

    a, b = 10.0 ** lo, 10.0 ** hi
    left, right, top, bottom = px(a), px(b), py(b), py(a)
    out.append('<rect x="%.2f" y="%.2f" width="%d" height="%d" fill="#ffffff" stroke="#444444"/>'
               % (left, top, PANEL_W, PANEL_H))
    out.append('<g clip-path="url(#clip-%s)">' % cls)
    band = [(a, a * (1 + BAND)), (b, b * (1 + BAND)), (b, b * (1 - BAND)), (a, a * (1 - BAND))]
    out.append('<polygon points="%s" fill="#cccccc" fill-opacity="0.6"/>'
               % " ".join("%.2f,%.2f" % (px(x), py(y)) for x, y in band))
    out.append('<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="#222222" stroke-width="1"/>'
               % (left, bottom, right, top))
    for name, _, colour in SETS:
        for m, p in sets.get(name, []):
            if name == "calib":
                out.append('<circle cx="%.2f" cy="%.2f" r="3.2" fill="%s" fill-opacity="0.8"/>'
                           % (px(m), py(p), colour))
            else:
                out.append('<circle cx="%.2f" cy="%.2f" r="4.6" fill="none" stroke="%s" '
                           'stroke-width="1.3"/>' % (px(m), py(p), colour))
    out.append("</g>")
    for d in range(lo, hi + 1):  # decade ticks and labels on both axes
        v = 10.0 ** d
        label = "%g" % v if d < 6 else "1e%d" % d
        out.append('<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="#444444"/>'
                   % (px(v), bottom, px(v), bottom + 5))
        out.append('<text x="%.2f" y="%.2f" text-anchor="middle">%s</text>'
                   % (px(v), bottom + 18, label))
        out.append('<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="#444444"/>'
                   % (left - 5, py(v), left, py(v)))
        out.append('<text x="%.2f" y="%.2f" text-anchor="end">%s</text>'
                   % (left - 8, py(v) + 4, label))
    out.append('<text x="%.2f" y="%.2f" text-anchor="middle">measured (us)</text>'
               % ((left + right) / 2, bottom + 38))
    out.append('<text x="%.2f" y="%.2f" text-anchor="middle" transform="rotate(-90 %.2f %.2f)">'
               'predicted (us)</text>' % (left - 44, (top + bottom) / 2, left - 44,
                                          (top + bottom) / 2))
    stats = ", ".join("%s %.1f%%" % (short, geomean_pct(sets[name]))
                      for name, short in (("calib", "shipped"), ("cv", "CV")) if sets.get(name))
    n = len(sets.get("calib") or sets.get("cv") or [])
    out.append('<text x="%.2f" y="%.2f" text-anchor="middle" font-weight="bold">%s (%d)</text>'
               % ((left + right) / 2, top - 24, cls, n))
    out.append('<text x="%.2f" y="%.2f" text-anchor="middle">geomean |error|: %s</text>'
               % ((left + right) / 2, top - 8, stats))


def svg(points):
    classes = [c for c in CLASSES if any((c, s) in points for s, _, _ in SETS)]
    width = len(classes) * (LEFT + PANEL_W) + (len(classes) - 1) * (GAP - LEFT) + 20
    height = TOP + PANEL_H + BOTTOM + 24
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif" font-size="11">' % (width, height, width, height),
           '<rect width="100%" height="100%" fill="#ffffff"/>', "<defs>"]
    lims = {c: decades([points.get((c, s), []) for s, _, _ in SETS]) for c in classes}
    for i, c in enumerate(classes):
        x0 = i * (PANEL_W + GAP)
        out.append('<clipPath id="clip-%s"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath>'
                   % (c, x0 + LEFT, TOP, PANEL_W, PANEL_H))
    out.append("</defs>")
    for i, c in enumerate(classes):
        sets = {s: points[(c, s)] for s, _, _ in SETS if (c, s) in points}
        panel(out, i * (PANEL_W + GAP), c, sets, *lims[c])
    y = height - 12  # legend
    out.append('<circle cx="%d" cy="%d" r="3.2" fill="%s"/>' % (LEFT, y - 4, SETS[0][2]))
    out.append('<text x="%d" y="%d">%s</text>' % (LEFT + 8, y, SETS[0][1]))
    out.append('<circle cx="%d" cy="%d" r="4.6" fill="none" stroke="%s" stroke-width="1.3"/>'
               % (LEFT + 120, y - 4, SETS[1][2]))
    out.append('<text x="%d" y="%d">%s</text>' % (LEFT + 128, y, SETS[1][1]))
    out.append('<rect x="%d" y="%d" width="14" height="8" fill="#cccccc"/>' % (LEFT + 300, y - 8))
    out.append('<text x="%d" y="%d">y = x +-10%%</text>' % (LEFT + 318, y))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def self_test():
    """The drawing of a small table: valid SVG, one mark per point, the same bytes
    twice, no non-finite number. Returns the exit status."""
    import xml.etree.ElementTree as ET
    points = {("matmul", "calib"): [(17.2, 9.6), (12741, 12740)],
              ("matmul", "cv"): [(17.2, 7.1), (12741, 11000)],
              ("vector", "calib"): [(10.6, 8.5)], ("attention", "cv"): [(43.7, 80.0)]}
    text = svg(points)
    failures = []
    if text != svg({k: list(v) for k, v in points.items()}):
        failures.append("the same points give the same bytes")
    if any(w in text.lower() for w in ("nan", "inf")):
        failures.append("no non-finite number")
    root = ET.fromstring(text)
    ns = "{http://www.w3.org/2000/svg}"
    marks = [c for c in root.iter(ns + "circle")]
    if len(marks) != sum(len(v) for v in points.values()) + 2:  # + the legend's two
        failures.append("one mark per point: %d" % len(marks))
    titles = [t.text for t in root.iter(ns + "text") if t.get("font-weight") == "bold"]
    if titles != ["matmul (2)", "attention (1)", "vector (1)"]:
        failures.append("one panel per class in order: %r" % titles)
    for what in failures:
        print("plot_ops --self-test: FAILED: %s" % what)
    print("plot_ops --self-test: %d failed" % len(failures))
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    text = svg(read(sys.argv[1]))
    with open(sys.argv[2], "w", newline="\n") as f:
        f.write(text)


if __name__ == "__main__":
    main()
