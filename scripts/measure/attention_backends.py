#!/usr/bin/env python3
"""Times one causal attention forward shape on each kernel PyTorch can run it with,
to tell which kernel a measurement ran and at what rate (tests/data/validation/
serve_gpu.csv cites it for the prefix-cache rows).

For each (batch, heads, kv_heads, queries, keys, head_dim): SDPA restricted to one
backend at a time (cuDNN, flash, mem-efficient) with is_causal when queries = keys,
SDPA with torch.nn.attention.bias.causal_lower_right when queries < keys, and
FlashAttention-2 through torch.ops.aten._flash_attention_forward (causal aligned at
the end). Prints CSV: kernel, shape, time_us, TFLOP/s (causal pairs counted once).
Median of 20 timed calls (CUDA events) after 5 warm-ups. Needs PyTorch with CUDA.

usage: attention_backends.py [--shapes b,h,kv,q,k,d;...]"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_serve_steps import timed  # noqa: E402 - CUDA events, median after warm-ups


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="1,32,8,8192,8192,128;1,32,8,512,8704,128;"
                                        "4,32,8,2048,10240,128;1,32,32,512,2560,128")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    print("# device: %s; torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    print("kernel,shape,time_us,tflops")
    for spec in a.shapes.split(";"):
        b, h, kv, q, k, d = (int(x) for x in spec.split(","))
        mk = lambda heads, n: torch.randn(b, heads, n, d, device="cuda", dtype=torch.bfloat16)
        Q, K, V = mk(h, q), mk(kv, k), mk(kv, k)
        pairs = q * (k - q) + q * q / 2
        flops = 4 * b * h * pairs * d
        runs = []
        for name, be in (("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION),
                         ("sdpa-flash", SDPBackend.FLASH_ATTENTION),
                         ("sdpa-efficient", SDPBackend.EFFICIENT_ATTENTION)):
            if q == k:
                def f(be=be):
                    with sdpa_kernel(be):
                        return F.scaled_dot_product_attention(Q, K, V, is_causal=True,
                                                              enable_gqa=kv != h)
            else:
                from torch.nn.attention.bias import causal_lower_right
                m = causal_lower_right(q, k)

                def f(be=be, m=m):
                    with sdpa_kernel(be):
                        return F.scaled_dot_product_attention(Q, K, V, attn_mask=m,
                                                              enable_gqa=kv != h)
            runs.append((name, f))
        runs.append(("sdpa-default", lambda: F.scaled_dot_product_attention(
            Q, K, V, is_causal=True, enable_gqa=kv != h) if q == k else None))
        runs.append(("fa2-private-op", lambda: torch.ops.aten._flash_attention_forward(
            Q.transpose(1, 2), K.transpose(1, 2), V.transpose(1, 2), None, None, q, k, 0.0,
            True, False)[0]))
        for name, f in runs:
            if name == "sdpa-default" and q != k:
                continue
            try:
                us = timed(torch, f, 5, 20) * 1e6
                print("%s,%s,%.1f,%.1f" % (name, spec.replace(",", "x"), us, flops / us / 1e6))
            except Exception as e:  # a backend that refuses the shape
                print("%s,%s,refused,%s" % (name, spec.replace(",", "x"), str(e)[:80].replace(",", ";")))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
