#!/usr/bin/env python3
"""chakra_interop.py NPUSIM - the Chakra ETs npusim writes, read with Chakra's
own schema by a standard protobuf decoder, and checked against what ASTRA-sim
and Chakra's feeders take from them. Run from the repository root.

The schema is Chakra's et_def.proto, kept unchanged in
tests/data/formats/chakra/ (README.md there: source, commit, license). The
decoder is protoc (Debian's protobuf-compiler; scripts/test.sh installs it):
`protoc --decode` parses each message with the C++ protobuf library and
prints it as text, where a field the schema does not have shows as a number
and a NodeType value outside the enum as a number in place of its name.

Each rank file is split as Chakra's readers split it (protolib.py
decodeMessage, the feeders' readVarint32): a varint length of at most five
bytes, then that many bytes of message, the first a GlobalMetadata, every
other a Node; a zero length ends protolib's reading, so none may be zero.
The messages are then handed to protoc in one go, each as a field of a small
wrapper message (GlobalMetadata as field 1, every Node as field 2), which
frames them as a length-delimited field does: the bytes protoc parses as
GlobalMetadata or Node are exactly the file's messages.

Then, for `npusim train --emit-chakra` on tests/data/train/tiny.json (8 ranks:
tp, dp and pipeline sends), in flow without and with stragglers
(chip.variation) and in analytic with them, and for scripts/tools/chakra_et.py:
- every message decodes, no unknown field, every node type a NodeType name
  other than INVALID_NODE, ids unique in the file (the feeders index nodes
  by id), every ctrl_deps/data_deps id a node of the file and not the node;
- attributes hold one value each, in the oneof field the feeders read:
  is_cpu_op bool_val, comm_type and comm_size int64_val, comm_src, comm_dst
  and comm_tag int32_val, pg_name string_val (mlcommons/chakra
  src/feeder/et_feeder_node.cpp reads exactly these; ASTRA-sim's feeder_v3
  takes any integer field for the integers), npusim's own attributes
  (npusim_stream, npusim_nominal_duration_s, npusim_kind, npusim_algo,
  npusim_group) a
  string or a double;
- COMM_COLL_NODE: a comm_type ASTRA-sim runs (Workload::issue_coll_comm:
  ALL_REDUCE, ALL_TO_ALL, ALL_GATHER, REDUCE_SCATTER, BROADCAST), comm_size
  over 0, is_cpu_op not true, a pg_name ASTRA-sim can read (std::stoi: a
  decimal number; "0" or none is all ranks) that PREFIX.comm_groups.json
  holds with this rank, whose keys are all decimal numbers, and every rank
  of the group issues the same collectives on it in the same order;
- send and receive nodes carry comm_src, comm_dst, comm_tag and comm_size,
  the sender's comm_src and the receiver's comm_dst its own rank, and each
  send a receive on its peer of the same source, tag and size;
- as run: node id i is op i of the rank in train's Chrome trace of the same
  run (args.op), of the matching kind; a COMP_NODE's duration_micros is the
  op's duration there (the trace prints nanoseconds, duration_micros is
  rounded to the microsecond: they differ by at most half a microsecond and
  the trace's rounding); a collective's comm_size is the trace's bytes (an
  ALL_GATHER's divided by its group's size: each rank's input, as ASTRA-sim
  reads it, by default; with --chakra-allgather total, a fourth run, the
  trace's bytes; tiny.json's tp all-gathers are there to check) and
  its group the trace's (communicator, group), one pg_name for each, and
  npusim_group names it as COMM.GROUP; a send or
  receive's peer and size are the trace's. Without stragglers
  npusim_nominal_duration_s is the as-run duration.
Chakra's Python reader (its protolib framing, et_def_pb2 from protoc
--python_out, python3-protobuf) reads the first set as protoc decodes it:
node for node, every attribute in the same oneof field with the same value.
The Python writer's ETs: its all-reduce workload, and nodes carrying every
attribute kind it writes (negative int64, uint64 past 2^63, bool, non-ASCII
string, double) and both kinds of dependencies decode to the values written.

Negative controls: an emitted file with one defect each (an unknown field,
a node type past the enum, a cut message, one corrupted byte, a dependency
on a missing node, an id twice, a zero length, comm_size as uint64_val, a
pg_name ASTRA-sim cannot read, a collective of another size than its group's,
an all-gather's comm_size as the total, a duration_micros off the run) must be
reported, and not be reported on the
file unchanged, so the checks can fail.
"""
import codecs
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCHEMA_DIR = os.path.join(ROOT, "tests", "data", "formats", "chakra")
SCHEMA = os.path.join(SCHEMA_DIR, "et_def.proto")
sys.path.insert(0, os.path.join(ROOT, "scripts", "tools"))
import chakra_et  # noqa: E402  (the Python writer under test)
from checks import fail, finish, ok  # noqa: E402

