#!/usr/bin/env python3
"""from_args_test.py [--npusim NPUSIM] [--converter PATH] - scripts/tools/npusim-from-args
on the Megatron-LM and MindSpeed-LLM launch scripts of traces/megatron/
(issue #15), each against the shipped workload it stands behind.

For every script:
  - the conversion succeeds and lists on stderr exactly the flags pinned here
    as not modelled (a flag dropped without a line fails);
  - every key the shipped workload sets (after "extends"; name, description
    and *_source left out) comes out equal, model.* and parallel.* and
    training.*, booleans as booleans;
  - the keys the Megatron arguments cannot give are listed per script in
    NOT_IN_ARGS with the npusim-from-args option that supplies them, and the
    test shows they are not in the arguments: without the option the
    conversion stops (vocabulary, world size) or gives another value (name);
  - every value carries its KEY_source string;
  - with --npusim: `npusim validate --system configs/systems/ascend-910b.json`
    accepts the converted workload, and the two workloads resolved by npusim
    (defaults applied) differ in exactly the keys of the script's "disagree"
    list, where Megatron's defaults or the real script differ from the
    shipped config (each explained there).

Then the command line: unknown flags listed and the conversion going on, one
line and exit 2 for bad values and a world size the plan does not divide,
--world-size, the shell forms the reader follows (variables, defaults,
arrays, arithmetic, quotes, continuations, comments) and those it refuses
(a value set inside if, $1, two training commands), -o written whole or not
at all, a MoE plan.

Modern models (issue #29), in small scripts written here in the layout of
MindSpeed-LLM's and Megatron-LM's (the real ones are not stored; the count
over them is scripts/bench/from_args_corpus.py): --kv-channels as
model.head_dim, --first-k-dense-replace and --moe-layer-freq as
model.moe.dense_layers, --num-layer-list as parallel.stage_layers, msrun
--worker_num as the world size, a tokenizer file's vocabulary by the model's
name, latent attention (Megatron-Core's and MindSpeed's older flag names)
with multi-token prediction and --geglu, experts folded over the TP ranks
(--expert-tensor-parallel-size 1, MindSpeed's --moe-tp-extend-ep), MindSpeed's
context-parallel algorithms (Ulysses its default, kvallgather, hybrid), and npusim
validate accepting the
result; the refusals, one line each, of what npusim does not model (a
latent-attention --spec without its widths, a linear-attention --spec, an
unknown context-parallel algorithm, experts in some layers only) and of scripts
that do not train (text generation, evaluation, checkpoint conversion) or
train what is not a decoder (BERT, T5) or read the model from a file.

Hostile input (issue #26): a variable or an array that doubles itself line
after line, a word of a megabyte, defaults nested deep, arithmetic past
bash's 64 bits, a FIFO: each ends within a time limit and an address-space
limit of 256 MiB, with one line naming the file (and the line) and exit 2,
or (the long word) the conversion; never a traceback.

Finally the test shows it can fail: each of MUTATIONS (and MODERN_MUTATIONS)
breaks one mapping in a copy of the converter and its modules
(scripts/lib/megatron_*.py), and the checks above must then fail.

Exit 0 when everything passed, 1 otherwise (each failure on a FAIL line).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

from checks import failures, fail

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYSTEM = "configs/systems/ascend-910b.json"
TRACES = "traces/megatron"
PREFIX = "npusim-from-args: "

# MindSpeed-LLM's fused kernels and softmax/accumulation switches: not modelled.
MINDSPEED_IGNORED = {"--use-fused-rmsnorm", "--use-fused-swiglu", "--use-fused-rotary-pos-emb",
                     "--no-masked-softmax-fusion", "--attention-softmax-in-fp32",
                     "--no-gradient-accumulation-fusion"}

# Keys npusim resolves differently from the Megatron run the script describes:
# Megatron's default where the shipped config leaves npusim's (each a fact of
# Megatron's arguments.py / DistributedDataParallel, see README.md).
TIED = ("model.tied_embeddings", True, False,
        "Megatron ties the LM head to the embedding unless "
        "--untie-embeddings-and-output-weights; the GPT configs leave npusim's false")
NO_OVERLAP_GRAD = ("training.overlap_grad_reduce", False, True,
                   "no --overlap-grad-reduce: Megatron reduces gradients after the backward "
                   "(dp 1 here: nothing to reduce)")
P2P = ("training.overlap_p2p_comm", True, False,
       "Megatron (core_r0.4 on; MindSpeed-LLM runs on core_r0.6) overlaps pipeline sends with "
       "interleaving unless --no-overlap-p2p-communication; npusim's default says false")
BUCKET = ("training.grad_bucket_MiB", 40e6 * 4 / (1 << 20), 80,
          "--overlap-grad-reduce without --ddp-bucket-size: Megatron's 40M-element buckets of "
          "fp32 gradients are 152.6 MiB; the config keeps npusim's 80")

MC2 = ("training.overlap_tp_comm", True, False,
       "--use-mc2 fuses TP communication with the matmuls (MindSpeed's MC2); the shipped config "
       "leaves npusim's default, off, as its validation rows were first predicted")

CASES = [
    {"script": "llama2-7b-mindspeed.sh", "config": "llama2-7b.json",
     "not_in_args": {"model.name": ["--model-name", "llama2-7b"]},
     "ignored": MINDSPEED_IGNORED, "disagree": [BUCKET]},
    {"script": "llama2-13b-mindspeed.sh", "config": "llama2-13b.json",
     "not_in_args": {"model.name": ["--model-name", "llama2-13b"]},
     "ignored": MINDSPEED_IGNORED, "disagree": [NO_OVERLAP_GRAD, MC2]},
    {"script": "llama2-70b-mindspeed.sh", "config": "llama2-70b.json",
     "not_in_args": {"model.name": ["--model-name", "llama2-70b"]},
     "ignored": MINDSPEED_IGNORED, "disagree": [NO_OVERLAP_GRAD, P2P, MC2]},
    {"script": "llama3-8b-mindspeed.sh", "config": "llama3-8b.json",
     "not_in_args": {"model.name": ["--model-name", "llama3-8b"]},
     "ignored": MINDSPEED_IGNORED, "disagree": [NO_OVERLAP_GRAD, MC2]},
    {"script": "qwen2-72b-mindspeed.sh", "config": "qwen2-72b.json",
     "not_in_args": {"model.name": ["--model-name", "qwen2-72b"]},
     "ignored": MINDSPEED_IGNORED | {"--add-qkv-bias"}, "disagree": [BUCKET, P2P, MC2]},
    {"script": "gpt-22b-korthikanti.sh", "config": "gpt-22b.json",
     "not_in_args": {"model.name": ["--model-name", "gpt-22b"]},
     "ignored": set(), "disagree": [TIED, NO_OVERLAP_GRAD]},
    {"script": "gpt-175b-korthikanti.sh", "config": "gpt-175b.json",
     "not_in_args": {"model.name": ["--model-name", "gpt-175b"]},
     "ignored": set(), "disagree": [TIED, NO_OVERLAP_GRAD]},
    {"script": "gpt-530b-korthikanti.sh", "config": "gpt-530b.json",
     "not_in_args": {"model.name": ["--model-name", "gpt-530b"],
                     "parallel.dp": ["--world-size", "280"]},
     "ignored": {"--DDP-impl"}, "disagree": [TIED, NO_OVERLAP_GRAD]},
    {"script": "gpt-1t-korthikanti.sh", "config": "gpt-1t.json",
     "not_in_args": {"model.name": ["--model-name", "gpt-1t"]},
     "ignored": set(), "disagree": [TIED, NO_OVERLAP_GRAD]},
    {"script": "gpt3-175b-910b.sh", "config": "gpt3-175b-910b.json",
     "not_in_args": {"model.name": ["--model-name", "gpt-175b"]},
     "ignored": {"--rampup-batch-size"},
     "disagree": [TIED, ("training.overlap_grad_reduce", False, True,
                         "the what-if keeps npusim's overlapped reduction; Megatron's "
                         "example script does not pass --overlap-grad-reduce")]},
]

# One broken mapping each (text in scripts/tools/npusim-from-args or the
# scripts/lib/megatron_*.py it imports, replacement):
# the checks must fail on every one of them.
MUTATIONS = [
    ("kv_heads taken from the query heads",
     'kv = a.int("--num-query-groups", hi=100000)', 'kv = heads'),
    ("vpp read as the layers per virtual stage",
     "vpp = layers // pp // per", "vpp = per"),
    ("the vocabulary not padded", "padded = -(-base // multiple) * multiple", "padded = base"),
    ("sequence parallelism kept with tp 1 (caught by npusim validate)",
     "if sp and tp == 1:", "if False:"),
    ("an unknown flag dropped without a line",
     'say(f"ignored {name} (not modelled)")', "pass"),
    ("fp16 read as bf16", 'prec, prec_src = "fp16", "--fp16"', 'prec, prec_src = "bf16", "--fp16"'),
]
# Broken the same way, caught by the modern-model checks (modern_checks).
MODERN_MUTATIONS = [
    ("--kv-channels dropped", 'model.set("head_dim", head_dim,', 'model.set("head_dim", 0,'),
    ("an architecture flag not refused", 'raise InputError(f"{a.src(name)}: {what} is not modelled',
     'a.ignore(name)  # ('),
    ("--first-k-dense-replace dropped", "if dense:\n        out.set(", "if False:\n        out.set("),
    ("msrun's --worker_num read as one node's", 'world = a.launcher_count("--worker-num")',
     'world = a.launcher_count("--local-worker-num")'),
    ("a text generation script converted", "            return False, what\n",
     "            pass\n"),
    ("--num-layer-list dropped", 'par.set("stage_layers", stage_layers,',
     'par.set("stage_layers", None,'),
    ("--mtp-num-layers dropped", 'model.set("mtp_layers", mtp,', 'model.set("mtp_layers", 0,'),
    ("MLA's rope and no-rope widths swapped", '("--qk-head-dim", "--qk-nope-head-dim"), 128)',
     '("--qk-pos-emb-head-dim", "--qk-rope-head-dim"), 128)'),
    ("--geglu read as gelu", 'act, act_src = "geglu", "--geglu"', 'act, act_src = "gelu", "--geglu"'),
    ("--num-zero-experts dropped", 'out.set("zero_experts", zero,', 'out.set("zero_experts", 0,'),
    ("Gemma 2's full layers dropped", 'found = (w, 2, a.src(', 'found = (w, 0, a.src('),
    ("Megatron's window read without its own key", "found = (left + 1 if left >= 0",
     "found = (left if left >= 0"),
    ("--moe-fb-overlap dropped", 'tr.set("overlap_moe_a2a", True,', 'tr.set("overlap_moe_a2a", False,'),
    ("Ulysses read as ring", '"ulysses_cp_algo": "ulysses"', '"ulysses_cp_algo": "ring"'),
    ("--moe-tp-extend-ep dropped", 'etp, etp_src = 1, "--moe-tp-extend-ep', 'etp_src = "--moe-tp-extend-ep'),
]



def run(cmd, stdin=None):
    p = subprocess.run(cmd, cwd=ROOT, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def convert(converter, args, stdin=None):
    return run([sys.executable, converter] + args, stdin)


def flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def merged(base, over):
    out = dict(base)
    for k, v in over.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def shipped(path):
    """A workload as its file sets it, "extends" followed."""
    with open(os.path.join(ROOT, path)) as f:
        d = json.load(f)
    parent = d.pop("extends", None)
    if parent:
        d = merged(shipped(os.path.join(os.path.dirname(path), parent)), d)
    return d


def set_keys(d):
    return {k: v for k, v in flat(d).items()
            if k not in ("name", "description") and not k.endswith("_source")}


def same(a, b):
    """Equal as JSON values: a boolean is not a number, 0 is 0.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def stderr_lines(err):
    """(ignored flags, other lines) of a conversion's stderr."""
    ignored, other = [], []
    for line in err.splitlines():
        if line.startswith(PREFIX + "ignored --") and line.endswith(" (not modelled)"):
            ignored.append(line[len(PREFIX + "ignored "):-len(" (not modelled)")])
        elif not line.startswith(PREFIX + "note: "):
            other.append(line)
    return ignored, other


