#!/usr/bin/env python3
"""gen_trace.py - writes a synthetic npusim trace: N ranks x L layers of
matmul -> allreduce, the allreduce over groups of G consecutive ranks (tensor
parallel in a server by default). One program serves every rank, so the file
stays small at any rank count. Python standard library only.
Usage: scripts/gen_trace.py --ranks N --layers L [--group G] [--bytes B]
                            [--shape M,N,K] --out FILE(.json|.json.gz)"""
import argparse
import gzip
import json


def build(ranks, layers, group, size, shape):
    ops = []
    for layer in range(layers):
        mm, ar = 2 * layer, 2 * layer + 1
        ops.append({"id": mm, "kind": "matmul", "stream": "compute", "shape": shape,
                    "dtype": "bf16", **({"deps": [ar - 2]} if layer else {})})
        ops.append({"id": ar, "kind": "allreduce", "stream": "comm", "deps": [mm],
                    "comm": "tp", "bytes": size})
    groups = [f"{g}-{g + group - 1}" if group > 1 else str(g) for g in range(0, ranks, group)]
    return {"format": "npusim-trace", "version": 1,
            "name": f"synthetic {ranks} ranks x {layers} layers",
            "ranks": ranks, "communicators": [{"name": "tp", "groups": groups}],
            "programs": [{"ranks": f"0-{ranks - 1}", "ops": ops}]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--bytes", type=float, default=32 * 2**20)
    ap.add_argument("--shape", default="4096,4096,4096")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.ranks % a.group:
        raise SystemExit("--ranks must be a multiple of --group")
    trace = build(a.ranks, a.layers, a.group, a.bytes, [int(x) for x in a.shape.split(",")])
    text = json.dumps(trace, indent=1)
    opener = gzip.open if a.out.endswith(".gz") else open
    with opener(a.out, "wt") as f:
        f.write(text)


if __name__ == "__main__":
    main()