SYS = "configs/systems/ascend-910b.json"
TINY = "tests/data/train/tiny.json"
WRAPPER = "chakra_interop_file"

# Collectives ASTRA-sim runs (astra-sim Workload::issue_coll_comm, at commit
# 518bd513ae110428cd62eb60efc0f3993fd53c70); any other comm_type throws.
ASTRA_COLLS = {"ALL_REDUCE", "ALL_TO_ALL", "ALL_GATHER", "REDUCE_SCATTER", "BROADCAST"}
# The oneof field Chakra's feeder (src/feeder/et_feeder_node.cpp) reads per
# attribute; another field reads as 0 there.
FEEDER_FIELD = {"is_cpu_op": "bool_val", "num_ops": "int64_val", "tensor_size": "uint64_val",
                "comm_type": "int64_val", "comm_priority": "int32_val",
                "comm_size": "int64_val", "comm_src": "int32_val", "comm_dst": "int32_val",
                "comm_tag": "int32_val", "pg_name": "string_val"}
NPUSIM_FIELD = {"npusim_stream": "string_val", "npusim_nominal_duration_s": "double_val",
                "npusim_kind": "string_val", "npusim_algo": "string_val",
                "npusim_group": "string_val"}
# Chrome trace event category -> Chakra node type, for the as-run match.
CATEGORY_TYPE = {"shaped": "COMP_NODE", "compute": "COMP_NODE", "delay": "COMP_NODE",
                 "collective": "COMM_COLL_NODE", "send": "COMM_SEND_NODE",
                 "recv": "COMM_RECV_NODE"}




# ---- the schema ----

def enum_of(proto, name):
    """{value name: number} of enum NAME in the .proto text."""
    m = re.search(r"enum\s+%s\s*\{([^}]*)\}" % name, proto)
    if not m:
        raise SystemExit("chakra_interop: %s: expected enum %s, found none" % (SCHEMA, name))
    return {k: int(v) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)\s*;", m.group(1))}


# ---- Chakra's framing and protoc ----

def split_messages(data):
    """The messages of a rank file as Chakra's readers take them: (messages,
    problems). A length is a varint of at most 5 bytes (the feeders'
    readVarint32); a zero length stops protolib's reader."""
    msgs, problems, i = [], [], 0
    while i < len(data):
        size, shift, start = 0, 0, i
        while True:
            if i >= len(data):
                return msgs, problems + ["message %d: a length cut by the end" % len(msgs)]
            b = data[i]
            i += 1
            size |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if i - start > 5:
            problems.append("message %d: a length of %d bytes (readers take 5)" %
                            (len(msgs), i - start))
        if size == 0:
            problems.append("message %d: length 0 (protolib stops reading there)" % len(msgs))
        if i + size > len(data):
            return msgs, problems + ["message %d: %d bytes past the end" %
                                     (len(msgs), i + size - len(data))]
        msgs.append(data[i:i + size])
        i += size
    return msgs, problems


def wrap(msgs):
    """The messages as one wrapper message: GlobalMetadata field 1, Nodes field 2."""
    out = b""
    for k, m in enumerate(msgs):
        out += chakra_et.key(1 if k == 0 else 2, 2) + chakra_et.varint(len(m)) + m
    return out


