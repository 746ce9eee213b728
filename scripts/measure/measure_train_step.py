#!/usr/bin/env python3
"""Times one training micro-batch (forward and backward) of a LLaMA-shaped model on
one GPU in eager PyTorch, for tests/data/validation/train_gpu.csv: the whole
step's compute as `npusim train` models it on one device (dp = tp = pp = 1), with
no optimizer (the optimizer's kernels are ops_*.csv's adam rows).

The model, as npusim's workload describes it with model.position_embedding
"learned", training.kernels swiglu and cross_entropy "unfused" (what eager
PyTorch runs): a learned position table added to the embedded tokens once; per
layer F.rms_norm, one QKV projection, SDPA's causal attention (grouped-query
through enable_gqa), the output projection, F.rms_norm, one gate-and-up
projection, silu(a) * b on its halves, the down projection; a final F.rms_norm,
the LM head and F.cross_entropy. Weights are bf16 parameters with bf16 gradients
(autograd's; no fp32 master copy), random: the time depends on shapes, not
values. Activations are kept for the backward (no recompute).

Each row: the median of --iters timed micro-batches (CUDA events around the
forward and loss.backward(), gradients zeroed between untimed), after --warmup;
and the peak memory torch allocated during one. Comment lines record the device,
clocks, versions and method.

usage: measure_train_step.py [--models NAME,...] [--seq 4096] [--micro-batches 1,2]"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_serve_steps import device_header  # noqa: E402 - the common header lines

MODELS = {  # layers, hidden, heads, kv_heads, ffn, vocab
    "llama3-8b-l4": (4, 4096, 32, 8, 14336, 128256),
    "llama2-7b-l4": (4, 4096, 32, 32, 11008, 32000),
    "llama-1b-l16": (16, 2048, 32, 8, 8192, 128256),
}


class Model:
    def __init__(self, torch, dims, seq):
        L, h, H, KV, ffn, vocab = dims
        self.dims, self.d = dims, h // H
        mk = lambda *s: (torch.randn(*s, device="cuda", dtype=torch.bfloat16) * 0.02).requires_grad_()
        self.embed, self.pos, self.head = mk(vocab, h), mk(seq, h), mk(h, vocab)
        self.layers = [dict(n1=mk(h), qkv=mk(h, (H + 2 * KV) * self.d), o=mk(H * self.d, h),
                            n2=mk(h), up=mk(h, 2 * ffn), down=mk(ffn, h)) for _ in range(L)]
        self.norm = mk(h)

    def params(self):
        ps = [self.embed, self.pos, self.head, self.norm]
        for w in self.layers:
            ps += list(w.values())
        return ps

    def loss(self, torch, F, tokens, targets):
        _, h, H, KV, _, vocab = self.dims
        b, s = tokens.shape
        x = F.embedding(tokens, self.embed) + self.pos[:s]
        for w in self.layers:
            qkv = F.rms_norm(x, (h,), w["n1"]) @ w["qkv"]
            q, k, v = qkv.split([H * self.d, KV * self.d, KV * self.d], dim=-1)
            q = q.view(b, s, H, self.d).transpose(1, 2)
            k = k.view(b, s, KV, self.d).transpose(1, 2)
            v = v.view(b, s, KV, self.d).transpose(1, 2)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=H != KV)
            x = x + a.transpose(1, 2).reshape(b, s, H * self.d) @ w["o"]
            g, u = (F.rms_norm(x, (h,), w["n2"]) @ w["up"]).chunk(2, dim=-1)
            x = x + (F.silu(g) * u) @ w["down"]
        logits = F.rms_norm(x, (h,), self.norm) @ self.head
        return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))


def header(torch, a):
    device_header(torch, "npusim training micro-batch measurements "
                         "(scripts/measure/measure_train_step.py)")
    print("# method: median of %d timed micro-batches (CUDA events around forward + "
          "loss.backward()) after %d warm-ups; bf16 weights and gradients, no optimizer, "
          "no recompute" % (a.iters, a.warmup))


def measure(torch, F, name, seq, mbs, a):
    dims = MODELS[name]
    m = Model(torch, dims, seq)
    tokens = torch.randint(0, dims[5], (mbs, seq), device="cuda")
    targets = torch.randint(0, dims[5], (mbs, seq), device="cuda")
    params = m.params()

    def step():
        m.loss(torch, F, tokens, targets).backward()

    times = []
    for i in range(a.warmup + a.iters):
        for p in params:
            p.grad = None
        torch.cuda.synchronize()
        if i == a.warmup:
            torch.cuda.reset_peak_memory_stats()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        torch.cuda.synchronize()
        if i >= a.warmup:
            times.append(s.elapsed_time(e) / 1e3)
    peak = torch.cuda.max_memory_allocated() / 2**30
    print("%s,%d,%d,%d,%d,%d,%d,%d,%d,%.9f,%.3f" % ((name,) + dims + (seq, mbs) +
                                                   (statistics.median(times), peak)))
    sys.stdout.flush()
    del m, params, tokens, targets
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--micro-batches", default="1,2")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    header(torch, a)
    print("model,layers,hidden,heads,kv_heads,ffn,vocab,seq,micro_batch,fwd_bwd_s,peak_GiB")
    for name in a.models.split(","):
        for mbs in (int(x) for x in a.micro_batches.split(",")):
            try:
                measure(torch, F, name, a.seq, mbs, a)
            except (RuntimeError, ValueError) as e:  # out of memory
                print("# skipped %s mbs %d: %s" % (name, mbs, str(e)[:120]))
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