def resolved(npusim, path):
    code, out, err = run([npusim, "validate", "--system", SYSTEM, "--workload", path,
                          "--format", "json"])
    if code != 0:
        return None, err.strip()
    return flat(json.loads(out)["workload"]), None


def check_case(converter, npusim, case, tmp, report=fail):
    """The checks of one stored script; report(msg) for each failure."""
    script = os.path.join(TRACES, case["script"])
    config = os.path.join("configs/workloads", case["config"])
    what = case["script"]
    options = [o for opt in case["not_in_args"].values() for o in opt]
    code, out, err = convert(converter, options + [script])
    if code != 0:
        report(f"{what}: exit {code}: {err.strip()}")
        return
    try:
        got = json.loads(out)
    except ValueError as e:
        report(f"{what}: stdout is not JSON: {e}")
        return
    ignored, other = stderr_lines(err)
    if other:
        report(f"{what}: unexpected stderr lines: {other}")
    if set(ignored) != case["ignored"] or len(ignored) != len(set(ignored)):
        report(f"{what}: listed as not modelled {sorted(ignored)}, "
               f"expected {sorted(case['ignored'])}")

    want = set_keys(shipped(config))
    have = flat(got)
    for key, value in sorted(want.items()):
        if key not in have:
            report(f"{what}: {key} missing (shipped: {value!r})")
        elif not same(have[key], value):
            report(f"{what}: {key} is {have[key]!r}, shipped {config} says {value!r}")
    for key in have:
        if not key.endswith("_source") and key not in ("name", "description") \
                and not isinstance(have.get(key + "_source"), str):
            report(f"{what}: {key} has no {key}_source string")

    # not in the arguments: without the option the key is not the shipped one
    for key, opt in case["not_in_args"].items():
        rest = [o for k, o2 in case["not_in_args"].items() if k != key for o in o2]
        code, out2, err2 = convert(converter, rest + [script])
        lines = err2.strip().splitlines()
        if key == "model.name":
            if code != 0 or same(flat(json.loads(out2)).get(key), want.get(key)):
                report(f"{what}: {key} without {opt[0]}: expected another name, got "
                       f"exit {code} {err2.strip()[:200]}")
        elif code != 2 or out2 or len(lines) != 1 or opt[0] not in lines[0]:
            report(f"{what}: {key} without {opt[0]}: expected exit 2 and one line naming "
                   f"{opt[0]}, got exit {code}: {lines}")

    if npusim is None:
        return
    path = os.path.join(tmp, case["script"] + ".json")
    with open(path, "w") as f:
        f.write(out)
    a, err_a = resolved(npusim, path)
    if a is None:
        report(f"{what}: npusim validate refuses the converted workload: {err_a}")
        return
    b, err_b = resolved(npusim, config)
    if b is None:
        report(f"{what}: npusim validate refuses {config}: {err_b}")
        return
    found = {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b))
             if k not in ("name", "description") and not same(a.get(k), b.get(k))}
    listed = {k: (conv, ship) for k, conv, ship, _ in case["disagree"]}
    for k in sorted(set(found) | set(listed)):
        if k not in listed:
            report(f"{what}: resolved {k}: converted {found[k][0]!r}, shipped {found[k][1]!r} "
                   "(not in the case's disagree list)")
        elif k not in found or not (same(found[k][0], listed[k][0])
                                    and same(found[k][1], listed[k][1])):
            report(f"{what}: resolved {k}: expected converted {listed[k][0]!r} and shipped "
                   f"{listed[k][1]!r} (disagree list), found {found.get(k)}")