def parse_text(text):
    """protoc's text format as nested dicts of lists; values as strings
    (string fields decoded from their escapes to str). Unknown fields, which
    protoc prints by number, are collected under the key "unknown"."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s == "}":
            stack.pop()
            continue
        if s.endswith(" {"):
            key = s[:-2]
            child = {}
            if key[0].isdigit():
                stack[-1].setdefault("unknown", []).append(key)
            stack[-1].setdefault(key, []).append(child)
            stack.append(child)
            continue
        key, _, val = s.partition(": ")
        if val.startswith('"'):
            val = codecs.escape_decode(val[1:-1].encode())[0].decode("utf-8")
        if key[0].isdigit():
            stack[-1].setdefault("unknown", []).append("%s: %s" % (key, val))
        stack[-1].setdefault(key, []).append(val)
    return root


def decode(tmp, msgs):
    """(decoded wrapper, problem): protoc's parse of the messages."""
    p = subprocess.run(["protoc", "-I", SCHEMA_DIR, "-I", tmp, "--decode=" + WRAPPER,
                        os.path.join(tmp, WRAPPER + ".proto")], input=wrap(msgs),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        return None, "protoc --decode: %s" % p.stderr.decode(errors="replace").strip()
    return parse_text(p.stdout.decode()), None


def one(d, key, default=None):
    v = d.get(key)
    return v[-1] if v else default


# ---- the checks of one set ----

def attrs_of(node, where, problems):
    """{name: (field, value)} of a node's attributes; a problem for each one
    without a name, with other than one value, or in another field than the
    feeders read."""
    out = {}
    for a in node.get("attr", []):
        name = one(a, "name", "")
        values = [k for k in a if k.endswith("_val") or k.endswith("_list")]
        if not name or len(values) != 1:
            problems.append("%s: attr %r: expected a name and one value, found %s" %
                            (where, name, values))
            continue
        field = values[0]
        want = FEEDER_FIELD.get(name) or NPUSIM_FIELD.get(name)
        if want and field != want:
            problems.append("%s: attr %s: expected %s (as the feeders read it), found %s" %
                            (where, name, want, field))
        if name in out:
            problems.append("%s: attr %s twice" % (where, name))
        out[name] = (field, one(a, field))
    return out


def int_attr(attrs, name):
    v = attrs.get(name)
    return int(v[1]) if v and re.fullmatch(r"-?\d+", v[1]) else None


def check_set(tmp, prefix, ranks, schema, asrun=None, variation=False, npusim=True,
              allgather="input"):
    """Problems of the ET set PREFIX.<rank>.et (ranks files) and its
    comm_groups.json; asrun: the Chrome trace of the run, per (rank, op);
    allgather: what an ALL_GATHER's comm_size counts (--chakra-allgather)."""
    node_types, coll_types = schema
    coll_names = {v: k for k, v in coll_types.items()}
    problems = []
    groups = None
    gpath = prefix + ".comm_groups.json"
    if os.path.exists(gpath):
        groups = json.load(open(gpath))
        for k, v in groups.items():
            if not re.fullmatch(r"\d+", k):
                problems.append("%s: key %r: expected a decimal number (ASTRA-sim's std::stoi)"
                                % (gpath, k))
            if not isinstance(v, list) or not all(isinstance(r, int) and 0 <= r < ranks
                                                  for r in v):
                problems.append("%s: %s: expected ranks of the set, found %r" % (gpath, k, v))
    elif npusim:
        problems.append("%s: missing" % gpath)
    sends, recvs = [], []
    colls = {}  # pg -> {rank: [(comm_type, comm_size)]}
    chrome_pg = {}  # (comm, group) of the Chrome trace -> pg_name
    for r in range(ranks):
        path = "%s.%d.et" % (prefix, r)
        if not os.path.exists(path):
            problems.append("%s: missing" % path)
            continue
        msgs, frame = split_messages(open(path, "rb").read())
        problems += ["%s: %s" % (path, f) for f in frame]
        if not msgs:
            problems.append("%s: no GlobalMetadata" % path)
            continue
        dec, err = decode(tmp, msgs)
        if err:
            problems.append("%s: %s" % (path, err))
            continue
        for u in dec.get("unknown", []):
            problems.append("%s: a field of no message of the schema: %s" % (path, u))
        meta = one(dec, "global_metadata", {})
        if meta.get("unknown") or (npusim and one(meta, "version") != "0.0.4"):
            problems.append("%s: GlobalMetadata: expected %sno unknown field, found %r" %
                            (path, "version 0.0.4 and " if npusim else "", meta))
        nodes = dec.get("node", [])
        if len(nodes) != len(msgs) - 1:
            problems.append("%s: %d nodes decoded of %d messages" % (path, len(nodes),
                                                                       len(msgs) - 1))
        ids = [int(one(n, "id", "0")) for n in nodes]  # proto3: id 0 is not printed
        if len(set(ids)) != len(ids):
            problems.append("%s: an id twice" % path)
        idset = set(ids)
        for n, nid in zip(nodes, ids):
            where = "%s: node %d" % (path, nid)
            for u in n.get("unknown", []) + [u for a in n.get("attr", [])
                                             for u in a.get("unknown", [])]:
                problems.append("%s: a field the schema does not have: %s" % (where, u))
            ntype = one(n, "type", "INVALID_NODE")
            if ntype not in node_types or ntype == "INVALID_NODE":
                problems.append("%s: type %s: expected a NodeType of the schema" % (where, ntype))
            for dep_kind in ("ctrl_deps", "data_deps"):
                for d in n.get(dep_kind, []):
                    if int(d) not in idset or int(d) == nid:
                        problems.append("%s: %s %s: expected another node of the file" %
                                        (where, dep_kind, d))
            attrs = attrs_of(n, where, problems)
            for name in attrs:
                if name.startswith("npusim_") and name not in NPUSIM_FIELD:
                    problems.append("%s: attr %s: not an attribute npusim documents" %
                                    (where, name))
            dur = int(one(n, "duration_micros", "0"))
            if ntype == "COMM_COLL_NODE":
                ct = int_attr(attrs, "comm_type")
                size = int_attr(attrs, "comm_size")
                pg = attrs.get("pg_name", ("", ""))[1]
                if coll_names.get(ct) not in ASTRA_COLLS:
                    problems.append("%s: comm_type %s: expected one ASTRA-sim runs (%s)" %
                                    (where, ct, ", ".join(sorted(ASTRA_COLLS))))
                if not size or size <= 0:
                    problems.append("%s: comm_size %s: expected bytes over 0" % (where, size))
                if attrs.get("is_cpu_op", ("", "false"))[1] != "false":
                    problems.append("%s: is_cpu_op true (ASTRA-sim refuses comm on CPU)" % where)
                if not re.fullmatch(r"\d*", pg):
                    problems.append("%s: pg_name %r: expected a decimal number "
                                    "(ASTRA-sim's std::stoi)" % (where, pg))
                elif pg not in ("", "0") and (groups is None or r not in groups.get(pg, [])):
                    problems.append("%s: pg_name %r: expected a group of %s holding rank %d" %
                                    (where, pg, gpath, r))
                colls.setdefault(pg or "0", {}).setdefault(r, []).append((ct, size))
            elif ntype in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
                send = ntype == "COMM_SEND_NODE"
                v = [int_attr(attrs, k) for k in ("comm_src", "comm_dst", "comm_tag",
                                                  "comm_size")]
                # ASTRA-sim takes the sender's comm_src and the receiver's
                # comm_dst as its own rank where they are missing; npusim writes both
                if not npusim and v[0 if send else 1] is None:
                    v[0 if send else 1] = r
                if None in v:
                    problems.append("%s: expected comm_src, comm_dst, comm_tag and comm_size, "
                                    "found %s" % (where, sorted(attrs)))
                    continue
                if v[0 if send else 1] != r or not 0 <= v[1 if send else 0] < ranks:
                    problems.append("%s: comm_src %d, comm_dst %d: expected this rank as "
                                    "the %s and a peer of the set" %
                                    (where, v[0], v[1], "sender" if send else "receiver"))
                (sends if send else recvs).append(tuple(v))
            elif ntype == "COMP_NODE":
                nominal = attrs.get("npusim_nominal_duration_s")
                if npusim and (nominal is None or "npusim_stream" not in attrs):
                    problems.append("%s: expected npusim_nominal_duration_s and npusim_stream"
                                    % where)
                elif asrun is not None and not variation and \
                        abs(float(nominal[1]) * 1e6 - dur) > 0.5 + 1e-6:
                    problems.append("%s: npusim_nominal_duration_s %s without stragglers: "
                                    "expected the as-run %d us" % (where, nominal[1], dur))
            if asrun is None:
                continue
            ev = asrun.get((r, nid))
            if ev is None or CATEGORY_TYPE.get(ev.get("cat")) != ntype:
                problems.append("%s: %s: expected op %d of rank %d in the Chrome trace of "
                                "that kind, found %s" % (where, ntype, nid, r,
                                                         ev and ev.get("cat")))
                continue
            args = ev.get("args", {})
            if ntype == "COMP_NODE" and abs(dur - ev["dur"]) > 0.5 + 0.0005:
                problems.append("%s: duration_micros %d: expected the as-run %.3f us" %
                                (where, dur, ev["dur"]))
            if ntype == "COMM_COLL_NODE":
                want = args.get("bytes")
                if allgather == "input" and \
                        coll_names.get(int_attr(attrs, "comm_type")) == "ALL_GATHER":
                    # ASTRA-sim's all-gather size: each rank's input; the
                    # Chrome trace counts all ranks' (npusim coll's)
                    n = ranks if pg in ("", "0") else len((groups or {}).get(pg, [])) or 1
                    want = round(want / n) if want is not None else None
                if int_attr(attrs, "comm_size") != want:
                    problems.append("%s: comm_size %s: expected the as-run %s bytes%s" %
                                    (where, int_attr(attrs, "comm_size"), want,
                                     " (per rank)" if want != args.get("bytes") else ""))
                key = (args.get("comm"), args.get("group"))
                named = attrs.get("npusim_group", ("", ""))[1]
                if named != "%s.%s" % key:
                    problems.append("%s: npusim_group %r: expected the run's %s.%s" %
                                    ((where, named) + key))
                if chrome_pg.setdefault(key, pg) != pg:
                    problems.append("%s: pg_name %r for %s, which is also %r" %
                                    (where, pg, key, chrome_pg[key]))
            if ntype in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
                peer = int_attr(attrs, "comm_dst" if ntype == "COMM_SEND_NODE" else "comm_src")
                if (peer, int_attr(attrs, "comm_size")) != (args.get("peer"), args.get("bytes")):
                    problems.append("%s: peer %s of %s bytes: expected the as-run %s of %s" %
                                    (where, peer, int_attr(attrs, "comm_size"),
                                     args.get("peer"), args.get("bytes")))
    if sorted(sends) != sorted(recvs):
        problems.append("%s: sends without their receive (src, dst, tag, size): %s" %
                        (prefix, sorted(set(sends) ^ set(recvs))[:4]))
    if len(set(chrome_pg.values())) != len(chrome_pg):
        problems.append("%s: one pg_name for several groups of the run" % prefix)
    for pg, per_rank in colls.items():
        members = set(range(ranks)) if pg == "0" else set((groups or {}).get(pg, []))
        seqs = {tuple(s) for s in per_rank.values()}
        if set(per_rank) != members or len(seqs) != 1:
            problems.append("%s: pg_name %s: expected its ranks %s to issue the same "
                            "collectives, found ranks %s, %d sequences" %
                            (prefix, pg, sorted(members), sorted(per_rank), len(seqs)))
    return problems


def summary(problems):
    """The problems by kind (numbers and the temporary directory left out),
    with the count and the first of each."""
    kinds = {}
    for p in problems:
        k = re.sub(r"\d+", "N", os.path.basename(p))
        kinds.setdefault(k, []).append(p)
    return "%d problems: " % len(problems) + "; ".join(
        "%d x %s" % (len(v), os.path.basename(v[0])) for v in kinds.values())


def chrome_ops(path):
    """{(rank, op): event} of a Chrome trace's slices (B/E pairs), each B with
    the dur its E gives."""
    ops = {}
    for e in json.load(open(path))["traceEvents"]:
        if e.get("ph") in ("B", "E") and "op" in e.get("args", {}):
            key = (e["pid"], e["args"]["op"])
            if e["ph"] == "B":
                ops[key] = e
            else:
                ops[key]["dur"] = e["ts"] - ops[key]["ts"]
    return ops


def run_train(npusim, tmp, name, fidelity, keys):
    prefix = os.path.join(tmp, name)
    p = subprocess.run([npusim, "train", "--system", SYS, "--workload", TINY, "--fidelity",
                        fidelity, "--format", "json", "--emit-chakra", prefix,
                        "--chrome-trace", prefix + ".chrome.json"] + keys,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail("%s: npusim train exited %d: %s" % (name, p.returncode, p.stderr.strip()))
        return None, None
    return prefix, json.loads(p.stdout)


# ---- negative controls: one defect each, reported ----

def with_node(prefix, out, rank, change):
    """Copies the set PREFIX to OUT with rank's messages changed by change(msgs)."""
    for f in os.listdir(os.path.dirname(prefix)):
        base = os.path.basename(prefix)
        if f.startswith(base + ".") and not f.endswith(".chrome.json"):
            shutil.copy(os.path.join(os.path.dirname(prefix), f),
                        os.path.join(os.path.dirname(out), os.path.basename(out) + f[len(base):]))
    path = "%s.%d.et" % (out, rank)
    msgs, _ = split_messages(open(path, "rb").read())
    data = change(msgs)
    open(path, "wb").write(data if isinstance(data, bytes) else chakra_et.join_et(data))


def negative_controls(tmp, prefix, ranks, schema, asrun):
    def on_type(msgs, node_type, change):
        """msgs with their first node of node_type changed by change(node bytes)."""
        k = next(k for k, m in enumerate(msgs)
                 if k and chakra_et.read_node(m)["type"] == node_type)
        msgs[k] = change(msgs[k])
        return msgs

    def on_coll(msgs, change):
        return on_type(msgs, 7, change)

    def on_gather(msgs, change):
        """msgs with their first ALL_GATHER changed by change(node bytes, node)."""
        k = next(k for k, m in enumerate(msgs) if k and chakra_et.read_node(m).get("type") == 7
                 and chakra_et.read_node(m)["attr"].get("comm_type") == 2)
        msgs[k] = change(msgs[k], chakra_et.read_node(msgs[k]))
        return msgs

    def replace_attr(node, name, kind, value):
        out = b""
        for f, raw in raw_fields(node):
            if f == 10 and chakra_et.read_node(raw)["attr"].get(name, ()) != ():
                raw = chakra_et.length_field(10, chakra_et.attribute(name, kind, value))
            out += raw
        return out

    key, varint = chakra_et.key, chakra_et.varint
    cases = [
        ("an unknown field (15) in a node",
         lambda m: m[:2] + [m[2] + key(15, 0) + varint(1)] + m[3:],
         "a field the schema does not have"),
        ("a node type past the enum",
         lambda m: m + [key(1, 0) + varint(90000) + key(3, 0) + varint(42)], "type 42"),
        ("a cut message (its last byte gone, the length kept)",
         lambda m: chakra_et.join_et(m)[:-1], "bytes past the end"),
        ("one byte corrupted (a node's first key given wire type 7)",
         lambda m: m[:2] + [bytes([m[2][0] | 7]) + m[2][1:]] + m[3:], "protoc --decode"),
        ("a dependency on a missing node",
         lambda m: m[:2] + [m[2] + key(5, 0) + varint(77777)] + m[3:], "data_deps 77777"),
        ("an id twice", lambda m: m + [m[1]], "an id twice"),
        ("a zero length", lambda m: m + [b""], "length 0"),
        ("comm_size as uint64_val",
         lambda m: on_coll(m, lambda n: replace_attr(n, "comm_size", "uint64", 4096)),
         "attr comm_size: expected int64_val"),
        ("a pg_name ASTRA-sim cannot read",
         lambda m: on_coll(m, lambda n: replace_attr(n, "pg_name", "string", "tp.0")),
         "pg_name 'tp.0'"),
        ("a collective of another size on one rank of its group",
         lambda m: on_coll(m, lambda n: replace_attr(n, "comm_size", "int64", 4096)),
         "to issue the same collectives"),
        ("an ALL_GATHER's comm_size as all ranks' data (npusim coll's count), not each rank's",
         lambda m: on_gather(m, lambda n, d: replace_attr(n, "comm_size", "int64",
                                                          d["attr"]["comm_size"] * 2)),
         "(per rank)"),
        ("a COMP_NODE's duration_micros off the run (a later field 7 wins)",
         lambda m: on_type(m, 4, lambda n: n + key(7, 0) + varint(10**6)),
         "expected the as-run"),
    ]
    base = check_set(tmp, prefix, ranks, schema, asrun)
    for k, (what, change, expect) in enumerate(cases):
        out = os.path.join(tmp, "neg%d" % k)
        with_node(prefix, out, 1, change)
        got = check_set(tmp, out, ranks, schema, asrun)
        if any(expect in p for p in base):
            fail("negative control: %s: the unchanged set already has %r" % (what, expect))
        elif any(expect in p for p in got):
            ok("negative control: %s is reported" % what)
        else:
            fail("negative control: %s: expected a problem with %r, found %s" %
                 (what, expect, got[:3]))


def raw_fields(msg):
    """(field, its whole encoding) of each field of a message."""
    i = 0
    while i < len(msg):
        start = i
        k, i = chakra_et._varint_at(msg, i)
        wire = k & 7
        if wire == 0:
            _, i = chakra_et._varint_at(msg, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            n, i = chakra_et._varint_at(msg, i)
            i += n
        yield k >> 3, msg[start:i]


# ---- the Python writer ----

def python_writer(tmp, schema):
    prefix = os.path.join(tmp, "py_allreduce")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "tools", "chakra_et.py"),
                    "allreduce", prefix, "--ranks", "4", "--layers", "3", "--compute-us", "7",
                    "--bytes", "65536"], check=True)
    got = check_set(tmp, prefix, 4, schema, npusim=False)
    for r in range(4):
        msgs, _ = split_messages(open("%s.%d.et" % (prefix, r), "rb").read())
        dec, _ = decode(tmp, msgs)
        for n in (dec or {}).get("node", []):
            t, attrs = one(n, "type"), attrs_of(n, "py", [])
            if t == "COMP_NODE" and one(n, "duration_micros") != "7":
                got.append("rank %d: COMP_NODE of %s us, expected 7" % (r,
                                                                       one(n, "duration_micros")))
            if t == "COMM_COLL_NODE" and int_attr(attrs, "comm_size") != 65536:
                got.append("rank %d: comm_size %s, expected 65536" % (r, attrs.get("comm_size")))
    if got:
        fail("chakra_et.py allreduce: " + summary(got))
    else:
        ok("chakra_et.py allreduce: 4 ranks decode with Chakra's schema and pass the checks")
    got = check_set(tmp, "traces/chakra/generator_allreduce", 4, schema, npusim=False)
    if got:
        fail("traces/chakra/generator_allreduce: " + summary(got))
    else:
        ok("traces/chakra/generator_allreduce (the shipped sample) decodes and passes the checks")

    nodes = [{"id": 0, "name": "zéro", "type": "COMP_NODE", "duration_micros": 3,
              "attr": [("is_cpu_op", "bool", True), ("i32", "int32", -7), ("i64", "int64", -5),
                       ("u64", "uint64", (1 << 63) + 5), ("d", "double", 1.5),
                       ("s", "string", "naïve \"q\"")]},
             {"id": 1, "name": "s", "type": "COMM_SEND_NODE", "ctrl_deps": [0],
              "data_deps": [0], "attr": [("comm_dst", "int32", 0)]}]
    path = os.path.join(tmp, "py_kinds.0.et")
    chakra_et.write_et(path, nodes)
    msgs, frame = split_messages(open(path, "rb").read())
    dec, err = decode(tmp, msgs)
    if err or frame:
        fail("chakra_et.py write_et: %s" % (err or frame))
        return
    n0, n1 = dec["node"]
    want = {"is_cpu_op": ("bool_val", "true"), "i32": ("int32_val", "-7"),
            "i64": ("int64_val", "-5"),
            "u64": ("uint64_val", str((1 << 63) + 5)), "d": ("double_val", "1.5"),
            "s": ("string_val", "naïve \"q\"")}
    got = attrs_of(n0, "py_kinds", [])
    checks = [(one(one(dec, "global_metadata"), "version"), "0.0.4"), (one(n0, "name"), "zéro"),
              (one(n0, "id", "0"), "0"), (one(n0, "duration_micros"), "3"), (got, want),
              (one(n1, "type"), "COMM_SEND_NODE"), (n1.get("ctrl_deps"), ["0"]),
              (n1.get("data_deps"), ["0"]), (attrs_of(n1, "", [])["comm_dst"], ("int32_val", "0")),
              (dec.get("unknown"), None)]
    bad = [(g, w) for g, w in checks if g != w]
    if bad:
        fail("chakra_et.py write_et: decoded (found, expected): %s" % bad)
    else:
        ok("chakra_et.py write_et: every attribute kind and both dependencies decode "
           "to the values written")


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: chakra_interop.py NPUSIM")
    npusim = sys.argv[1]
    if not shutil.which("protoc"):
        raise SystemExit("chakra_interop: expected protoc (Debian's protobuf-compiler; "
                         "scripts/test.sh installs it), found none on PATH")
    if not os.path.exists(SCHEMA):
        raise SystemExit("chakra_interop: expected Chakra's schema at %s, found none" % SCHEMA)
    proto = open(SCHEMA).read()
    if not re.search(r"^package ChakraProtoMsg;", proto, re.M):
        raise SystemExit("chakra_interop: %s: expected package ChakraProtoMsg" % SCHEMA)
    schema = (enum_of(proto, "NodeType"), enum_of(proto, "CollectiveCommType"))
    tmp = tempfile.mkdtemp(prefix="npusim-chakra-interop-")
    try:
        with open(os.path.join(tmp, WRAPPER + ".proto"), "w") as f:
            f.write('syntax = "proto3";\nimport "et_def.proto";\n'
                    "message %s {\n  ChakraProtoMsg.GlobalMetadata global_metadata = 1;\n"
                    "  repeated ChakraProtoMsg.Node node = 2;\n}\n" % WRAPPER)
        stragglers = ["--set", "chip.variation.speed_factors=3:0.5,5:1.25",
                      "--set", "chip.variation.speed_sigma=0.1",
                      "--set", "chip.variation.jitter_sigma=0.08", "--set", "chip.variation.seed=7"]
        first = None
        total = ["--chakra-allgather", "total"]
        for name, fid, keys in (("flow", "flow", []), ("flow_var", "flow", stragglers),
                                ("analytic_var", "analytic", stragglers),
                                ("flow_total", "flow", total)):
            prefix, train = run_train(npusim, tmp, name, fid, keys)
            if prefix is None:
                continue
            asrun = chrome_ops(prefix + ".chrome.json")
            got = check_set(tmp, prefix, train["npus"], schema, asrun,
                            variation=keys == stragglers,
                            allgather="total" if keys == total else "input")
            gathers = all_gathers(tmp, prefix, train["npus"])
            if not gathers:
                got.append("%s: expected ALL_GATHER nodes (tiny.json's tp), found none" % name)
            nodes = sum(len(split_messages(open("%s.%d.et" % (prefix, r), "rb").read())[0]) - 1
                        for r in range(train["npus"]))
            if got:
                fail("train --emit-chakra, %s: %s" % (name, summary(got)))
            else:
                ok("train --emit-chakra, %s: %d ranks, %d nodes decode with Chakra's schema "
                   "and match the run" % (name, train["npus"], nodes))
            if extra_ranks(prefix, train["npus"]):
                fail("%s: rank files past the job's %d" % (name, train["npus"]))
            first = first or (prefix, train["npus"], asrun)
        python_writer(tmp, schema)
        if first:
            python_reader(tmp, first[0], first[1])
            negative_controls(tmp, first[0], first[1], schema, first[2])
    finally:
        shutil.rmtree(tmp)
    finish("chakra_interop")


