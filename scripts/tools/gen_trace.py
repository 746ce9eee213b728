#!/usr/bin/env python3
"""gen_trace.py - writes a synthetic npusim trace: N ranks x L layers of
compute -> collective, the collective over groups of G ranks: G consecutive
ranks (tensor parallel in a server, the default), or with --stride S the ranks
S apart (data or expert parallel across servers: rank r's group holds
r mod S + j S of its block of S G ranks). The compute is a matmul of --shape,
or with --compute-us a fixed duration. One program serves every rank, so the
file stays small at any rank count. Python standard library only.
Usage: scripts/tools/gen_trace.py --ranks N --layers L [--group G] [--stride S]
                            [--kind allreduce|alltoall|allgather|reducescatter]
                            [--bytes B] [--shape M,N,K | --compute-us US]
                            [--algo A] --out FILE(.json|.json.gz)"""
import argparse
import gzip
import json


def groups_of(ranks, group, stride):
    if stride <= 1:
        return [f"{g}-{g + group - 1}" if group > 1 else str(g) for g in range(0, ranks, group)]
    out = []
    for block in range(0, ranks, stride * group):
        for offset in range(stride):
            out.append([block + offset + j * stride for j in range(group)])
    return out


def build(a):
    ops = []
    for layer in range(a.layers):
        mm, coll = 2 * layer, 2 * layer + 1
        deps = {"deps": [coll - 2]} if layer else {}
        if a.compute_us is not None:
            ops.append({"id": mm, "kind": "compute", "stream": "compute",
                        "duration_us": a.compute_us, **deps})
        else:
            ops.append({"id": mm, "kind": "matmul", "stream": "compute",
                        "shape": [int(x) for x in a.shape.split(",")], "dtype": "bf16", **deps})
        op = {"id": coll, "kind": a.kind, "stream": "comm", "deps": [mm], "comm": "group",
              "bytes": a.bytes}
        if a.algo:
            op["algo"] = a.algo
        ops.append(op)
    return {"format": "npusim-trace", "version": 1,
            "name": f"synthetic {a.ranks} ranks x {a.layers} layers of {a.kind}",
            "ranks": a.ranks,
            "communicators": [{"name": "group", "groups": groups_of(a.ranks, a.group, a.stride)}],
            "programs": [{"ranks": f"0-{a.ranks - 1}", "ops": ops}]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--kind", default="allreduce",
                    choices=["allreduce", "alltoall", "allgather", "reducescatter"])
    ap.add_argument("--bytes", type=float, default=32 * 2**20)
    ap.add_argument("--shape", default="4096,4096,4096")
    ap.add_argument("--compute-us", type=float)
    ap.add_argument("--algo")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.ranks % (a.group * max(a.stride, 1)):
        raise SystemExit("gen_trace: --ranks must be a multiple of --group x --stride")
    text = json.dumps(build(a), indent=1)
    opener = gzip.open if a.out.endswith(".gz") else open
    with opener(a.out, "wt") as f:
        f.write(text)


if __name__ == "__main__":
    main()