# ---- the command line ----

MINIMAL = ["--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "8",
           "--seq-length", "512", "--micro-batch-size", "1", "--bf16", "--vocab-size", "1000"]


def expect_error(converter, args, flag, what, stdin=None):
    code, out, err = convert(converter, args, stdin)
    lines = err.strip().splitlines()
    if code != 2 or out or len(lines) != 1 or flag not in lines[0] \
            or not lines[0].startswith(PREFIX):
        fail(f"{what}: expected exit 2 and one line naming {flag}, got exit {code}, "
             f"stdout {out[:80]!r}, stderr {lines}")
    return lines[0] if lines else ""


def expect_ok(converter, args, what, stdin=None):
    code, out, err = convert(converter, args, stdin)
    if code != 0:
        fail(f"{what}: exit {code}: {err.strip()}")
        return None, err
    return flat(json.loads(out)), err


def cli_checks(converter, npusim, tmp):
    # unknown flags are listed, one line each, and the conversion goes on
    got, err = expect_ok(converter, ["--world-size", "8", "--"] + MINIMAL +
                         ["--frobnicate", "3", "--use-ascend-coc", "--frobnicate"], "unknown flags")
    if got is not None:
        lines = err.strip().splitlines()
        if lines != [PREFIX + "ignored --frobnicate (not modelled)",
                     PREFIX + "ignored --use-ascend-coc (not modelled)"]:
            fail(f"unknown flags: stderr {lines}")
        if got.get("parallel.dp") != 8 or got.get("model.vocab") != 1024:
            fail(f"unknown flags: dp {got.get('parallel.dp')}, vocab {got.get('model.vocab')}")

    # bad values: one line naming the flag, exit 2, nothing on stdout
    for args, flag in ((["--num-layers", "x"], "--num-layers"),
                       (["--num-layers", "0"], "--num-layers"),
                       (["--attention-dropout", "1.5"], "--attention-dropout"),
                       (["--normalization", "BatchNorm"], "--normalization"),
                       (["--tensor-model-parallel-size", "3"], "--tensor-model-parallel-size"),
                       (["--global-batch-size", "7"], "--global-batch-size"),
                       (["--pipeline-model-parallel-size", "2",
                         "--num-layers-per-virtual-pipeline-stage", "3"],
                        "--num-layers-per-virtual-pipeline-stage"),
                       (["--recompute-activations", "--recompute-method", "uniform"],
                        "--recompute-method"),
                       (["--group-query-attention", "--num-query-groups", "3"],
                        "--num-query-groups"),
                       (["--fp16"], "--fp16"),
                       (["--num-experts", "6", "--expert-model-parallel-size", "4"],
                        "--expert-model-parallel-size"),
                       (["--num-layers"], "--num-layers")):
        expect_error(converter, ["--world-size", "8", "--"] + MINIMAL + args, flag,
                     f"bad value {' '.join(args)}")
    got, _ = expect_ok(converter, ["--world-size", "8", "--"] + MINIMAL + [
        "--tokenizer-type", "NullTokenizer", "--make-vocab-size-divisible-by", "1"],
        "NullTokenizer")
    if got is not None and got.get("model.vocab") != 1001:
        fail(f"NullTokenizer --vocab-size 1000: vocab {got.get('model.vocab')}, expected 1001")
    expect_error(converter, ["--world-size", "8", "--"] + MINIMAL + [
        "--tokenizer-type", "HuggingFaceTokenizer"], "--tokenizer-vocab",
        "a tokenizer read from a file")
    expect_error(converter, ["--world-size", "8", "--"] + [a for a in MINIMAL if a != "--bf16"],
                 "--bf16", "no precision (fp32)")
    expect_error(converter, ["--"] + MINIMAL, "--world-size", "no world size")
    expect_error(converter, ["--world-size", "0", "--"] + MINIMAL, "--world-size",
                 "world size 0")
    expect_error(converter, ["--world-size", "8", "--"] + MINIMAL +
                 ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "3"],
                 "--tensor-model-parallel-size", "dp not dividing the world")
    expect_error(converter, ["--world-size", "8", "--", "--num-layers", "4"], "--hidden-size",
                 "a required flag missing")
    expect_error(converter, ["--world-size", "8", "--num-layers", "4"], "after --",
                 "Megatron's flags given as the converter's")

    # the world size: torchrun's nodes x processes, --world-size over it
    script = os.path.join(tmp, "run.sh")
    with open(script, "w") as f:
        f.write("""#!/bin/bash
# a comment with --num-layers 99 in it
NNODES=${NNODES:-2}           # default: 2
GPUS=4
TP=2; PP=2
EXTRA="--overlap-grad-reduce"
LAYERS=$(( 2 * PP ))
export CUDA_DEVICE_MAX_CONNECTIONS=1
MODEL_ARGS=(
    --num-layers $LAYERS   # from arithmetic
    --hidden-size 256
    --num-attention-heads 8
)
MODEL_ARGS+=(--seq-length 512)
ARGS="--micro-batch-size 1 \\
      --global-batch-size 16"
ARGS="$ARGS --use-distributed-optimizer"
torchrun --nproc_per_node=$GPUS --nnodes $NNODES --node_rank $NODE_RANK \\
    pretrain_gpt.py "${MODEL_ARGS[@]}" $ARGS \\
    --tensor-model-parallel-size ${TP} --pipeline-model-parallel-size=$PP \\
    --data-path "$1" --save $CKPT --bf16 --vocab-size '1000' $EXTRA \\
    --squared-relu --attention-dropout 0.0 --hidden-dropout 0.1 \\
    2>&1 | tee log.txt
""")
    got, err = expect_ok(converter, [script], "shell forms")
    if got is not None:
        want = {"model.layers": 4, "model.seq_len": 512, "parallel.dp": 2, "parallel.tp": 2,
                "parallel.pp": 2, "parallel.zero": 1, "training.global_batch": 16,
                "training.overlap_grad_reduce": True, "model.vocab": 1024,
                "model.activation": "gelu", "model.dropout": 0.1, "model.name": "run"}
        for k, v in want.items():
            if not same(got.get(k), v):
                fail(f"shell forms: {k} is {got.get(k)!r}, expected {v!r}")
        notes = [ln for ln in err.splitlines() if ln.startswith(PREFIX + "note: ")]
        if len(notes) != 2 or err.strip().splitlines() != notes:
            fail(f"shell forms: expected the two notes (squared ReLU, dropouts), got {err!r}")
    got, _ = expect_ok(converter, ["--world-size", "32", script], "--world-size override")
    if got is not None and got.get("parallel.dp") != 8:
        fail(f"--world-size 32: dp {got.get('parallel.dp')}, expected 8")
    code, out, _ = convert(converter, [script])
    with open(script) as f:
        code2, out2, _ = convert(converter, ["-"], stdin=f.read())
    if code2 != 0 or json.loads(out2)["model"]["layers"] != 4:
        fail("standard input: not read as the script")

    # -o FILE: the same bytes as stdout; left untouched when the conversion fails
    dest = os.path.join(tmp, "out.json")
    code, _, err = convert(converter, ["-o", dest, script])
    if code != 0 or open(dest).read() != out:
        fail(f"-o: exit {code}, file differs from stdout: {err.strip()}")
    with open(dest, "w") as f:
        f.write("keep")
    expect_error(converter, ["-o", dest, "--world-size", "3", script],
                 "--tensor-model-parallel-size", "-o on a failed conversion")
    if open(dest).read() != "keep":
        fail("-o: a failed conversion changed the file")

    # what the reader refuses to guess
    rest = "--hidden-size 256 --num-attention-heads 8 --seq-length 512 --micro-batch-size 1 " \
        "--bf16 --vocab-size 1000"
    run8 = "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py"
    for text, flag, what in (
            (f"if [ -n \"$X\" ]; then\n  TP=2\nfi\n{run8} --num-layers 4 "
             f"--tensor-model-parallel-size $TP {rest}\n", "--tensor-model-parallel-size",
             "a value set inside if"),
            (f"{run8} --num-layers $1 {rest}\n", "--num-layers", "a positional parameter"),
            (f"{run8} --num-layers 4 {rest} --hidden-size $(cat h)\n", "--hidden-size",
             "a command substitution"),
            (f"torchrun --nnodes $N --nproc-per-node 8 pretrain_gpt.py --num-layers 4 {rest}\n",
             "--nnodes", "an unset variable in torchrun's options"),
            (f"{run8} --num-layers 4 {rest}\n{run8} --num-layers 8 {rest}\n", "2 commands",
             "two training commands"),
            ("echo --num-layers 4\n", "no command carries --num-layers", "no training command")):
        path = os.path.join(tmp, "refuse.sh")
        with open(path, "w") as f:
            f.write(text)
        line = expect_error(converter, [path], flag, what)
        if what == "a value set inside if" and "line 2" not in line:
            fail(f"{what}: the line does not say where: {line}")

    # a MoE plan, and npusim accepts it
    moe_args = ["--world-size", "16", "--"] + MINIMAL + [
        "--num-experts", "8", "--moe-router-topk", "2", "--moe-ffn-hidden-size", "512",
        "--moe-shared-expert-intermediate-size", "1024", "--expert-model-parallel-size", "4",
        "--tensor-model-parallel-size", "2", "--sequence-parallel", "--swiglu",
        "--normalization", "RMSNorm", "--position-embedding-type", "rope",
        "--untie-embeddings-and-output-weights", "--recompute-granularity", "full",
        "--recompute-method", "uniform", "--recompute-num-layers", "1",
        "--num-layers-per-virtual-pipeline-stage", "1", "--pipeline-model-parallel-size", "2",
        "--context-parallel-size", "2", "--global-batch-size", "32"]
    got, err = expect_ok(converter, moe_args, "MoE plan")
    if got is not None:
        want = {"model.moe.experts": 8, "model.moe.top_k": 2, "model.moe.expert_ffn_hidden": 512,
                "model.moe.shared_experts": 2, "model.moe.capacity_factor": 1.0,
                "parallel.ep": 4, "parallel.dp": 2, "parallel.cp": 2, "parallel.vpp": 2,
                "parallel.recompute": "full", "model.ffn_hidden": 640,
                "training.overlap_p2p_comm": True, "model.tied_embeddings": False}
        for k, v in want.items():
            if not same(got.get(k), v):
                fail(f"MoE plan: {k} is {got.get(k)!r}, expected {v!r}")
        if npusim is not None:
            path = os.path.join(tmp, "moe.json")
            convert(converter, ["-o", path] + moe_args)
            code, _, err = run([npusim, "validate", "--system", SYSTEM, "--workload", path])
            if code != 0:
                fail(f"MoE plan: npusim validate: {err.strip()}")