def all_gathers(tmp, prefix, ranks):
    """How many ALL_GATHER nodes the set holds."""
    n = 0
    for r in range(ranks):
        msgs, _ = split_messages(open("%s.%d.et" % (prefix, r), "rb").read())
        for m in msgs[1:]:
            node = chakra_et.read_node(m)
            n += node.get("type") == 7 and node["attr"].get("comm_type") == 2
    return n


# Chakra's own Python reader: protolib.decodeMessage reads a varint length
# with protobuf's _DecodeVarint32, then ParseFromString on et_def_pb2 (protoc
# --python_out on the schema). Run by a Python that has google.protobuf
# (Debian's python3-protobuf), it prints each file's nodes as JSON.
PY_READER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import et_def_pb2 as pb
from google.protobuf.internal.decoder import _DecodeVarint32
out = []
for path in sys.argv[2:]:
    data, pos, msgs = open(path, "rb").read(), 0, []
    while pos < len(data):
        size, pos = _DecodeVarint32(data, pos)
        msgs.append(data[pos:pos + size])
        pos += size
    meta = pb.GlobalMetadata()
    meta.ParseFromString(msgs[0])
    nodes = []
    for m in msgs[1:]:
        n = pb.Node()
        n.ParseFromString(m)
        attrs = {}
        for a in n.attr:
            field = a.WhichOneof("value")
            attrs[a.name] = [field, str(getattr(a, field)).lower() if field == "bool_val"
                             else str(getattr(a, field))]
        nodes.append({"id": n.id, "type": pb.NodeType.Name(n.type), "attr": attrs,
                      "ctrl_deps": list(n.ctrl_deps), "data_deps": list(n.data_deps),
                      "duration_micros": n.duration_micros})
    out.append({"version": meta.version, "nodes": nodes})
