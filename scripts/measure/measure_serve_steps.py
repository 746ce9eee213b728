#!/usr/bin/env python3
"""Measures prefill and decode step times of a LLaMA-shaped model on a GPU, the
way serving engines run them, for tests/data/validation/serve_gpu.csv.

A decode step (one new token for each of `batch` sequences holding `context`
cached tokens) is captured in a CUDA graph and replayed, as vLLM and SGLang run
decode; a prefill step runs batch x prompt tokens through the layers with a
causal fused attention (torch's scaled_dot_product_attention). Weights are random
in bf16: the time depends on shapes, not values. Each row is the median of
--iters replays after --warmup.

Not yet run: no GPU has been lent to this project so far (serve_gpu.csv holds
public measurements meanwhile). Needs PyTorch with CUDA.

usage: measure_serve_steps.py --model llama3-8b [--batches 1,8,32,128]
       [--contexts 2048,4096,8192] [--prompts 512,2048] > steps.csv"""
import argparse
import statistics
import sys

MODELS = {  # layers, hidden, heads, kv_heads, ffn, vocab
    "llama2-7b": (32, 4096, 32, 32, 11008, 32000),
    "llama3-8b": (32, 4096, 32, 8, 14336, 128256),
    "llama2-70b": (80, 8192, 64, 8, 28672, 32000),
}


def build(torch, dims, layers_run):
    L, h, H, KV, ffn, vocab = dims
    d = h // H
    dev, dt = "cuda", torch.bfloat16
    mk = lambda *s: torch.randn(*s, device=dev, dtype=dt) * 0.02
    layers = [dict(qkv=mk(h, (H + 2 * KV) * d), o=mk(H * d, h), up=mk(h, 2 * ffn), down=mk(ffn, h))
              for _ in range(layers_run)]
    return layers, mk(h, vocab), d


def layer(torch, F, x, w, H, KV, d, k_cache, v_cache, causal):
    b, t, h = x.shape
    qkv = F.rms_norm(x, (h,)) @ w["qkv"]
    q, k, v = qkv.split([H * d, KV * d, KV * d], dim=-1)
    q = q.view(b, t, H, d).transpose(1, 2)
    k = k.view(b, t, KV, d).transpose(1, 2)
    v = v.view(b, t, KV, d).transpose(1, 2)
    if k_cache is not None:  # decode: attend over the cache (new token written in place)
        k_cache[:, :, -1:] = k
        v_cache[:, :, -1:] = v
        k, v = k_cache, v_cache
    a = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=H != KV)
    x = x + a.transpose(1, 2).reshape(b, t, H * d) @ w["o"]
    g, u = (F.rms_norm(x, (h,)) @ w["up"]).chunk(2, dim=-1)
    return x + (F.silu(g) * u) @ w["down"]


def timed(torch, fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e) / 1e3)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), required=True)
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--contexts", default="2048,4096,8192")
    ap.add_argument("--prompts", default="512,2048")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    L, h, H, KV, ffn, vocab = dims = MODELS[a.model]
    layers, head, d = build(torch, dims, L)
    print("model,gpu,phase,batch,context,tokens,time_s")
    gpu = torch.cuda.get_device_name()
    with torch.no_grad():
        for b in map(int, a.batches.split(",")):
            for c in map(int, a.contexts.split(",")):
                x = torch.randn(b, 1, h, device="cuda", dtype=torch.bfloat16)
                caches = [(torch.zeros(b, KV, c, d, device="cuda", dtype=torch.bfloat16),
                           torch.zeros(b, KV, c, d, device="cuda", dtype=torch.bfloat16))
                          for _ in range(L)]

                def step():
                    y = x
                    for w, (kc, vc) in zip(layers, caches):
                        y = layer(torch, F, y, w, H, KV, d, kc, vc, False)
                    return y[:, -1] @ head

                step()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    step()
                t = timed(torch, graph.replay, a.warmup, a.iters)
                print("%s,%s,decode,%d,%d,%d,%.9f" % (a.model, gpu, b, c, b, t))
                del caches, graph
            for p in map(int, a.prompts.split(",")):
                x = torch.randn(b, p, h, device="cuda", dtype=torch.bfloat16)

                def prefill():
                    y = x
                    for w in layers:
                        y = layer(torch, F, y, w, H, KV, d, None, None, True)
                    return y[:, -1] @ head

                t = timed(torch, prefill, a.warmup, a.iters)
                print("%s,%s,prefill,%d,%d,%d,%.9f" % (a.model, gpu, b, p, b * p, t))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
