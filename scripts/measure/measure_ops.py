#!/usr/bin/env python3
"""measure_ops.py - times npusim's op vocabulary on your own device with PyTorch
(CUDA, or Ascend through torch_npu when it is importable) and writes the CSV that
`npusim calibrate` and tests/validation/validate_ops.py read.

  scripts/measure/measure_ops.py --out ops_mydevice.csv                 built-in shape set
  build/npusim train --system S.json --workload W.json --list-ops ops.csv
  scripts/measure/measure_ops.py --ops ops.csv --out ops_mydevice.csv   your model's kernels
  scripts/measure/measure_ops.py --dry-run                              list the shapes, no torch

Timing (GPU time per call, never host time):
  - forward-only ops: device events around a loop of --calls back-to-back calls
    (the host runs ahead of the device, as in training), divided by the count;
    the median of --loops such loops;
  - backward ops (attention_bwd): each call timed alone between two events after
    an untimed forward; the median of --loops * --calls / 10 calls.
The header records the device, the clocks seen (nvidia-smi), torch / CUDA /
cuDNN / torch_npu versions and the attention backend. Column meanings:
tests/data/validation/README.md. Shapes follow `npusim op --shape` with 'x'.

What each op runs (eager PyTorch, one call as a training step issues it):
  matmul M,N,K[,batch] + layout nn|nt|tn|tt   torch.matmul on (transposed) views
  attention_fwd/bwd b,h,s,d[,kv]              F.scaled_dot_product_attention (GQA
                                              through enable_gqa when available)
  rmsnorm, layernorm, softmax, gelu (tanh), swiglu (silu(a)*b), rope (rotate-half),
  cross_entropy (rows x vocab), add, mul, cast, copy, reduce_sum (over rows),
  adam (torch.optim.Adam fused=True over cols fp32 parameters)
Ops that eager PyTorch runs as several kernels (rmsnorm before torch 2.4's fused
rms_norm, swiglu, rope) are timed as PyTorch runs them; the impl column says so.
Python standard library plus torch; only --dry-run works without torch."""
import argparse
import csv
import datetime
import os
import statistics
import subprocess
import sys

DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1, "fp8": 1}
VECTOR_OPS = ("add", "mul", "gelu", "swiglu", "softmax", "layernorm", "rmsnorm", "rope",
              "cross_entropy", "adam", "cast", "copy", "reduce_sum")