# ---- modern models (issue #29): small scripts in the layout of MindSpeed-LLM's
# and Megatron-LM's, written here (the real ones are not stored) ----

MS_BODY = """
GPT_ARGS="
    --tensor-model-parallel-size 2 \\
    --pipeline-model-parallel-size 2 \\
    --num-layer-list 1,3 \\
    --num-layers 4 \\
    --hidden-size 512 \\
    --num-attention-heads 8 \\
    --kv-channels 128 \\
    --group-query-attention \\
    --num-query-groups 2 \\
    --seq-length 1024 \\
    --micro-batch-size 1 \\
    --global-batch-size 8 \\
    --num-experts 8 \\
    --moe-router-topk 2 \\
    --moe-ffn-hidden-size 256 \\
    --first-k-dense-replace 1 \\
    --moe-layer-freq -1 \\
    --expert-model-parallel-size 2 \\
    --spec mindspeed_llm.tasks.models.spec.qwen3_spec layer_spec \\
    --tokenizer-type PretrainedFromHF \\
    --tokenizer-name-or-path ./model_from_hf/tok \\
    --padded-vocab-size 32000 \\
    --swiglu --normalization RMSNorm --position-embedding-type rope \\
    --use-distributed-optimizer \\
    --bf16
"
"""


def ms_script(tmp, name, launcher, extra=""):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("#!/bin/bash\nNPUS_PER_NODE=8\nNNODES=2\nWORLD_SIZE=$(($NPUS_PER_NODE*$NNODES))\n"
                + MS_BODY + launcher + " pretrain_gpt.py $GPT_ARGS " + extra +
                " --distributed-backend nccl | tee logs/x.log\n")
    return path


def ms_script_without(tmp, name, launcher, extra, drop):
    """ms_script with `drop` taken out of the body (a flag the case replaces)."""
    path = ms_script(tmp, name, launcher, extra)
    with open(path) as fh:
        text = fh.read()
    with open(path, "w") as fh:
        fh.write(text.replace(drop, ""))
    return path


