#!/usr/bin/env python3
"""Measures serving step times of a LLaMA-shaped model on a GPU, the way serving
engines run them, for tests/data/validation/serve_gpu.csv.

Phases (the `phase` column):
  decode   one new token for each of `batch` sequences holding `context` cached
           tokens, captured in a CUDA graph and replayed, as vLLM and SGLang run
           decode;
  verify   speculative decoding's target step: `tokens`/`batch` = k + 1 new tokens
           per sequence (the last accepted token and k drafts) against `context`
           cached tokens, also a CUDA graph; the k + 1 queries attend to the whole
           cache (no causal mask among them: k + 1 <= 8 keys of `context`); with
           --verify-mode pack (the default) the query heads of a KV group are
           packed as rows so the cache is read once per KV head, as engines do;
           sdpa leaves it to SDPA's enable_gqa (which reads it per query head);
  prefill  batch x prompt tokens through the layers with a causal fused attention
           (torch's scaled_dot_product_attention), eager, as prefill runs;
  prefix   a prefill with a cached prefix (prefix caching's hit): `tokens`/`batch`
           new tokens per sequence whose queries attend to `context` - new cached
           tokens plus themselves, causally aligned at the end (--prefix-flash 1,
           the default: FlashAttention-2 through torch.ops.aten._flash_attention_forward;
           0: torch.nn.attention.bias.causal_lower_right, then a boolean mask);
           the prefix's layers are not run, its KV is read from the cache.
The MLP's activation is silu(a) * b on the halves (two eager kernels), as plain
PyTorch runs it: compare with npusim's serving.kernels.swiglu unfused.
Weights and caches are random bf16: the time depends on shapes, not values. Each
row is the median of --iters timed runs (CUDA events) after --warmup. Rows whose
KV cache or activations would not fit in --mem-fraction of the free device memory
are skipped with a comment line. Comment lines (#) record the device, clocks,
versions and the method.

usage: measure_serve_steps.py --model llama3-8b [--batches 1,8,32,128]
       [--contexts 2048,4096,8192] [--prompts 512,2048] [--max-prefill-tokens 16384]
       [--verify 2,4] [--verify-batches 1,8,32] [--prefix 2048:512,8192:512]
       [--prefix-batches 1,4] [--verify-mode pack|sdpa] [--prefix-flash 1|0] > steps.csv
Needs PyTorch with CUDA."""
import argparse
import datetime
import statistics
import subprocess
import sys

MODELS = {  # layers, hidden, heads, kv_heads, ffn, vocab
    "llama2-7b": (32, 4096, 32, 32, 11008, 32000),
    "llama3-8b": (32, 4096, 32, 8, 14336, 128256),
    "llama2-70b": (80, 8192, 64, 8, 28672, 32000),
}
BF16_BYTES = 2


def build(torch, dims):
    L, h, H, KV, ffn, vocab = dims
    d = h // H
    mk = lambda *s: torch.randn(*s, device="cuda", dtype=torch.bfloat16) * 0.02
    layers = [dict(qkv=mk(h, (H + 2 * KV) * d), o=mk(H * d, h), up=mk(h, 2 * ffn), down=mk(ffn, h))
              for _ in range(L)]
    return layers, mk(h, vocab), d


