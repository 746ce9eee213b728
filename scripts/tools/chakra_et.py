#!/usr/bin/env python3
"""chakra_et.py - writes Chakra execution traces (one PREFIX.<rank>.et per rank)
from a plain description, for npusim's tests, samples and benchmarks.

The wire format is Chakra's published et_def.proto (field numbers are facts of
the format; workloads/chakra.c reads the same subset): each file is a
length-delimited GlobalMetadata (version, field 1) followed by length-delimited
Node messages: id 1, name 2, type 3, ctrl_deps 4, data_deps 5, duration_micros 7,
attr 10 (AttributeProto: name 1, int32_val 7, int64_val 9, uint64_val 13, bool_val 27,
string_val 29, double_val 3). Python standard library only.

As a module: write_et(path, nodes, version="0.0.4"), where a node is a dict
{"id", "name", "type", "ctrl_deps", "data_deps", "duration_micros", "attr": [(name,
kind, value)]}, kind one of int32, int64, uint64, bool, string, double (Chakra's feeder reads
comm_type and comm_size as int64, comm_src, comm_dst and comm_tag as int32
and any other field of those as 0; tests/chakra_interop.py); node types and
collective types as NODE_TYPES and COMM_TYPES name them; split_et(data) and
join_et(messages) take an ET's bytes apart into its messages and back,
read_node(message) decodes a node.
As a script: chakra_et.py allreduce PREFIX --ranks N --layers L [--compute-us U]
[--bytes B] writes N ranks each running L x (compute U us -> all-reduce of B
bytes over all ranks), the peer workload of scripts/bench/bench_chakra.py."""
import argparse
import gzip
import struct

NODE_TYPES = {"INVALID_NODE": 0, "METADATA_NODE": 1, "MEM_LOAD_NODE": 2, "MEM_STORE_NODE": 3,
              "COMP_NODE": 4, "COMM_SEND_NODE": 5, "COMM_RECV_NODE": 6, "COMM_COLL_NODE": 7}
COMM_TYPES = {"ALL_REDUCE": 0, "REDUCE": 1, "ALL_GATHER": 2, "GATHER": 3, "SCATTER": 4,
              "BROADCAST": 5, "ALL_TO_ALL": 6, "REDUCE_SCATTER": 7, "BARRIER": 9}


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def length_field(field, data):
    return key(field, 2) + varint(len(data)) + data


def attribute(name, kind, value):
    body = length_field(1, name.encode())
    if kind == "int32":
        body += key(7, 0) + varint(value)
    elif kind == "int64":
        body += key(9, 0) + varint(value)
    elif kind == "uint64":
        body += key(13, 0) + varint(value)
    elif kind == "bool":
        body += key(27, 0) + varint(1 if value else 0)
    elif kind == "string":
        body += length_field(29, value.encode())
    elif kind == "double":
        body += key(3, 1) + struct.pack("<d", value)
    else:
        raise ValueError(kind)
    return body


def node_bytes(n):
    body = key(1, 0) + varint(n["id"])
    if n.get("name"):
        body += length_field(2, n["name"].encode())
    body += key(3, 0) + varint(NODE_TYPES.get(n["type"], n["type"]) if isinstance(n["type"], str)
                               else n["type"])
    for d in n.get("ctrl_deps", []):
        body += key(4, 0) + varint(d)
    for d in n.get("data_deps", []):
        body += key(5, 0) + varint(d)
    if "duration_micros" in n:
        body += key(7, 0) + varint(n["duration_micros"])
    for a in n.get("attr", []):
        body += length_field(10, attribute(*a))
    return body


def et_bytes(nodes, version="0.0.4"):
    meta = length_field(1, version.encode())
    out = varint(len(meta)) + meta
    for n in nodes:
        b = node_bytes(n)
        out += varint(len(b)) + b
    return out


def _varint_at(data, i):
    """The varint at data[i:] and the index after it."""
    v, shift = 0, 0
    while True:
        b = data[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def split_et(data):
    """The messages of an ET's bytes: [GlobalMetadata, node, node, ...], each
    as its bytes without the length."""
    out, i = [], 0
    while i < len(data):
        n, i = _varint_at(data, i)
        out.append(data[i:i + n])
        i += n
    return out


def _fields(msg):
    """(field, wire, value) of a message: ints for varints, bytes otherwise."""
    i = 0
    while i < len(msg):
        k, i = _varint_at(msg, i)
        field, wire = k >> 3, k & 7
        if wire == 0:
            v, i = _varint_at(msg, i)
        else:
            n = 8 if wire == 1 else 4 if wire == 5 else None
            if n is None:
                n, i = _varint_at(msg, i)
            v = msg[i:i + n]
            i += n
        yield field, wire, v


def read_node(msg):
    """A node message as a dict like write_et's, attr a dict of name: value
    (int64, uint64 and bool as ints, double, string); packed deps included."""
    node = {"ctrl_deps": [], "data_deps": [], "attr": {}}
    for field, wire, v in _fields(msg):
        if field in (1, 3, 7) and wire == 0:
            node[{1: "id", 3: "type", 7: "duration_micros"}[field]] = v
        elif field == 2:
            node["name"] = v.decode(errors="replace")
        elif field in (4, 5):
            deps = node["ctrl_deps" if field == 4 else "data_deps"]
            j = 0
            while wire == 2 and j < len(v):  # packed: varints one after another
                x, j = _varint_at(v, j)
                deps.append(x)
            if wire == 0:
                deps.append(v)
        elif field == 10:
            name, value = None, None
            for f, w, a in _fields(v):
                if f == 1:
                    name = a.decode()
                elif f in (7, 9, 11, 13, 27) and w == 0:
                    value = a - (1 << 64) if f in (7, 9) and a >> 63 else a
                elif f == 3 and w == 1:
                    value = struct.unpack("<d", a)[0]
                elif f == 29:
                    value = a.decode(errors="replace")
            node["attr"][name] = value
    return node


def join_et(messages):
    """The bytes of an ET from its messages (as split_et gives them)."""
    return b"".join(varint(len(m)) + m for m in messages)


def write_et(path, nodes, version="0.0.4"):
    data = et_bytes(nodes, version)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(data)


def allreduce_rank(layers, compute_us, nbytes):
    nodes = []
    for layer in range(layers):
        c, a = 2 * layer, 2 * layer + 1
        nodes.append({"id": c, "name": f"L{layer} compute", "type": "COMP_NODE",
                      "duration_micros": compute_us, "data_deps": [a - 2] if layer else [],
                      "attr": [("is_cpu_op", "bool", False)]})
        nodes.append({"id": a, "name": f"L{layer} all-reduce", "type": "COMM_COLL_NODE",
                      "data_deps": [c], "attr": [("is_cpu_op", "bool", False),
                                                 ("comm_type", "int64", COMM_TYPES["ALL_REDUCE"]),
                                                 ("comm_size", "int64", nbytes)]})
    return nodes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["allreduce"])
    ap.add_argument("prefix")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--compute-us", type=int, default=500)
    ap.add_argument("--bytes", type=int, default=64 << 20)
    args = ap.parse_args()
    data = et_bytes(allreduce_rank(args.layers, args.compute_us, args.bytes))
    for r in range(args.ranks):
        with open(f"{args.prefix}.{r}.et", "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