def modern_checks(converter, npusim, tmp, report=fail):
    def error(args, flag, what):
        code, out, err = convert(converter, args)
        lines = err.strip().splitlines()
        if code != 2 or out or len(lines) != 1 or flag not in lines[-1]:
            report(f"{what}: expected exit 2 and one line naming {flag!r}, got exit {code}, "
                   f"stderr {lines[-2:]}")

    def validated(out, what):  # npusim validate accepts the converted workload
        if npusim is None:
            return
        wl = os.path.join(tmp, "modern.json")
        with open(wl, "w") as fh:
            fh.write(out)
        code, _, err = run([npusim, "validate", "--system", SYSTEM, "--workload", wl])
        if code != 0:
            report(f"{what}: npusim validate: {err.strip()}")

    msrun = ("msrun --worker_num $WORLD_SIZE --local_worker_num $NPUS_PER_NODE --master_addr "
             "localhost --master_port 6000 --node_rank 0 --log_dir=msrun_log --join=False "
             "--cluster_time_out=300 --bind_core=True")
    torchrun = "torchrun --nproc_per_node $NPUS_PER_NODE --nnodes $NNODES --node_rank 0"
    for launcher, what in ((msrun, "msrun --worker_num"), (torchrun, "torchrun")):
        path = ms_script(tmp, "pretrain_qwen3_moe.sh", launcher)
        code, out, err = convert(converter, [path])
        if code != 0:
            report(f"modern model ({what}): exit {code}: {err.strip()[-300:]}")
            continue
        got = flat(json.loads(out))
        want = {"model.head_dim": 128, "model.kv_heads": 2, "model.moe.dense_layers": 1,
                "model.moe.experts": 8, "parallel.stage_layers": [1, 3], "parallel.dp": 4,
                "parallel.tp": 2, "parallel.pp": 2, "parallel.ep": 2, "model.vocab": 32000}
        for k, v in want.items():
            if got.get(k) != v:
                report(f"modern model ({what}): {k} is {got.get(k)!r}, expected {v!r}")
        if "ignored --master" in err or "ignored --worker" in err or "ignored --log" in err:
            report(f"modern model ({what}): a launcher option listed as not modelled: {err}")
        validated(out, f"modern model ({what})")
    # a MoE layer pattern as Megatron writes it: the dense first layers
    path = ms_script(tmp, "pattern.sh", torchrun, "--moe-layer-freq '([0]*2+[1]*2)'")
    code, out, err = convert(converter, [path])
    dense = flat(json.loads(out)).get("model.moe.dense_layers") if code == 0 else None
    if dense != 2:
        report(f"--moe-layer-freq [0]*2+[1]*2: expected dense_layers 2, got exit {code} "
               f"{err.strip()[-200:] if code else dense}")

    # MindSpeed's no-op layers: fewer real layers, on the stages that hold them
    path = ms_script(tmp, "noop.sh", torchrun, "--noop-layers 3")
    code, out, err = convert(converter, [path])
    got = flat(json.loads(out)) if code == 0 else {}
    found = (got.get("model.layers"), got.get("parallel.stage_layers"))
    if found != (3, [1, 2]):
        report(f"--noop-layers 3: expected 3 layers on stages [1, 2], got exit {code} "
               f"{err.strip()[-200:] if code else found}")

    # DeepSeek-V3's layer in MindSpeed's flags: latent attention (Megatron-Core's
    # names, --qk-head-dim the no-rope part), multi-token prediction, GeGLU elsewhere
    mla = ("--spec mindspeed_llm.tasks.models.spec.deepseek_spec layer_spec "
           "--multi-latent-attention --q-lora-rank 384 --kv-lora-rank 128 --qk-head-dim 64 "
           "--qk-pos-emb-head-dim 32 --v-head-dim 64 --mtp-num-layers 1")
    for extra, want, what in (
            (mla, {"model.mla.q_lora_rank": 384, "model.mla.kv_lora_rank": 128,
                   "model.mla.qk_nope_head_dim": 64, "model.mla.qk_rope_head_dim": 32,
                   "model.mla.v_head_dim": 64, "model.mtp_layers": 1, "model.head_dim": None,
                   "model.kv_heads": 8},
             "DeepSeek's latent attention and MTP"),
            ("--multi-head-latent-attention --kv-lora-rank 128 --qk-nope-head-dim 64 "
             "--qk-rope-head-dim 32", {"model.mla.q_lora_rank": 0, "model.mla.v_head_dim": 128,
                                       "model.mla.qk_nope_head_dim": 64},
             "MindSpeed's older MLA names, Megatron's defaults"),
            ("--geglu", {"model.activation": "geglu"}, "GeGLU"),
            ("--gelu-tanh", {"model.activation": "geglu"}, "MindSpeed's gated tanh GeLU (Gemma)"),
            ("--quick-geglu", {"model.activation": "geglu"}, "Megatron's gated quick GeLU (gpt-oss)"),
            ("--spec mindspeed_llm.tasks.models.spec.longcat_spec layer_spec --num-experts 16 "
             "--num-zero-experts 8 --moe-router-topk 4 --moe-ffn-hidden-size 256",
             {"model.moe.shortcut": True, "model.moe.zero_experts": 8, "model.moe.experts": 16},
             "LongCat-Flash's shortcut MoE layers and zero-computation experts"),
            ("--spec mindspeed_llm.tasks.models.spec.minimax_spec layer_spec --num-experts 16 "
             "--moe-router-topk 4 --qk-layernorm",
             {"model.moe.experts": 16, "model.moe.shortcut": None},
             "MiniMax-M2's layers: softmax attention with QK norms, MoE"),
            ("--interleave-sliding-window 512",
             {"model.sliding_window_tokens": 512, "model.full_attention_every": 2},
             "Gemma 2's windows in every other layer"),
            ("--window-size 127,0 --window-attn-skip-freq 4",
             {"model.sliding_window_tokens": 128, "model.full_attention_every": 4},
             "Megatron-Core's window, every 4th layer whole"),
            ("--window-size 1000000,0", {"model.sliding_window_tokens": None},
             "a window covering the sequence"),
            ("--sequence-parallel --expert-model-parallel-size 8 --moe-tp-extend-ep",
             {"parallel.ep": 8, "parallel.etp": 1}, "MindSpeed's EP extended over TP"),
            ("--sequence-parallel --expert-model-parallel-size 8 --expert-tensor-parallel-size 1",
             {"parallel.ep": 8, "parallel.etp": 1}, "Megatron-Core's MoE parallel folding"),
            ("--tensor-model-parallel-size 4 --num-attention-heads 8 --num-query-groups 4 "
             "--sequence-parallel --expert-model-parallel-size 2 --expert-tensor-parallel-size 2",
             {"parallel.ep": 2, "parallel.etp": 2}, "experts over an ETP group of 2 under TP 4"),
            ("--expert-tensor-parallel-size 2", {"parallel.ep": 2, "parallel.etp": None},
             "expert tensor parallelism equal to tp (the default)"),
            ("--moe-fb-overlap --pipeline-model-parallel-size 1 --num-layer-list 4",
             {"training.overlap_moe_a2a": True}, "MindSpeed's overlapped all-to-alls"),
            ("--moe-fb-overlap", {"training.overlap_moe_a2a": None},
             "overlapped all-to-alls on plain 1F1B (noted, not read)"),
            ("--num-query-groups 8 --context-parallel-size 2", {"parallel.cp_algo": "ulysses"},
             "MindSpeed's default context-parallel algorithm"),
            ("--context-parallel-size 2 --context-parallel-algo megatron_cp_algo",
             {"parallel.cp": 2, "parallel.cp_algo": None}, "ring attention"),
            ("--context-parallel-size 2 --context-parallel-algo kvallgather_cp_algo",
             {"parallel.cp_algo": "allgather"}, "MindSpeed's key/value all-gather"),
            ("--num-query-groups 8 --context-parallel-size 4 --context-parallel-algo "
             "hybrid_cp_algo --ulysses-degree-in-cp 2",
             {"parallel.cp_algo": "hybrid", "parallel.cp_ulysses": 2}, "hybrid Ulysses and ring")):
        gelu = any(f in extra for f in ("--geglu", "--gelu-tanh", "--quick-geglu"))  # not --swiglu
        path = (ms_script_without(tmp, "pretrain_deepseek3.sh", torchrun, extra, "--swiglu")
                if gelu else ms_script(tmp, "pretrain_deepseek3.sh", torchrun, extra))
        code, out, err = convert(converter, [path])
        got = flat(json.loads(out)) if code == 0 else {}
        for k, v in want.items():
            if got.get(k) != v:
                report(f"{what}: {k} is {got.get(k)!r} (exit {code} {err.strip()[-200:]}), "
                       f"expected {v!r}")
        if code == 0:
            validated(out, what)

    # no-op layers with interleaving: one count per virtual stage, chunk-major
    path = ms_script_without(  # the body's --num-layer-list: not with interleaving
        tmp, "noop_vpp.sh", torchrun,
        "--num-layers 8 --num-layers-per-virtual-pipeline-stage 2 --noop-layers 7",
        "--num-layer-list 1,3")
    code, out, err = convert(converter, [path])
    got = flat(json.loads(out)) if code == 0 else {}
    found = (got.get("model.layers"), got.get("parallel.vpp"), got.get("parallel.stage_layers"))
    if found != (7, 2, [2, 2, 2, 1]):
        report(f"--noop-layers 7 with interleaving: expected 7 layers, vpp 2 on [2, 2, 2, 1], got "
               f"exit {code} {err.strip()[-200:] if code else found}")

    # MindSpeed's DualPipeV: vpp 2 in a V, no-op layers counted per virtual stage
    # of the V (8 layers over 2 x 2: layer 7 on virtual stage 3, stage 0's
    # second chunk), sends waited for
    path = ms_script_without(
        tmp, "dualpipev.sh", torchrun,
        "--num-layers 8 --noop-layers 7 --schedules-method dualpipev --moe-fb-overlap",
        "--num-layer-list 1,3")
    code, out, err = convert(converter, [path])
    got = flat(json.loads(out)) if code == 0 else {}
    found = tuple(got.get(k) for k in ("model.layers", "parallel.vpp", "parallel.pp_schedule",
                                       "parallel.stage_layers", "training.overlap_p2p_comm",
                                       "training.overlap_moe_a2a"))
    if found != (7, 2, "dualpipev", [2, 2, 2, 1], False, True):
        report(f"--schedules-method dualpipev: expected 7 layers, vpp 2 dualpipev on [2, 2, 2, 1], "
               f"sends waited for, all-to-alls merged; got exit {code} "
               f"{err.strip()[-200:] if code else found}")
    elif code == 0:
        validated(out, "--schedules-method dualpipev")

    # refused in one line naming what is not modelled
    for extra, flag, what in (
            ("--spec mindspeed_llm.tasks.models.spec.deepseek_spec layer_spec", "deepseek_spec",
             "a latent-attention --spec without its widths"),
            ("--multi-latent-attention --qk-head-dim 64 --qk-nope-head-dim 64", "--qk-nope-head-dim",
             "one MLA width given twice"),
            ("--spec mindspeed_llm.tasks.models.spec.qwen3_next_spec layer_spec",
             "linear attention", "a linear-attention --spec"),
            ("--spec my.own.spec layer_spec", "--spec my.own.spec", "an unknown --spec"),
            ("--context-parallel-size 2 --context-parallel-algo my_cp_algo",
             "my_cp_algo", "an unknown context-parallel algorithm"),
            ("--context-parallel-size 2 --context-parallel-algo hybrid_cp_algo",
             "--ulysses-degree-in-cp", "hybrid context parallelism without its Ulysses degree"),
            ("--moe-layer-freq 2", "--moe-layer-freq 2", "experts in every other layer"),
            ("--moe-layer-freq '[1,0,1,1]'", "--moe-layer-freq", "a dense layer after MoE"),
            ("--num-layer-list 2,3", "--num-layer-list", "stage layers not adding up"),
            ("--noop-layers 0", "--noop-layers", "a stage left with no layer"),
            ("--window-size 127,8", "--window-size", "a window that looks ahead"),
            ("--tp-2d --tp-x 2 --tp-y 1", "--tp-2d", "2-D tensor parallelism"),
            ("--schedules-method dualpipe", "--schedules-method 'dualpipe'",
             "the bidirectional DualPipe"),
            ("--schedules-method dualpipev", "--schedules-method dualpipev",
             "DualPipeV beside --num-layer-list")):
        error([ms_script(tmp, "refuse.sh", torchrun, extra)], flag, what)
    error([ms_script(tmp, "refuse.sh", "msrun --worker_num 12 --local_worker_num 8")],
          "--local_worker_num", "msrun's nodes not dividing its workers")

    # the vocabulary of a tokenizer read from a file: the model family's, by name
    llama = os.path.join(tmp, "pretrain_llama2_7b_ptd.sh")
    with open(llama, "w") as f:
        f.write("torchrun --nproc_per_node 8 pretrain_gpt.py " + " ".join(MINIMAL[:-2]) +
                " --tokenizer-type PretrainedFromHF --tokenizer-name-or-path ./tok\n")
    code, out, err = convert(converter, [llama])
    if code != 0 or flat(json.loads(out)).get("model.vocab") != 32000:
        report(f"Llama 2 by its name: expected vocab 32000, got exit {code} {err.strip()[-200:]}")
    error(["--world-size", "8", "--"] + MINIMAL[:-2] + ["--tokenizer-type", "PretrainedFromHF"],
          "--tokenizer-vocab", "an unnamed tokenizer file")

    # scripts that do not train, and models that are not decoders
    rest = " ".join(MINIMAL)
    for text, flag, what in (
            (f"torchrun --nproc_per_node 8 tools/run_text_generation_server.py {rest}\n",
             "not a training script: text generation", "a text generation server"),
            (f"python -m examples.inference.gpt.gpt_static_inference {rest}\n",
             "not a training script: text generation", "python -m of an inference module"),
            (f"python -m torch.distributed.launch --nproc_per_node 8 tasks/main.py "
             f"--task MSDP-EVAL-F1 {rest}\n", "not a training script: evaluation",
             "an evaluation task"),
            (f"torchrun --nproc_per_node 8 pretrain_bert.py {rest}\n", "BERT", "BERT"),
            ("torchrun --nproc_per_node 8 pretrain_t5.py --encoder-num-layers 12\n", "T5", "T5"),
            ("torchrun --nproc_per_node 8 train_fsdp2.py model.yaml\n", "YAML config is not found",
             "an FSDP2 launch whose YAML is not there"),
            ("python tools/checkpoint/convert.py --model-type GPT\n",
             "not a training script: checkpoint", "checkpoint conversion"),
            ("MODEL_ARGS=\"--num-layers 4\"\n", "not a training script", "a fragment")):
        path = os.path.join(tmp, "notrain.sh")
        with open(path, "w") as f:
            f.write(text)
        error([path], flag, what)