def attend(torch, F, q, k, v, gqa, mask, causal, mode):
    """q (b, H, t, d), k and v (b, KV, s, d). mode "sdpa": SDPA as is (with
    grouped-query attention through enable_gqa); "pack": the G = H / KV query
    heads of a group become G x t query rows against their one KV head, so the
    cache is read once per KV head, as engines' GQA-packed kernels do (FA3's
    pack_gqa, FlashInfer); only without a mask among the rows. "flash": FA2 through
    torch.ops.aten._flash_attention_forward, whose causal mask is aligned at the
    end of the keys (bottom-right) when t < s and which takes GQA natively."""
    if mode == "flash":
        out = torch.ops.aten._flash_attention_forward(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), None, None,
            q.shape[2], k.shape[2], 0.0, causal, False)[0]
        return out.transpose(1, 2)
    if mode == "pack" and gqa and mask is None and not causal:
        b, H, t, d = q.shape
        KV = k.shape[1]
        qp = q.reshape(b, KV, (H // KV) * t, d)
        return F.scaled_dot_product_attention(qp, k, v).reshape(b, H, t, d)
    kw = {"enable_gqa": True} if gqa else {}
    if mask is not None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **kw)


def layer(torch, F, x, w, H, KV, d, cache, mask, causal, mode="sdpa"):
    """One decoder layer; with a cache the t new tokens' K/V are written into its
    last t slots and the queries attend over the whole cache."""
    b, t, h = x.shape
    qkv = F.rms_norm(x, (h,)) @ w["qkv"]
    q, k, v = qkv.split([H * d, KV * d, KV * d], dim=-1)
    q = q.view(b, t, H, d).transpose(1, 2)
    k = k.view(b, t, KV, d).transpose(1, 2)
    v = v.view(b, t, KV, d).transpose(1, 2)
    if cache is not None:
        k_cache, v_cache = cache
        k_cache[:, :, -t:] = k
        v_cache[:, :, -t:] = v
        k, v = k_cache, v_cache
    a = attend(torch, F, q, k, v, H != KV, mask, causal, mode)
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


def ints(s):
    return [int(x) for x in s.split(",") if x]


def device_header(torch, title):
    """The comment lines every measurement of this folder starts with: what, the
    device, the date, the versions and the clocks nvidia-smi reads."""
    print("# %s" % title)
    print("# device: %s" % torch.cuda.get_device_name())
    print("# date: %s" % datetime.date.today().isoformat())
    print("# torch: %s; cuda: %s; cudnn: %s" % (torch.__version__, torch.version.cuda,
                                               torch.backends.cudnn.version()))
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem,"
                              "power.limit,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        print("# clocks (sm, max sm, mem, power limit, memory): %s" % smi)
    except (OSError, subprocess.SubprocessError):
        print("# clocks: nvidia-smi not available")


def header(torch, a):
    device_header(torch, "npusim serving step measurements (scripts/measure/measure_serve_steps.py)")
    print("# method: median of %d timed runs (CUDA events) after %d warm-ups; decode and "
          "verify replay a CUDA graph, prefill and prefix run eagerly; bf16 weights, all %d layers "
          "and the LM head of the last token" % (a.iters, a.warmup, MODELS[a.model][0]))


class Runner:
    def __init__(self, torch, F, a):
        self.torch, self.F, self.a = torch, F, a
        self.dims = MODELS[a.model]
        self.layers, self.head, self.d = build(torch, self.dims)
        self.gpu = torch.cuda.get_device_name()

    def fits(self, nbytes, what):
        free, _ = self.torch.cuda.mem_get_info()
        if nbytes > self.a.mem_fraction * free:
            print("# skipped %s: needs %.1f GiB, %.1f GiB free" % (what, nbytes / 2**30, free / 2**30))
            return False
        return True

    def caches(self, b, c):
        L, _, _, KV, _, _ = self.dims
        mk = lambda: self.torch.zeros(b, KV, c, self.d, device="cuda", dtype=self.torch.bfloat16)
        return [(mk(), mk()) for _ in range(L)]

    def kv_bytes(self, b, c):
        L, _, _, KV, _, _ = self.dims
        return 2 * L * b * KV * c * self.d * BF16_BYTES

    def act_bytes(self, tokens):
        _, h, _, _, ffn, vocab = self.dims
        return tokens * (6 * h + 3 * ffn) * BF16_BYTES * 2

    def row(self, phase, b, c, tokens, t, impl):
        print("%s,%s,%s,%d,%d,%d,%.9f,%s" % (self.a.model, self.gpu, phase, b, c, tokens, t, impl))
        sys.stdout.flush()

    def graph_step(self, phase, b, c, t, mode="sdpa"):
        """decode (t = 1) or verify (t = k + 1): a CUDA graph over the cache."""
        if not self.fits(self.kv_bytes(b, c) + self.act_bytes(b * t), "%s b%d c%d" % (phase, b, c)):
            return
        torch, F, (L, h, H, KV, _, _) = self.torch, self.F, self.dims
        x = torch.randn(b, t, h, device="cuda", dtype=torch.bfloat16)
        caches = self.caches(b, c)

        def step():
            y = x
            for w, kv in zip(self.layers, caches):
                y = layer(torch, F, y, w, H, KV, self.d, kv, None, False, mode)
            return y[:, -1] @ self.head

        step()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        self.row(phase, b, c, b * t, timed(torch, graph.replay, self.a.warmup, self.a.iters),
                 "cuda-graph " + mode)
        del caches, graph
        torch.cuda.empty_cache()

    def prefill(self, b, p):
        if not self.fits(self.act_bytes(b * p) + 4 * b * p * self.dims[1] * BF16_BYTES,
                         "prefill b%d p%d" % (b, p)):
            return
        torch, F, (L, h, H, KV, _, _) = self.torch, self.F, self.dims
        x = torch.randn(b, p, h, device="cuda", dtype=torch.bfloat16)

        def run():
            y = x
            for w in self.layers:
                y = layer(torch, F, y, w, H, KV, self.d, None, None, True)
            return y[:, -1] @ self.head

        self.row("prefill", b, p, b * p, timed(torch, run, self.a.warmup, self.a.iters), "eager")
        torch.cuda.empty_cache()

    def prefix(self, b, cached, new):
        total = cached + new
        if not self.fits(self.kv_bytes(b, total) + self.act_bytes(b * new),
                         "prefix b%d cached %d new %d" % (b, cached, new)):
            return
        torch, F, (L, h, H, KV, _, _) = self.torch, self.F, self.dims
        x = torch.randn(b, new, h, device="cuda", dtype=torch.bfloat16)
        caches = self.caches(b, total)
        masks = [(None, "eager flash")] if self.a.prefix_flash else []
        try:
            from torch.nn.attention.bias import causal_lower_right
            masks.append((causal_lower_right(new, total), "eager sdpa causal_lower_right"))
        except ImportError:
            pass
        # an explicit boolean mask: torch without causal_lower_right, or one whose
        # CausalBias refuses grouped-query attention (a slower kernel; impl says so)
        i = torch.arange(new, device="cuda").unsqueeze(1) + cached
        masks.append((torch.arange(total, device="cuda").unsqueeze(0) <= i, "eager sdpa bool mask"))
        for mask, impl in masks:
            mode, causal = ("flash", True) if mask is None else ("sdpa", False)

            def run():
                y = x
                for w, kv in zip(self.layers, caches):
                    y = layer(torch, F, y, w, H, KV, self.d, kv, mask, causal, mode)
                return y[:, -1] @ self.head
            try:
                run()
                break
            except (RuntimeError, TypeError, AttributeError) as e:
                print("# prefix: %s failed (%s), next mask" % (impl, str(e)[:100]))
        self.row("prefix", b, total, b * new, timed(torch, run, self.a.warmup, self.a.iters), impl)
        del caches
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), required=True)
    ap.add_argument("--batches", default="1,8,32,128", help="decode batches")
    ap.add_argument("--contexts", default="2048,4096,8192", help="decode and verify contexts")
    ap.add_argument("--prompts", default="512,2048")
    ap.add_argument("--prefill-batches", default="1,4")
    ap.add_argument("--max-prefill-tokens", type=int, default=16384)
    ap.add_argument("--verify", default="", help="k + 1 values, e.g. 2,4")
    ap.add_argument("--verify-batches", default="1,8,32")
    ap.add_argument("--verify-mode", default="pack", choices=("pack", "sdpa"),
                    help="pack: GQA-packed queries, the cache read once per KV head (engines); "
                         "sdpa: SDPA's enable_gqa as is")
    ap.add_argument("--prefix-flash", type=int, default=1,
                    help="1: FA2's bottom-right causal mask (private torch op), else SDPA's")
    ap.add_argument("--prefix", default="", help="cached:new pairs, e.g. 2048:512,8192:512")
    ap.add_argument("--prefix-batches", default="1,4")
    ap.add_argument("--mem-fraction", type=float, default=0.85)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    header(torch, a)
    print("model,gpu,phase,batch,context,tokens,time_s,impl")
    r = Runner(torch, F, a)

    def safe(fn, *args):  # one row out of memory or refused must not end the run
        try:
            fn(*args)
        except (RuntimeError, TypeError, ValueError) as e:
            print("# skipped %s%r: %s" % (fn.__name__, args, str(e)[:120]))
            torch.cuda.empty_cache()
        sys.stdout.flush()

    with torch.no_grad():
        for b in ints(a.batches):
            for c in ints(a.contexts):
                safe(r.graph_step, "decode", b, c, 1)
        for t in ints(a.verify):
            for b in ints(a.verify_batches):
                for c in ints(a.contexts):
                    safe(r.graph_step, "verify", b, c, t, a.verify_mode)
        for b in ints(a.prefill_batches):
            for p in ints(a.prompts):
                if b * p <= a.max_prefill_tokens:
                    safe(r.prefill, b, p)
        for pair in filter(None, a.prefix.split(",")):
            cached, new = (int(x) for x in pair.split(":"))
            for b in ints(a.prefix_batches):
                if b * new <= a.max_prefill_tokens:
                    safe(r.prefix, b, cached, new)


if __name__ == "__main__":
    main()