print(json.dumps(out))
"""


def protobuf_python():
    """A Python that imports google.protobuf (this one, or Debian's)."""
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run(
                [py, "-c", "import google.protobuf"], stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


def python_reader(tmp, prefix, ranks):
    """Each rank file of the set read by Chakra's Python reader and by protoc's
    text decode: the same nodes, types, dependencies, durations, and every
    attribute in the same oneof field with the same value."""
    py = protobuf_python()
    if not py:
        fail("Chakra's Python reader: expected a python3 with google.protobuf (Debian's "
             "python3-protobuf; scripts/test.sh installs it), found none")
        return
    gen = os.path.join(tmp, "pb2")
    os.makedirs(gen, exist_ok=True)
    subprocess.run(["protoc", "-I", SCHEMA_DIR, "--python_out=" + gen, SCHEMA], check=True)
    paths = ["%s.%d.et" % (prefix, r) for r in range(ranks)]
    p = subprocess.run([py, "-c", PY_READER, gen] + paths, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail("Chakra's Python reader on %s: %s" % (prefix, p.stderr.strip()[-400:]))
        return
    bad, count = [], 0
    for path, got in zip(paths, json.loads(p.stdout)):
        dec, err = decode(tmp, split_messages(open(path, "rb").read())[0])
        if err:
            bad.append(err)
            continue
        want = []
        for n in dec.get("node", []):
            want.append({"id": int(one(n, "id", "0")), "type": one(n, "type", "INVALID_NODE"),
                         "attr": {k: list(v) for k, v in attrs_of(n, path, []).items()},
                         "ctrl_deps": [int(d) for d in n.get("ctrl_deps", [])],
                         "data_deps": [int(d) for d in n.get("data_deps", [])],
                         "duration_micros": int(one(n, "duration_micros", "0"))})
        for a in got["nodes"] + want:  # doubles as printed by each: compare as numbers
            for k, v in a["attr"].items():
                if v[0] == "double_val":
                    v[1] = float(v[1])
        if got["version"] != "0.0.4" or got["nodes"] != want:
            diff = next((g, w) for g, w in zip(got["nodes"] + [None], want + [None]) if g != w)
            bad.append("%s: the Python reader's node %s, protoc's %s" % (path, diff[0], diff[1]))
        count += len(got["nodes"])
    if bad:
        fail("Chakra's Python reader: " + "; ".join(bad[:2]))
    else:
        ok("Chakra's Python reader (protolib's framing, et_def_pb2): %d nodes of %s read as "
           "protoc decodes them" % (count, os.path.basename(prefix)))


def extra_ranks(prefix, ranks):
    d, base = os.path.split(prefix)
    return [f for f in os.listdir(d) if re.fullmatch(re.escape(base) + r"\.(\d+)\.et(\.gz)?", f)
            and int(f.split(".")[-2 if f.endswith(".et") else -3]) >= ranks]


if __name__ == "__main__":
    main()