HOSTILE_AS_BYTES = 256 << 20   # address space a conversion may take
HOSTILE_TIMEOUT_S = 30


def mindspeed_fsdp2_files(converter):
    """MindSpeed-LLM's own files (tests/data/fsdp2/mindspeed-llm, SOURCE there):
    its FSDP2 launch of Qwen3-8B as shipped, with the Qwen3 config.json its docs
    print, must give the model its Megatron launch of the same model gives."""
    d = os.path.join(ROOT, "tests", "data", "fsdp2", "mindspeed-llm")
    fsdp2 = os.path.join(d, "examples", "fsdp2", "qwen3", "pretrain_qwen3_8b_4k_fsdp2_A2.sh")
    mcore = os.path.join(d, "examples", "mcore", "qwen3", "pretrain_qwen3_8b_4K_ptd.sh")
    a, _ = expect_ok(converter, ["--no-sources", "--hf-config",
                                 os.path.join(d, "qwen3-8b-config.json"), fsdp2],
                     "MindSpeed's FSDP2 launch of Qwen3-8B with its docs' config.json")
    b, _ = expect_ok(converter, ["--no-sources", mcore], "MindSpeed's Megatron launch of Qwen3-8B")
    # without --hf-config: its checkpoint (/home/data/Qwen3-8B/) is not here, and
    # the published Qwen3-8B of hf_configs.json stands in
    c, _ = expect_ok(converter, ["--no-sources", fsdp2],
                     "MindSpeed's FSDP2 launch of Qwen3-8B, its checkpoint not here")
    if a is None or b is None or c is None:
        return
    table = {k: (a.get(k), c.get(k)) for k in set(a) | set(c) if a.get(k) != c.get(k)}
    if table:
        fail(f"Qwen3-8B from hf_configs.json against MindSpeed's docs' config.json: (docs, "
             f"table) {table}")
    model = sorted(k for k in set(a) | set(b) if k.startswith("model.") and k != "model.name")
    off = {k: (a.get(k), b.get(k)) for k in model if a.get(k) != b.get(k)}
    if off or not model:
        fail(f"MindSpeed's FSDP2 and Megatron launches of Qwen3-8B: (FSDP2, Megatron) {off}")
    elif (a.get("parallel.zero"), a.get("parallel.dp")) != (3, 8):
        fail(f"MindSpeed's FSDP2 launch: expected ZeRO-3 over its 8 NPUs, found "
             f"{a.get('parallel.zero')}, dp {a.get('parallel.dp')}")
    else:
        print(f"ok   MindSpeed's FSDP2 and Megatron launches of Qwen3-8B: the same model "
              f"({len(model)} keys), FSDP2 as ZeRO-3 over 8")


