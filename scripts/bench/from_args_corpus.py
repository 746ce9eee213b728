#!/usr/bin/env python3
"""from_args_corpus.py - scripts/tools/npusim-from-args over the launch
scripts of a Megatron-LM and a MindSpeed-LLM checkout (issue #29), each
converted workload checked by `npusim validate`, and the outcome counted.

  from_args_corpus.py [--npusim build/npusim] [--megatron DIR] [--mindspeed DIR]
                      [--list] [--train] [--json FILE]

DIR is a source tree (a checkout, or `git archive HEAD | tar -x`); neither is
stored in npusim. Megatron-LM: every *.sh under DIR/examples; MindSpeed-LLM:
every pretrain*.sh anywhere under DIR. Each script is converted as it stands,
with no option (no --world-size, no --tokenizer-vocab), and lands in one row:

  converted and validated      exit 0 and `npusim validate --system
                               configs/systems/ascend-910b.json` accepts it
                               (h100-dgx.json for an fp8 run: the 910B
                               has no fp8)
  converted, validate refused  exit 0 but npusim refuses the workload (a bug)
  not a training script: WHY   the converter says so (text generation,
                               checkpoint conversion, no training command, ...)
  refused: REASON              exit 2; REASON is the flag or feature its one
                               line names (the first --flag in it, else its
                               first words)

(--train: `npusim train --fidelity analytic` runs it instead), and the table
prints per tree, with the share of training scripts (all but
"not a training script") that convert and validate. --list adds one line
per script. Reads only; writes --json if asked. Python 3 standard library.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONVERTER = os.path.join(ROOT, "scripts", "tools", "npusim-from-args")
SYSTEM = os.path.join(ROOT, "configs", "systems", "ascend-910b.json")
SYSTEM_FP8 = os.path.join(ROOT, "configs", "systems", "h100-dgx.json")   # 910B has no fp8
PREFIX = "npusim-from-args: "
OK = "converted and validated"
NOT_TRAINING = "not a training script"


def scripts(tree, kind):
    found = []
    base = os.path.join(tree, "examples") if kind == "megatron" else tree
    for d, dirs, files in os.walk(base):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".sh") and (kind == "megatron" or f.startswith("pretrain")):
                found.append(os.path.join(d, f))
    return found


def reason_of(message, path):
    """The refusal's bucket: 'not a training script: WHY' as said, else the
    first --flag the line names, else its first words."""
    msg = message.strip().splitlines()[-1] if message.strip() else "(no message)"
    if msg.startswith(PREFIX):
        msg = msg[len(PREFIX):]
    if msg.startswith(path + ": "):
        msg = msg[len(path) + 2:]
    msg = re.sub(r"^(.*?: )?line \d+: ", "", msg)   # the file and line of the command
    m = re.search(r"not a training script(: [^;(]*)?", msg)
    if m:
        return NOT_TRAINING + (m.group(1) or "").rstrip(" ,.")
    if msg.startswith("model.vocab"):
        return "refused: tokenizer vocabulary read from a file"
    m = re.match(r"([\w.-]+\.py): (.*?) is not modelled", msg)
    if m:
        return f"refused: {m.group(2)}"
    if re.match(r"[\w.-]+\.py trains, but from a string", msg):
        return "refused: training command in a string (srun / sh -c \"$CMD\")"
    if re.match(r"train_fsdp2\.py trains a model read from the Hugging Face checkpoint", msg):
        return "refused: model read from a Hugging Face checkpoint (FSDP2; give --hf-config)"
    m = re.match(r"([\w.-]+\.py) trains, but", msg)
    if m:
        return "refused: model read from a configuration file, not arguments"
    m = re.search(r"(?<![\w-])--[a-z0-9][a-z0-9_-]*", msg)
    if m:
        return "refused: " + m.group()
    if msg.startswith("the world size"):
        return "refused: world size not in the script"
    return "refused: " + " ".join(msg.split()[:6])


def run_one(path, npusim, train):
    p = subprocess.run([sys.executable, CONVERTER, "--no-sources", path],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return reason_of(p.stderr, path), p.stderr.strip().splitlines()[-1:] or [""]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(p.stdout)
        tmp = f.name
    try:
        fp8 = json.loads(p.stdout).get("training", {}).get("precision") == "fp8"
        cmd = ["train", "--fidelity", "analytic"] if train else ["validate"]
        v = subprocess.run([npusim] + cmd + ["--system", SYSTEM_FP8 if fp8 else SYSTEM,
                                             "--workload", tmp, "--format", "csv"],
                           capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(tmp)
    if v.returncode != 0:
        return "converted, validate refused", v.stderr.strip().splitlines()[-1:] or [""]
    return OK, [""]


def table(title, rows):
    counts = collections.Counter(r for r, _ in rows.values())
    total = len(rows)
    training = total - sum(n for r, n in counts.items() if r.startswith(NOT_TRAINING))
    ok = counts.get(OK, 0)
    print(f"## {title}: {total} scripts, {training} training scripts, "
          f"{ok} converted and validated ({100.0 * ok / training if training else 0:.0f}%)")
    print("| outcome | scripts |")
    print("|---|---|")
    order = sorted(counts.items(), key=lambda kv: (kv[0] != OK, kv[0].startswith(NOT_TRAINING),
                                                    -kv[1], kv[0]))
    for r, n in order:
        print(f"| {r} | {n} |")
    print()
    return ok, training


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--npusim", default=os.path.join(ROOT, "build", "npusim"))
    ap.add_argument("--megatron", metavar="DIR", help="a Megatron-LM source tree")
    ap.add_argument("--mindspeed", metavar="DIR", help="a MindSpeed-LLM source tree")
    ap.add_argument("--list", action="store_true", help="one line per script")
    ap.add_argument("--train", action="store_true", help="run each converted workload with "
                    "`npusim train --fidelity analytic` instead of `npusim validate` (slower)")
    ap.add_argument("--json", metavar="FILE", help="write {script: [outcome, message]}")
    opts = ap.parse_args()
    if not (opts.megatron or opts.mindspeed):
        ap.error("give --megatron DIR and/or --mindspeed DIR")
    everything = {}
    for kind, tree in (("megatron", opts.megatron), ("mindspeed", opts.mindspeed)):
        if not tree:
            continue
        rows = {}
        for path in scripts(tree, kind):
            rows[os.path.relpath(path, tree)] = run_one(path, opts.npusim, opts.train)
        if opts.list:
            for name, (r, msg) in rows.items():
                print(f"{r:40.40} {name}  {msg[0][:160]}")
            print()
        table("Megatron-LM examples/*.sh" if kind == "megatron" else
              "MindSpeed-LLM pretrain*.sh", rows)
        everything[kind] = rows
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump(everything, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