def builtin_set():
    """Shapes of the built-in suite: matmul layouts and transformer slices,
    an attention sweep, row-wise ops over hidden 1K-16K x rows 256-32K."""
    rows = []
    add = lambda op, shape, dtype="bf16", out="", causal=0, layout="": rows.append(
        dict(op=op, shape="x".join(str(d) for d in shape), dtype=dtype, out_dtype=out or dtype,
             causal=causal, layout=layout))
    for n in (1024, 2048, 4096, 8192, 16384):
        add("matmul", (n, n, n), layout="nn")
    # forward (x W^T), dgrad (dY W) and wgrad (dY^T X) of transformer projections at
    # TP slices: (tokens, hidden, MLP columns per rank, QKV columns per rank) of
    # LLaMA2-7B TP1, LLaMA2-70B TP8, GPT-3 175B TP8, LLaMA2-13B TP2, GPT 22B TP4
    for tokens, h, mlp, qkv in ((4096, 4096, 11008, 3 * 4096), (4096, 8192, 28672 // 8, 10240 // 8),
                                (2048, 12288, 49152 // 8, 3 * 12288 // 8),
                                (4096, 5120, 13824 // 2, 3 * 5120 // 2),
                                (2048, 6144, 24576 // 4, 3 * 6144 // 4)):
        for n, k in ((mlp, h), (h, mlp), (qkv, h)):
            add("matmul", (tokens, n, k), layout="nt")
            add("matmul", (tokens, k, n), layout="nn")
            add("matmul", (n, k, tokens), layout="tn")
    for b, m in ((32, 512), (64, 1024)):
        add("matmul", (m, m, 128, b), layout="nn")
    for d in (64, 96, 128):
        for heads in (1, 4, 8, 16, 32, 64):
            for seq in (512, 2048, 8192, 32768):
                if heads * seq > 262144:
                    continue
                batch = max(1, 16384 // seq)
                for causal in (0, 1):
                    for op in ("attention_fwd", "attention_bwd"):
                        add(op, (batch, heads, seq, d), causal=causal)
    for heads, kv in ((32, 8), (64, 8), (16, 2)):
        for op in ("attention_fwd", "attention_bwd"):
            add(op, (1, heads, 4096, 128, kv), causal=1)
    for cols in (1024, 2048, 4096, 8192, 16384):
        for r in (256, 2048, 8192, 32768):
            for op in ("rmsnorm", "layernorm", "softmax"):
                add(op, (r, cols))
    for r, v in ((4096, 32000), (8192, 50304), (4096, 128256), (2048, 152064)):
        add("cross_entropy", (r, v))
    for r, c in ((4096, 4096), (16384, 8192)):
        for op in ("add", "mul", "gelu", "swiglu", "rope", "copy"):
            add(op, (r, c))
        add("cast", (r, c), out="fp32")
        add("reduce_sum", (8, r * c // 8), dtype="fp32", out="fp32")
    for n in (1 << 24, 1 << 28):
        add("adam", (1, n), dtype="fp32")
        add("cast", (1, n), dtype="fp32", out="bf16")
    return rows


def read_ops(path):
    """Rows of an ops table (npusim train --list-ops): op, shape, dtype, ..."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    for i, r in enumerate(rows):
        if r.get("op") not in VECTOR_OPS + ("matmul", "attention_fwd", "attention_bwd"):
            sys.exit("measure_ops: %s: row %d: op: expected an npusim op, found %r"
                     % (path, i + 2, r.get("op")))
        r.setdefault("out_dtype", r["dtype"])
        r["out_dtype"] = r["out_dtype"] or r["dtype"]
        r["causal"] = int(r.get("causal") or 0)
        if int(r.get("window") or 0):
            sys.exit("measure_ops: %s: row %d: window: PyTorch's scaled_dot_product_attention "
                     "has no sliding-window kernel to time (a mask would run another kernel); "
                     "remove the row" % (path, i + 2))
        r["layout"] = r.get("layout") or ""
    return rows


class Device:
    """The torch device, its synchronisation and events: CUDA or Ascend."""

    def __init__(self, torch, want):
        self.torch = torch
        self.kind = want
        if want == "auto":
            try:
                import torch_npu  # noqa: F401 - registers torch.npu
                self.kind = "npu" if torch.npu.is_available() else "cuda"
            except ImportError:
                self.kind = "cuda"
        self.mod = getattr(torch, self.kind)
        if not self.mod.is_available():
            sys.exit("measure_ops: no %s device is available" % self.kind)
        self.dev = torch.device(self.kind)

    def name(self):
        return self.mod.get_device_name(0)

    def event(self):
        return self.mod.Event(enable_timing=True)

    def sync(self):
        self.mod.synchronize()


def loop_time_us(dev, fn, calls, loops):
    """Median over loops of (events around calls back-to-back calls) / calls."""
    fn()
    dev.sync()
    times = []
    for _ in range(loops):
        start, end = dev.event(), dev.event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        dev.sync()
        times.append(start.elapsed_time(end) * 1000.0 / calls)
    return statistics.median(times), statistics.pstdev(times)


def alone_time_us(dev, setup, fn, count):
    """Median of count calls, each between its own two events after setup()."""
    times = []
    for i in range(count + 1):
        state = setup()
        dev.sync()
        start, end = dev.event(), dev.event()
        start.record()
        fn(state)
        end.record()
        dev.sync()
        if i:  # the first call warms up
            times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times), statistics.pstdev(times)


def torch_dtype(torch, name):
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def make_matmul(torch, d, row, dims):
    m, n, k = dims[:3]
    batch = dims[3] if len(dims) > 3 else 0
    dt = torch_dtype(torch, row["dtype"])
    lead = (batch,) if batch else ()
    ta, tb = row["layout"][:1] == "t", row["layout"][1:2] == "t"
    a = torch.randn(*lead, *((k, m) if ta else (m, k)), device=d, dtype=dt)
    b = torch.randn(*lead, *((n, k) if tb else (k, n)), device=d, dtype=dt)
    a = a.transpose(-1, -2) if ta else a
    b = b.transpose(-1, -2) if tb else b
    return lambda: torch.matmul(a, b), "torch.matmul"


def make_attention(torch, d, row, dims):
    import torch.nn.functional as F
    b, h, s, hd = dims[:4]
    kv = dims[4] if len(dims) > 4 else h
    dt = torch_dtype(torch, row["dtype"])
    q = torch.randn(b, h, s, hd, device=d, dtype=dt, requires_grad=True)
    k = torch.randn(b, kv, s, hd, device=d, dtype=dt, requires_grad=True)
    v = torch.randn(b, kv, s, hd, device=d, dtype=dt, requires_grad=True)
    causal = bool(row["causal"])
    gqa = {"enable_gqa": True} if kv != h else {}

    def fwd():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)
    return fwd, q


def make_vector(torch, d, row, dims):
    import torch.nn.functional as F
    r, c = (1, dims[0]) if len(dims) == 1 else dims[:2]
    op, dt = row["op"], torch_dtype(torch, row["dtype"])
    x = torch.randn(r, c, device=d, dtype=dt)
    if op in ("add", "mul"):
        y = torch.randn(r, c, device=d, dtype=dt)
        return ((lambda: x + y) if op == "add" else (lambda: x * y)), "torch"
    if op == "gelu":
        return (lambda: F.gelu(x, approximate="tanh")), "F.gelu(tanh)"
    if op == "swiglu":
        ab = torch.randn(r, 2 * c, device=d, dtype=dt)
        a, b2 = ab.chunk(2, dim=-1)
        return (lambda: F.silu(a) * b2), "silu(a)*b (2 kernels)"
    if op == "softmax":
        return (lambda: torch.softmax(x, dim=-1)), "torch.softmax"
    if op == "layernorm":
        w, b = torch.ones(c, device=d, dtype=dt), torch.zeros(c, device=d, dtype=dt)
        return (lambda: F.layer_norm(x, (c,), w, b)), "F.layer_norm"
    if op == "rmsnorm":
        w = torch.ones(c, device=d, dtype=dt)
        if hasattr(F, "rms_norm"):
            return (lambda: F.rms_norm(x, (c,), w)), "F.rms_norm"
        return (lambda: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(dt) * w,
                "unfused rmsnorm")
    if op == "rope":
        cos, sin = torch.randn(r, c, device=d, dtype=dt), torch.randn(r, c, device=d, dtype=dt)

        def rope():
            x1, x2 = x.chunk(2, dim=-1)
            return x * cos + torch.cat((-x2, x1), dim=-1) * sin
        return rope, "rotate-half (several kernels)"
    if op == "cross_entropy":
        t = torch.randint(0, c, (r,), device=d)
        return (lambda: F.cross_entropy(x, t)), "F.cross_entropy"
    if op == "cast":
        out = torch_dtype(torch, row["out_dtype"])
        return (lambda: x.to(out)), "Tensor.to"
    if op == "copy":
        y = torch.empty_like(x)
        return (lambda: y.copy_(x)), "Tensor.copy_"
    if op == "reduce_sum":
        return (lambda: x.sum(dim=0)), "Tensor.sum(0)"
    if op == "adam":
        p = torch.nn.Parameter(torch.randn(r * c, device=d, dtype=torch.float32))
        p.grad = torch.randn_like(p)
        opt = torch.optim.Adam([p], lr=1e-4, fused=True)
        return opt.step, "Adam(fused=True)"
    raise ValueError(op)


def measure(torch, dev, row, args):
    dims = [int(x) for x in row["shape"].split("x")]
    if row["op"] == "matmul":
        fn, impl = make_matmul(torch, dev.dev, row, dims)
        return loop_time_us(dev, fn, args.calls, args.loops) + (impl,)
    if row["op"] == "attention_fwd":
        fn, _ = make_attention(torch, dev.dev, row, dims)
        with torch.no_grad():
            return loop_time_us(dev, fn, args.calls, args.loops) + ("sdpa",)
    if row["op"] == "attention_bwd":
        fn, q = make_attention(torch, dev.dev, row, dims)

        def setup():
            out = fn()
            return out, torch.randn_like(out)
        count = max(5, args.loops * args.calls // 10)
        return alone_time_us(dev, setup, lambda st: st[0].backward(st[1]), count) + ("sdpa",)
    fn, impl = make_vector(torch, dev.dev, row, dims)
    return loop_time_us(dev, fn, args.calls, args.loops) + (impl,)


def header_lines(torch, dev, args):
    lines = ["# npusim kernel measurements (scripts/measure/measure_ops.py)",
             "# device: %s" % dev.name(),
             "# date: %s" % datetime.date.today().isoformat(),
             "# torch: %s" % torch.__version__]
    if dev.kind == "cuda":
        lines.append("# cuda: %s; cudnn: %s" % (torch.version.cuda, torch.backends.cudnn.version()))
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem,"
                                  "power.limit", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout.strip()
            lines.append("# clocks (sm, max sm, mem, power limit): %s" % smi)
        except (OSError, subprocess.SubprocessError):
            lines.append("# clocks: nvidia-smi not available")
        backends = [name for name in ("flash", "mem_efficient", "math", "cudnn")
                    if getattr(torch.backends.cuda, name + "_sdp_enabled", lambda: False)()]
        lines.append("# attention backend: F.scaled_dot_product_attention, enabled: %s"
                     % ", ".join(backends))
    else:
        import torch_npu
        lines.append("# torch_npu: %s" % getattr(torch_npu, "__version__", "?"))
    lines.append("# method: forward ops median of %d loops of %d back-to-back calls / calls; "
                 "attention_bwd each call alone after an untimed forward" % (args.loops, args.calls))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", action="append", default=[],
                    help="ops table(s) from npusim train --list-ops (default: the built-in set)")
    ap.add_argument("--out", default="ops_measured.csv", help="the CSV to write")
    ap.add_argument("--device", default="auto", choices=("auto", "cuda", "npu"))
    ap.add_argument("--calls", type=int, default=20, help="back-to-back calls per loop")
    ap.add_argument("--loops", type=int, default=7, help="loops (the median is kept)")
    ap.add_argument("--dry-run", action="store_true", help="print the shapes and stop")
    args = ap.parse_args()
    rows = []
    for path in args.ops:
        rows += read_ops(path)
    rows = rows or builtin_set()
    seen, unique = set(), []
    for r in rows:
        key = (r["op"], r["shape"], r["dtype"], r["out_dtype"], r["causal"], r["layout"])
        if key not in seen:
            seen.add(key)
            unique.append(r)
    if args.dry_run:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(["op", "shape", "dtype", "out_dtype", "causal", "layout"])
        for r in unique:
            w.writerow([r["op"], r["shape"], r["dtype"], r["out_dtype"], r["causal"], r["layout"]])
        return
    import torch
    dev = Device(torch, args.device)
    tmp = args.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        for line in header_lines(torch, dev, args):
            f.write(line + "\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["op", "shape", "dtype", "out_dtype", "causal", "layout", "time_us", "std_us",
                    "impl"])
        for i, r in enumerate(unique):
            try:
                us, sd, impl = measure(torch, dev, r, args)
            except (RuntimeError, ValueError) as e:  # out of memory, unsupported dtype
                print("measure_ops: skipped %s %s: %s" % (r["op"], r["shape"], str(e)[:120]),
                      file=sys.stderr)
                dev.mod.empty_cache()
                continue
            w.writerow([r["op"], r["shape"], r["dtype"], r["out_dtype"], r["causal"], r["layout"],
                        "%.3f" % us, "%.3f" % sd, impl])
            f.flush()
            if sys.stderr.isatty():
                print("\r%d/%d %s %s" % (i + 1, len(unique), r["op"], r["shape"]), end="",
                      file=sys.stderr)
            dev.mod.empty_cache()
    os.replace(tmp, args.out)
    print("measure_ops: wrote %s" % args.out, file=sys.stderr)


if __name__ == "__main__":
    main()