def mindspeed_dualpipev_file(converter):
    """MindSpeed-LLM's own DeepSeek-V3 671B launch (tests/data/fsdp2/mindspeed-llm,
    SOURCE there) with --schedules-method dualpipev and --moe-fb-overlap: pp 8
    as DualPipeV's V of 16 virtual stages of 4 layers, its --noop-layers
    61,62,63 taken from the last (stage 0's second chunk), sends waited for,
    the all-to-alls merged."""
    script = os.path.join(ROOT, "tests", "data", "fsdp2", "mindspeed-llm", "examples", "mcore",
                          "deepseek3", "pretrain_deepseek3_671b_4k_ptd.sh")
    got, _ = expect_ok(converter, ["--no-sources", script],
                       "MindSpeed's DeepSeek-V3 launch with DualPipeV")
    if got is None:
        return
    want = {"parallel.pp": 8, "parallel.vpp": 2, "parallel.pp_schedule": "dualpipev",
            "parallel.stage_layers": [4] * 15 + [1], "model.layers": 61,
            "training.overlap_moe_a2a": True, "training.overlap_p2p_comm": False}
    off = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    if off:
        fail(f"MindSpeed's DeepSeek-V3 DualPipeV launch: (converted, expected) {off}")
    else:
        print("ok   MindSpeed's DeepSeek-V3 launch converts as DualPipeV, 61 layers in its V")


def fsdp2_checks(converter, npusim, tmp):
    """MindSpeed-LLM's FSDP2 launch: train_fsdp2.py YAML --section.key overrides,
    the model from a Hugging Face config.json (Qwen3-8B's, as MindSpeed's own
    Megatron script for it states: 36 layers, 4096 wide, 32 heads, 8 KV
    groups, FFN 12288, vocabulary 151936)."""
    d = os.path.join(tmp, "fsdp2", "examples", "fsdp2", "qwen3")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "run.yaml"), "w") as f:
        f.write("model:\n  trust_remote_code: False\ndata:\n  cutoff_len: 4096\n"
                "parallel:\n  fsdp_modules:\n    - model.layers.{*}\n  recompute: True\n"
                "training:\n  optimizer: adamw\n")
    hf = os.path.join(tmp, "fsdp2", "config.json")
    with open(hf, "w") as f:
        json.dump({"model_type": "qwen3", "hidden_act": "silu", "hidden_size": 4096,
                   "intermediate_size": 12288, "num_hidden_layers": 36,
                   "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                   "vocab_size": 151936, "tie_word_embeddings": False}, f)
    script = os.path.join(d, "pretrain_qwen3_8b_fsdp2.sh")
    with open(script, "w") as f:
        f.write("NPUS_PER_NODE=8\nNNODES=2\n"
                "torchrun --nproc_per_node $NPUS_PER_NODE --nnodes $NNODES train_fsdp2.py "
                "examples/fsdp2/qwen3/run.yaml \\\n  --model.model_name_or_path /no/such/Qwen3-8B/ "
                "\\\n  --parallel.fsdp_size 8 --parallel.ep_size 1 \\\n"
                "  --training.per_device_train_batch_size 2 "
                "--training.gradient_accumulation_steps 4\n")
    got, _ = expect_ok(converter, ["--hf-config", hf, script], "an FSDP2 launch with --hf-config")
    want = {"model.layers": 36, "model.hidden": 4096, "model.heads": 32, "model.kv_heads": 8,
            "model.ffn_hidden": 12288, "model.vocab": 151936, "model.seq_len": 4096,
            "model.activation": "swiglu", "model.tied_embeddings": False, "model.dropout": 0.0,
            "parallel.dp": 16, "parallel.tp": 1, "parallel.pp": 1, "parallel.zero": 3,
            "parallel.zero_shard_size": 8, "parallel.recompute": "full",
            "training.micro_batch": 2, "training.global_batch": 2 * 4 * 16,
            "model.layers_source": "config.json num_hidden_layers",
            "parallel.zero_shard_size_source": "run.yaml parallel.fsdp_size 8 (hybrid sharding)"}
    if got is not None:
        off = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
        if off:
            fail(f"FSDP2 launch: (converted, expected) {off}")
        elif npusim is not None:
            code, out, _ = convert(converter, ["--hf-config", hf, script])
            wl = os.path.join(tmp, "fsdp2.json")
            with open(wl, "w") as fh:
                fh.write(out)
            code, _, err = run([npusim, "validate", "--system", SYSTEM, "--workload", wl])
            if code:
                fail(f"FSDP2 launch: npusim validate: {err.strip()}")
    with open(script) as fh:
        text = fh.read()
    unknown = os.path.join(d, "pretrain_mymodel_fsdp2.sh")
    with open(unknown, "w") as fh:
        fh.write(text.replace("/no/such/Qwen3-8B/", "/no/such/MyModel-8B/"))
    expect_error(converter, [unknown], "--hf-config",
                 "an FSDP2 launch of a model with no config here nor in hf_configs.json")
    got, _ = expect_ok(converter, [script], "an FSDP2 launch of Qwen3-8B without --hf-config")
    if got is not None and got.get("model.layers_source") != (
            "Qwen3-8B's published config.json (as MindSpeed-LLM's "
            "examples/mcore/qwen3/pretrain_qwen3_8b_4K_ptd.sh states it) num_hidden_layers"):
        fail(f"FSDP2 launch from hf_configs.json: model.layers_source is "
             f"{got.get('model.layers_source')!r}")
    with open(hf, "w") as f:
        json.dump({"model_type": "gpt_oss", "num_hidden_layers": 24}, f)
    expect_error(converter, ["--hf-config", hf, script], "model_type",
                 "a Hugging Face model type the converter does not map")
    expect_error(converter, ["--hf-config", hf, "--", "--num-layers", "2"], "--hf-config",
                 "--hf-config with Megatron's own arguments")
    expect_error(converter, ["--hf-config", "/dev/zero", script], "regular file",
                 "--hf-config naming a device (never read: it would not end)")
    with open(os.path.join(d, "run.yaml"), "a") as f:   # a YAML alias: refused unexpanded
        f.write("a: &x [1, 2]\nb: [*x, *x, *x]\n")
    expect_error(converter, ["--hf-config", hf, script], "aliases",
                 "a YAML config with aliases (they could expand without bound)")


def limited(converter, args):
    """(exit status, stdout, stderr) of a conversion under the limits; exit
    None when it ran past the time limit."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (HOSTILE_AS_BYTES, HOSTILE_AS_BYTES))
    try:
        p = subprocess.run([sys.executable, converter] + args, cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, errors="replace",
                           preexec_fn=limit, timeout=HOSTILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, "", ""
    return p.returncode, p.stdout, p.stderr


def hostile_checks(converter, tmp):
    run8 = "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 4 " \
        "--hidden-size 256 --num-attention-heads 8 --seq-length 512 --micro-batch-size 1 " \
        "--bf16 --vocab-size 1000"
    big = 1 << 20   # the converter reads scripts of at most 1 MiB
    cases = [  # (what, script, expected words of the one line, or None: converts)
        ("a variable doubled 40 times",
         "A=xxxxxxxxxxxxxxxx\n" + 'A="$A$A"\n' * 40 + run8 + " --foo $A\n",
         ["expected expansions of at most", "line "]),
        ("an array doubled 40 times",
         "A=(x x x x)\n" + "A=(${A[@]} ${A[@]})\n" * 40 + run8 + "\n",
         ["expected expansions of at most", "line "]),
        ("defaults nested 900 deep around a long word",
         "X=" + "${A:-" * 900 + "y" * (big - 20000) + "}" * 900 + "\n" + run8 + "\n",
         ["expected expansions", "line 1"]),
        ("arrays nested 100000 deep", "A=(" * 100000 + "\n" + run8 + "\n",
         ["expected arrays nested", "line 1"]),
        # bash computes 2**64 as 0: --num-layers 16 would be a wrong answer
        ("arithmetic past 64 bits", run8.replace("--num-layers 4",
                                                 "--num-layers $((2**64 / 2**60))") + "\n",
         ["--num-layers", "overflows bash's 64-bit integers"]),
        ("a word of 1 MiB", run8 + " --foo " + "x" * (big - 400) + "\n", None),
        ('a double-quoted word of 1 MiB of \\$', run8 + ' --foo "' + "\\$" * (big // 2 - 400) +
         '"\n', None),
        ("100000 here-documents", "cat <<E\nE\n" * 100000 + run8 + "\n", None),
    ]
    for what, text, words in cases:
        path = os.path.join(tmp, "hostile.sh")
        with open(path, "w") as f:
            f.write(text)
        code, out, err = limited(converter, ["--world-size", "8", path])
        lines = err.strip().splitlines()
        if code is None:
            fail(f"hostile input ({what}): still running after {HOSTILE_TIMEOUT_S} s")
        elif "Traceback" in err:
            fail(f"hostile input ({what}): a traceback: {lines[-1:]}")
        elif words is None:
            if code != 0 or json.loads(out)["model"]["layers"] != 4:
                fail(f"hostile input ({what}): exit {code}, expected the conversion: {lines}")
            else:
                print(f"ok   hostile input ({what}): converted")
        elif code != 2 or out or len(lines) != 1 or not lines[0].startswith(PREFIX + path) \
                or not all(w in lines[0] for w in words):
            fail(f"hostile input ({what}): expected exit 2 and one line naming {path} and "
                 f"{words}, got exit {code}, stdout {out[:80]!r}, stderr {lines[:3]}")
        else:
            print(f"ok   hostile input ({what}): {lines[0][:150]}")

    # not a regular file: refused unread (a FIFO with no writer would block)
    fifo = os.path.join(tmp, "fifo.sh")
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero", tmp):
        code, out, err = limited(converter, ["--world-size", "8", path])
        lines = err.strip().splitlines()
        if code != 2 or out or len(lines) != 1 or path not in lines[0] \
                or "expected a regular file" not in lines[0]:
            fail(f"{path}: expected exit 2 and one line 'expected a regular file', got exit "
                 f"{code}, stderr {lines[:3]}")
        else:
            print(f"ok   {path}: {lines[0]}")


def converter_sources(converter):
    """The converter's text and that of the modules it imports from scripts/lib/
    (megatron_*.py and fsdp2_args.py, beside its tools/ folder), by path."""
    lib = os.path.join(os.path.dirname(os.path.dirname(converter)), "lib")
    paths = [converter] + sorted(os.path.join(lib, n) for n in
                                 (os.listdir(lib) if os.path.isdir(lib) else [])
                                 if (n.startswith("megatron_") and n.endswith(".py")) or
                                 n == "fsdp2_args.py")
    sources = {}
    for path in paths:
        with open(path) as f:
            sources[path] = f.read()
    return sources


class Caught(Exception):
    """A mutation made a check fail: the rest need not run."""


def mutation_checks(converter, npusim, tmp):
    sources = converter_sources(converter)
    for what, old, new in MUTATIONS + MODERN_MUTATIONS:
        if "npusim validate" in what and npusim is None:
            continue
        if sum(text.count(old) for text in sources.values()) != 1:
            fail(f"mutation '{what}': its text is not once in {converter} and its modules; "
                 "update MUTATIONS")
            continue
        # a copy of the tool and its modules laid out as in scripts/, one text broken
        root = os.path.join(tmp, "broken")
        shutil.rmtree(root, ignore_errors=True)
        for path, text in sources.items():
            folder = "tools" if path == converter else "lib"
            os.makedirs(os.path.join(root, folder), exist_ok=True)
            name = "broken-npusim-from-args" if path == converter else os.path.basename(path)
            with open(os.path.join(root, folder, name), "w") as f:
                f.write(text.replace(old, new))
        broken = os.path.join(root, "tools", "broken-npusim-from-args")
        caught = []

        def first(msg):   # the first failure is enough: stop there
            caught.append(msg)
            raise Caught()
        if (what, old, new) in MODERN_MUTATIONS:
            try:
                modern_checks(broken, npusim, tmp, report=first)
            except Caught:
                pass
        for case in CASES if not caught else ():
            check_case(broken, npusim, case, tmp, report=caught.append)
            if caught:
                break
        if not caught:
            fail(f"mutation '{what}': no check failed")
        else:
            print(f"ok   mutation '{what}' caught: {caught[0]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--npusim", help="npusim binary: validate the converted workloads")
    p.add_argument("--converter", default=os.path.join(ROOT, "scripts", "tools", "npusim-from-args"))
    p.add_argument("--no-mutations", action="store_true", help="skip the mutation checks")
    args = p.parse_args()
    converter = os.path.abspath(args.converter)
    npusim = os.path.abspath(args.npusim) if args.npusim else None
    tmp = tempfile.mkdtemp(prefix="from_args_test.")
    try:
        for case in CASES:
            before = len(failures)
            check_case(converter, npusim, case, tmp)
            if len(failures) == before:
                print(f"ok   {case['script']} -> configs/workloads/{case['config']}")
        before = len(failures)
        cli_checks(converter, npusim, tmp)
        if len(failures) == before:
            print("ok   command line")
        before = len(failures)
        modern_checks(converter, npusim, tmp)
        if len(failures) == before:
            print("ok   modern models (head_dim, dense layers, stage layers, msrun, refusals)")
        mindspeed_fsdp2_files(converter)
        mindspeed_dualpipev_file(converter)
        before = len(failures)
        fsdp2_checks(converter, npusim, tmp)
        if len(failures) == before:
            print("ok   FSDP2 launches (YAML, overrides, --hf-config)")
        hostile_checks(converter, tmp)
        if not args.no_mutations:
            mutation_checks(converter, npusim, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failure(s)" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
