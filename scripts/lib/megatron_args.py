"""megatron_args.py - Megatron-LM / MindSpeed-LLM arguments as an npusim
workload config, for scripts/tools/npusim-from-args: the flags it reads, those
it drops silently and the launcher's (Arguments, over the Field words
megatron_shell.py expands), and convert(args, opts), the mapping to npusim's
keys with Megatron's (or MindSpeed's) defaults for what the arguments leave
out, each value with a KEY_source naming the flag or default it came from.

Bad or missing values raise InputError with the one line the user sees, and
so do an architecture npusim does not model (ARCH_UNMODELLED, --spec modules,
sliding windows, ...) and a program that does not train or trains what is not
a decoder (program_kind); flags whose effect it does not model are collected
in Arguments.ignored and approximations in Arguments.notes for the tool to
print. It reads no file and does not parse
shell (megatron_shell.py does). Python 3 standard library only."""

import math
import os
import re

from megatron_shell import MARK_RE, Field, InputError, one_line, shorten

MAX_NAME_CHARS = 63            # npusim's name and model.name
GPT2_BPE_VOCAB = 50257         # entries of GPT-2's BPE vocabulary (gpt2-vocab.json)
MEGATRON_BUCKET_ELEMENTS = 40_000_000  # Megatron DDP's default bucket, at least 1M x dp
MIB = 1 << 20
# Tokenizers read from a file whose size the model family fixes, found in the
# model's name (the script's file name or --model-name) or the tokenizer's
# path: (pattern, entries, whose).
KNOWN_VOCABS = (
    (r"llama-?2|mixtral", 32000, "Llama 2's and Mixtral's SentencePiece tokenizer"),
    (r"llama-?3", 128256, "Llama 3's tokenizer"),
    (r"gemma-?2", 256000, "Gemma 2's SentencePiece tokenizer"),
    (r"grok-?1", 131072, "Grok-1's SentencePiece tokenizer"),
    (r"gpt2-vocab", GPT2_BPE_VOCAB, "GPT-2's BPE vocabulary file"),
)


# ---------------------------------------------------------------------------
# Megatron's arguments.
# ---------------------------------------------------------------------------

# Flags the conversion reads: value-taking (True) or switches (False).
USED = {
    "--num-layers": True, "--hidden-size": True, "--num-attention-heads": True,
    "--group-query-attention": False, "--num-query-groups": True, "--kv-channels": True,
    "--ffn-hidden-size": True, "--seq-length": True, "--encoder-seq-length": True,
    "--micro-batch-size": True, "--global-batch-size": True,
    "--tensor-model-parallel-size": True, "--pipeline-model-parallel-size": True,
    "--num-layers-per-virtual-pipeline-stage": True,
    "--num-virtual-stages-per-pipeline-rank": True,
    "--decoder-first-pipeline-num-layers": True, "--decoder-last-pipeline-num-layers": True,
    "--num-layers-in-first-pipeline-stage": True, "--num-layers-in-last-pipeline-stage": True,
    "--context-parallel-size": True, "--context-parallel-algo": True,
    "--ulysses-degree-in-cp": True,
    "--expert-model-parallel-size": True, "--num-experts": True, "--moe-router-topk": True,
    "--moe-ffn-hidden-size": True, "--moe-intermediate-size": True,
    "--moe-shared-expert-intermediate-size": True, "--n-shared-experts": True,
    "--moe-expert-capacity-factor": True, "--moe-layer-freq": True,
    "--first-k-dense-replace": True, "--expert-interval": True, "--num-layer-list": True,
    "--num-zero-experts": True,
    "--noop-layers": True, "--interleave-sliding-window": True, "--sliding-window-size": True,
    "--window-size": True, "--window-attn-skip-freq": True, "--tp-2d": False,
    "--expert-tensor-parallel-size": True, "--moe-tp-extend-ep": False,
    "--multi-latent-attention": False, "--multi-head-latent-attention": False,
    "--q-lora-rank": True, "--kv-lora-rank": True, "--qk-head-dim": True,
    "--qk-pos-emb-head-dim": True, "--v-head-dim": True, "--qk-nope-head-dim": True,
    "--qk-rope-head-dim": True, "--mtp-num-layers": True, "--geglu": False, "--gelu-tanh": False,
    "--quick-geglu": False,
    "--spec": True,
    "--sequence-parallel": False,
    "--recompute-activations": False, "--recompute-granularity": True,
    "--recompute-method": True, "--recompute-num-layers": True,
    "--checkpoint-activations": False, "--activations-checkpoint-method": True,
    "--activations-checkpoint-num-layers": True, "--checkpoint-num-layers": True,
    "--use-distributed-optimizer": False, "--use-torch-fsdp2": False,
    "--use-custom-fsdp": False, "--use-megatron-fsdp": False,
    "--data-parallel-sharding-strategy": True,
    "--swiglu": False, "--squared-relu": False, "--normalization": True,
    "--untie-embeddings-and-output-weights": False, "--position-embedding-type": True,
    "--use-rotary-position-embeddings": False,
    "--attention-dropout": True, "--hidden-dropout": True,
    "--vocab-size": True, "--padded-vocab-size": True, "--make-vocab-size-divisible-by": True,
    "--tokenizer-type": True,
    "--bf16": False, "--fp16": False, "--fp8-format": True, "--optimizer": True,
    "--use-flash-attn": False, "--attention-backend": True,
    "--overlap-grad-reduce": False, "--ddp-bucket-size": True,
    "--accumulate-allreduce-grads-in-fp32": False, "--grad-reduce-in-bf16": False,
    "--overlap-param-gather": False, "--overlap-p2p-communication": False,
    "--no-overlap-p2p-communication": False, "--tp-comm-overlap": False, "--use-mc2": False,
    "--overlap-moe-expert-parallel-comm": False, "--moe-fb-overlap": False,
    "--use-tp-pp-dp-mapping": False, "--schedules-method": True,
}

# Flags that change nothing npusim models: read and dropped without a word.
QUIET = {
    # learning rate, optimizer hyper-parameters, initialisation, loss scale
    "--lr": True, "--min-lr": True, "--lr-decay-style": True, "--lr-decay-iters": True,
    "--lr-decay-samples": True, "--lr-warmup-fraction": True, "--lr-warmup-iters": True,
    "--lr-warmup-samples": True, "--weight-decay": True, "--clip-grad": True,
    "--adam-beta1": True, "--adam-beta2": True, "--adam-eps": True,
    "--init-method-std": True, "--initial-loss-scale": True, "--loss-scale": True,
    "--min-loss-scale": True, "--loss-scale-window": True, "--seed": True,
    "--train-iters": True, "--train-samples": True,
    # data, tokenizer files, checkpoints, logging, evaluation
    "--data-path": True, "--train-data-path": True, "--valid-data-path": True,
    "--test-data-path": True, "--split": True, "--data-cache-path": True,
    "--vocab-file": True, "--merge-file": True, "--tokenizer-model": True,
    "--tokenizer-name-or-path": True, "--handler-name": True, "--num-workers": True,
    "--dataloader-type": True, "--mock-data": False,
    "--save": True, "--load": True, "--save-interval": True, "--no-load-optim": False,
    "--no-load-rng": False, "--no-save-optim": False, "--no-save-rng": False,
    "--ckpt-format": True, "--enable-hf2mg-convert": False, "--model-type-hf": True,
    "--use-checkpoint-args": False, "--finetune": False,
    "--eval-interval": True, "--eval-iters": True, "--log-interval": True,
    "--tensorboard-dir": True, "--log-throughput": False, "--timing-log-level": True,
    "--wandb-project": True, "--wandb-exp-name": True, "--wandb-save-dir": True,
    "--exit-interval": True, "--exit-duration-in-mins": True,
    "--distributed-backend": True, "--distributed-timeout-minutes": True,
    # model details with no cost npusim would count
    "--max-position-embeddings": True, "--rotary-base": True, "--norm-epsilon": True,
    "--disable-bias-linear": False, "--use-mcore-models": False, "--use-legacy-models": False,
}

# torchrun / torch.distributed.launch options (before the .py), '_' read as '-'.
LAUNCHER = {
    "--nnodes": True, "--nproc-per-node": True, "--standalone": False,
    "--node-rank": True, "--master-addr": True, "--master-port": True,
    "--rdzv-backend": True, "--rdzv-endpoint": True, "--rdzv-id": True, "--rdzv-conf": True,
    "--max-restarts": True, "--monitor-interval": True, "--log-dir": True,
    "--redirects": True, "--tee": True, "--use-env": False, "--local-addr": True,
    "--start-method": True, "--role": True, "--no-python": False, "--module": False,
    "--run-path": False,
    # MindSpore's msrun: --worker_num is the world size, --local_worker_num per node
    "--worker-num": True, "--local-worker-num": True, "--join": True,
    "--cluster-time-out": True, "--bind-core": True, "--sim-level": True,
}

# Flags that change the model's architecture in a way npusim does not model:
# given (and not off), the conversion stops with one line naming the flag,
# never drops it. The value is what the flag makes the model.
ARCH_UNMODELLED = {
    "--hybrid-override-pattern": "a hybrid Mamba / attention layer pattern",
    "--is-hybrid-model": "a hybrid Mamba / attention model",
    "--linear-attention-type": "linear attention",
    "--experimental-attention-variant": "an attention variant",
    "--num-dense-layers": "dense layers of a hybrid model",
    "--moe-zero-expert-num": "zero-computation experts",
    "--zero-expert-num": "zero-computation experts",
    "--encoder-num-layers": "an encoder stack (encoder-decoder model)",
    "--vision-model-type": "a vision encoder (multimodal model)",
    "--tp-2d": "2-D tensor parallelism",
}

# MindSpeed's --context-parallel-algo values, as parallel.cp_algo.
CP_ALGOS = {"megatron_cp_algo": "ring", "ulysses_cp_algo": "ulysses",
            "kvallgather_cp_algo": "allgather", "hybrid_cp_algo": "hybrid"}



def sliding_window(a, seq):
    """(model.sliding_window_tokens, model.full_attention_every, source) of the
    window flags, or None. MindSpeed's --interleave-sliding-window W masks keys W
    or more back in odd-numbered layers (Gemma 2: layer_number - 1 even), so W
    keys and every 2nd layer whole; Megatron-Core's --window-size L,R sees L
    keys back and R ahead (R 0: causal) in every layer, less each
    --window-attn-skip-freq N-th (layer_number % N == 0). A window covering the
    sequence changes nothing. DeepSeek-V4's --sliding-window-size is part of
    its sparse attention, refused with it."""
    if a.given("--interleave-sliding-window"):
        w = a.int("--interleave-sliding-window", hi=1 << 30)
        found = (w, 2, a.src("--interleave-sliding-window") + " (Gemma 2: every 2nd layer whole)")
    elif a.given("--window-size"):
        t = a.text("--window-size")
        m = re.fullmatch(r"\(?\s*(-?\d{1,12})\s*,\s*(-?\d{1,12})\s*\)?", t or "")
        if not m or int(m.group(2)) != 0 or int(m.group(1)) < -1:
            raise InputError(f"{a.src('--window-size')}: expected LEFT,0 (a causal window of LEFT "
                             f"keys back; -1: all), found {t!r}")
        left = int(m.group(1))
        every, src = 0, a.src("--window-size")
        if a.given("--window-attn-skip-freq"):
            every = a.int("--window-attn-skip-freq", hi=100000)
            src += " and " + a.src("--window-attn-skip-freq")
        found = (left + 1 if left >= 0 else 0, every, src)
    else:
        return None
    if found[0] == 0 or found[0] >= seq:
        return None       # the window covers the sequence: full attention
    return found

# MindSpeed-LLM's --spec layer modules npusim models: decoders whose layers are
# Megatron's GPT layer up to details of no cost npusim counts (QK layer norms,
# norm placement, router variants). Any other --spec is refused by name.
SPECS_MODELLED = {
    "qwen3_spec": "Qwen3: GPT layers with QK layer norms",
    "qwen2_moe_spec": "Qwen2-MoE: GPT layers with a gated shared expert",
    "phi35_moe_spec": "Phi-3.5-MoE: GPT layers with MoE",
    "grok_spec": "Grok-1: GPT layers with MoE",
    "bailing_spec": "Ling (Bailing): GPT layers with MoE",
    "gemma2_spec": "Gemma 2: GPT layers with extra norms",
    "longcat_spec": "LongCat-Flash: shortcut-connected MoE layers (model.moe.shortcut)",
    "minimax_spec": "MiniMax-M2: softmax attention with QK layer norms over all heads "
                    "(MinimaxAttention), MoE",
    "layer_spec": "",
}
SPECS_UNMODELLED = {
    "qwen3_next_spec": "Qwen3-Next's gated DeltaNet linear attention",
    "deepseek4_spec": "DeepSeek-V4's sparse attention",
    "hybrid_layer_specs": "a hybrid Mamba / attention stack",
}
# Layer modules whose attention is latent: they need the MLA flags.
SPECS_LATENT = {
    "deepseek_spec": "DeepSeek: latent attention and MoE layers",
    "plm_spec": "PLM: latent attention",
}

# Programs a launch script runs, by file name: (pattern, what it does) for
# those that do not train (checked first), then training programs of models
# npusim does not model. Anything else running --num-layers is taken for
# Megatron's GPT training (pretrain_gpt.py, MindSpeed's pretrain_gpt.py, ...).
NOT_TRAINING = (
    (r"generat|inference|infer|server|chat|text_gen", "text generation"),
    (r"eval|mmlu|validate", "evaluation"),
    (r"convert|checkpoint|export|quantiz|prune|preprocess|extract|merge|data|combine|state_dict",
     "checkpoint or data conversion"),
)
UNMODELLED_PROGRAMS = (
    (r"(^|/)(multimodal|mimo)/|vlm|llava", "multimodal training (a vision encoder beside the "
     "language model)"),
    (r"bert", "BERT (an encoder)"),
    (r"t5", "T5 (an encoder-decoder)"),
    (r"hybrid|mamba", "a hybrid Mamba model (state-space layers)"),
    (r"retro", "RETRO (retrieval-augmented)"),
)
TRAINING_PROGRAM = re.compile(r"(^|[_/])(pre|post)?train|finetune|sft")
TRAINER_NAME = re.compile(r"(pre|post)?train|finetune|sft")   # a name that starts so trains

# Flags only MindSpeed(-LLM) has: their presence says MindSpeed's defaults apply.
MINDSPEED_ONLY = ("--use-mc2", "--use-fused-rmsnorm", "--use-fused-swiglu",
                  "--use-fused-rotary-pos-emb", "--padded-vocab-size", "--context-parallel-algo",
                  "--tokenizer-name-or-path", "--reuse-fp32-param", "--swap-attention",
                  "--recompute-activation-function", "--use-ascend-mc2", "--n-shared-experts",
                  "--moe-intermediate-size")


class Flag:
    def __init__(self, name, values, inline):
        self.name = name
        self.values = values      # list of Field
        self.inline = inline      # given as --name=value


class Arguments:
    """Megatron's arguments after the .py, plus the launcher's before it."""

    def __init__(self, fields):
        self.flags = {}           # name -> last Flag (argparse: the last one wins)
        self.launcher = {}
        self.ignored = {}         # flags listed as not modelled, in order (a dict: a set
        self.notes = {}           # that keeps order, so a long list is not quadratic)
        self.has_torchrun = False
        self.hidden = None        # the first expansion the reader could not make, if any
        py = next((k for k, f in enumerate(fields) if f.text.endswith(".py") or
                   (f.text == "-m" and k + 1 < len(fields) and
                    not fields[k + 1].text.startswith("torch.distributed."))), None)
        if py is not None and fields[py].text == "-m":   # python -m package.module
            fields = fields[:py] + [Field(fields[py + 1].text.replace(".", "/") + ".py")] + \
                fields[py + 2:]
        self.program = fields[py].text if py is not None else None
        before, after = (fields[:py], fields[py + 1:]) if py is not None else ([], fields)
        for f in before:
            t = os.path.basename(f.text)
            if t in ("torchrun", "torch.distributed.launch", "torch.distributed.run", "msrun"):
                self.has_torchrun = True
        self.hidden = next((f"{shorten(f.shown)}: {f.unknown}" for f in after
                            if MARK_RE.fullmatch(f.text)), None)
        self.read(before, launcher_side=True)
        self.read(after, launcher_side=False)

    def read(self, fields, launcher_side):
        k = 0
        while k < len(fields):
            f = fields[k]
            k += 1
            if not f.text.startswith("--") or f.text == "--":
                if not launcher_side:
                    why = f.unknown if MARK_RE.fullmatch(f.text) else "no flag takes it"
                    self.note(f"ignored {shorten(f.shown)}: {why}")
                continue
            name, eq, inline = f.text.partition("=")
            values = [Field(inline)] if eq else []
            while not eq and k < len(fields) and not fields[k].text.startswith("--"):
                values.append(fields[k])
                k += 1
            lname = name.replace("_", "-")
            if lname in LAUNCHER:
                if lname in ("--nnodes", "--nproc-per-node", "--standalone", "--worker-num"):
                    self.has_torchrun = True
                self.launcher[lname] = Flag(name, values, bool(eq))
                continue
            if launcher_side:
                self.ignore(name)
                continue
            self.flags[name] = Flag(name, values, bool(eq))
            takes = USED.get(name, QUIET.get(name))
            if takes is False and values and not eq:
                self.note(f"ignored {shorten(values[0].shown)} after {name}: {name} takes no value")
            if name not in USED and name not in QUIET:
                self.ignore(name)

    def maybe_hidden(self):
        """For a flag not found: where it may be, if an expansion was not made."""
        return f"; it may be in {self.hidden}" if self.hidden else ""

    def ignore(self, name):
        self.ignored[name] = None

    def note(self, msg):
        self.notes[msg] = None

    def given(self, name):
        return name in self.flags

    def text(self, name, default=None):
        """The flag's value as text; default when absent."""
        fl = self.flags.get(name)
        if fl is None:
            return default
        if not fl.values:
            raise InputError(f"{name}: expected a value, found none")
        if len(fl.values) > 1:
            raise InputError(f"{name}: expected one value, found {len(fl.values)}: "
                             + " ".join(v.shown for v in fl.values[:4]))
        v = fl.values[0]
        if v.unknown:
            raise InputError(f"{name}: {v.unknown}")
        return v.text

    def int(self, name, default=None, lo=1, hi=1 << 40):
        t = self.text(name)
        if t is None:
            return default
        try:
            v = int(t, 10)
        except ValueError:
            v = None
        if v is None or not lo <= v <= hi:
            raise InputError(f"{name}: expected an integer from {lo} to {hi}, found {shorten(t)}")
        return v

    def float(self, name, default=None, lo=0.0, hi=1.0):
        t = self.text(name)
        if t is None:
            return default
        try:
            v = float(t)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and lo <= v <= hi):
            raise InputError(f"{name}: expected a number from {lo:g} to {hi:g}, found {shorten(t)}")
        return v

    def choice(self, name, choices, default=None):
        t = self.text(name)
        if t is None:
            return default
        if t not in choices:
            raise InputError(f"{name}: expected one of {', '.join(choices)}, found {shorten(t)}")
        return t

    def src(self, name):
        """How the flag was written, for a _source string."""
        fl = self.flags[name]
        return name + ("=" if fl.inline else " " if fl.values else "") + \
            " ".join(v.shown for v in fl.values)

    def launcher_count(self, name):
        fl = self.launcher.get(name)
        if fl is None:
            return None
        shown = fl.name
        if len(fl.values) != 1:
            raise InputError(f"{shown}: expected one value, found {len(fl.values)}")
        v = fl.values[0]
        if v.unknown:
            raise InputError(f"{shown}: {v.unknown}; give --world-size")
        t = v.text
        if name == "--nnodes" and re.fullmatch(r"\d+:\d+", t):
            lo, hi = t.split(":")
            if lo != hi:
                raise InputError(f"{shown} {t}: an elastic range of nodes; give --world-size")
            t = lo
        if not re.fullmatch(r"\d+", t) or not 1 <= int(t) <= 1 << 30:
            raise InputError(f"{shown}: expected a count from 1 to {1 << 30}, found {shorten(t)}"
                             "; give --world-size")
        return int(t)


# ---------------------------------------------------------------------------
# The conversion.
# ---------------------------------------------------------------------------

class Out:
    """A workload section: values in order, each with its _source."""

    def __init__(self, sources):
        self.d = {}
        self.sources = sources

    def set(self, key, value, source):
        self.d[key] = value
        if self.sources and source:
            self.d[key + "_source"] = one_line(source[:1000])[:1000]


def program_kind(program, task=None):
    """(trains, what) of a Python program a script runs: (False, what) for
    one that does not train, (True, what) for the training of a model npusim
    does not model, (True, None) for GPT training, None when its name says
    neither (a program that is not obviously a trainer)."""
    name = program.replace("\\", "/").lower()
    base = os.path.basename(name)
    if task is not None and not TRAINING_PROGRAM.search(base):
        t = task.upper()
        if "EVAL" in t:
            return False, f"evaluation (--task {task})"
        if "PROMPT" in t or "GEN" in t:
            return False, f"text generation (--task {task})"
    for pattern, what in NOT_TRAINING if not TRAINER_NAME.match(base) else ():
        if re.search(pattern, base):
            return False, what
    for pattern, what in UNMODELLED_PROGRAMS:
        if re.search(pattern, name):
            return True, what
    if TRAINING_PROGRAM.search(base) or base == "pretrain_gpt.py":
        return True, None
    return None


def check_program(a):
    """Refuses a command that does not train, or trains a model npusim does
    not model, naming the program: before any value is read."""
    if a.program is None:
        return
    task = a.flags["--task"].values[0].text if "--task" in a.flags and \
        a.flags["--task"].values else None
    kind = program_kind(a.program, task)
    if kind is None:
        return
    trains, what = kind
    base = os.path.basename(a.program)
    if not trains:
        raise InputError(f"not a training script: {what} ({base})")
    if what is not None:
        raise InputError(f"{base}: {what} is not modelled by npusim")


def check_architecture(a):
    """Refuses a flag that changes the architecture into something npusim
    does not model, in one line naming it (never dropped with a warning)."""
    for name, what in ARCH_UNMODELLED.items():
        fl = a.flags.get(name)
        if fl is None:
            continue
        if fl.values and len(fl.values) == 1 and fl.values[0].text.strip() in ("0", "False",
                                                                              "false", "none"):
            continue
        raise InputError(f"{a.src(name)}: {what} is not modelled by npusim")
    module = spec_module(a)
    if module is not None:
        if module == "longcat_spec" and not a.given("--num-experts"):
            raise InputError(f"{a.src('--spec')}: LongCat-Flash's shortcut layers without "
                             "--num-experts (their MoE block's experts)")
        if module in SPECS_UNMODELLED:
            raise InputError(f"{a.src('--spec')}: {SPECS_UNMODELLED[module]} is not modelled by "
                             "npusim")
        if module in SPECS_LATENT:
            if latent_flag(a) is None:
                raise InputError(f"{a.src('--spec')}: {SPECS_LATENT[module]}, but neither "
                                 "--multi-latent-attention nor --multi-head-latent-attention "
                                 "is given (its widths would be guesses)")
            a.note(f"--spec {module}: modelled as Megatron-Core's layer with latent attention "
                   f"({SPECS_LATENT[module]})")
            return
        if module not in SPECS_MODELLED:
            raise InputError(f"{a.src('--spec')}: a layer module npusim-from-args does not know "
                             "(it may change the architecture)")
        a.note(f"--spec {module}: modelled as Megatron's GPT layer"
               + (f" ({SPECS_MODELLED[module]})" if SPECS_MODELLED[module] else ""))


def spec_module(a):
    """The --spec layer module's name (longcat_spec), or None."""
    fl = a.flags.get("--spec")
    if fl is None:
        return None
    words = [v.text for v in fl.values]
    return words[0].rsplit(".", 1)[-1] if words else ""


def latent_flag(a):
    """The flag that turns latent attention on (Megatron's, or MindSpeed's
    older name), or None."""
    return next((f for f in ("--multi-latent-attention", "--multi-head-latent-attention")
                 if a.given(f)), None)


def latent_attention(a, sources):
    """model.mla from Megatron-Core's MLA flags (its defaults where not given;
    MindSpeed's older --qk-nope-head-dim / --qk-rope-head-dim read too), or
    None without latent attention."""
    on = latent_flag(a)
    if on is None:
        return None
    out = Out(sources)
    q = a.int("--q-lora-rank", 0, 0, 1_000_000)
    out.set("q_lora_rank", q, a.src("--q-lora-rank") if a.given("--q-lora-rank") else
            "Megatron default: none (queries projected directly)")
    for key, flags, default in (("kv_lora_rank", ("--kv-lora-rank",), 32),
                                ("qk_nope_head_dim", ("--qk-head-dim", "--qk-nope-head-dim"), 128),
                                ("qk_rope_head_dim", ("--qk-pos-emb-head-dim",
                                                      "--qk-rope-head-dim"), 64),
                                ("v_head_dim", ("--v-head-dim",), 128)):
        given = [f for f in flags if a.given(f)]
        if len(given) > 1:
            raise InputError(f"{a.src(given[1])}: given with {given[0]} (the same width)")
        if given:
            out.set(key, a.int(given[0], None, 1, 100000), a.src(given[0]))
        else:
            out.set(key, default, f"Megatron default with {on}: {default}")
    return out.d


def flag_or(a, name, default_text):
    return a.src(name) if name in a.flags else default_text


def convert(a, opts):
    """The workload dict of Arguments a."""
    mindspeed = any(n in a.flags for n in MINDSPEED_ONLY)
    model, par, tr = Out(opts.sources), Out(opts.sources), Out(opts.sources)
    check_program(a)
    check_architecture(a)

    # ---- sizes ----
    for need in ("--num-layers", "--hidden-size", "--num-attention-heads", "--micro-batch-size"):
        if not a.given(need):
            raise InputError(f"{need}: not given (Megatron needs it)" + a.maybe_hidden())
    layers = a.int("--num-layers", hi=100000)
    hidden = a.int("--hidden-size", hi=10_000_000)
    heads = a.int("--num-attention-heads", hi=100000)
    seq_flag = "--seq-length" if a.given("--seq-length") else "--encoder-seq-length"
    if not a.given(seq_flag):
        raise InputError("--seq-length: not given (Megatron needs it)" + a.maybe_hidden())
    seq = a.int(seq_flag, hi=100_000_000)
    window = sliding_window(a, seq)
    kv_channels = a.int("--kv-channels", None, hi=10_000_000)
    if kv_channels is None and hidden % heads:
        raise InputError(f"--hidden-size {hidden}: not a multiple of --num-attention-heads {heads} "
                         "(and no --kv-channels)")
    head_dim = kv_channels if kv_channels is not None and (hidden % heads or
                                                           kv_channels != hidden // heads) else 0
    if latent_flag(a) is not None and kv_channels is not None:
        head_dim = 0
        a.note(f"{a.src('--kv-channels')}: not read with latent attention (its head widths are "
               "--qk-head-dim, --qk-pos-emb-head-dim and --v-head-dim)")
    if latent_flag(a) is not None:   # Megatron-Core's MLA has a key and value per head
        kv, kv_src = heads, f"{latent_flag(a)} (a key and value per head)"
        if a.given("--num-query-groups"):
            a.text("--num-query-groups")
            a.note("--num-query-groups has no effect with latent attention (as in Megatron-Core)")
    elif a.given("--group-query-attention"):
        if not a.given("--num-query-groups"):
            raise InputError("--group-query-attention: --num-query-groups is not given")
        kv = a.int("--num-query-groups", hi=100000)
        kv_src = a.src("--num-query-groups")
        if heads % kv:
            raise InputError(f"--num-query-groups {kv}: does not divide --num-attention-heads "
                             f"{heads}")
    else:
        kv, kv_src = heads, "--num-attention-heads (no --group-query-attention)"
        if a.given("--num-query-groups"):
            a.text("--num-query-groups")
            a.note("--num-query-groups has no effect without --group-query-attention "
                   "(as in Megatron)")

    swiglu = a.given("--swiglu")
    if swiglu and a.given("--squared-relu"):
        raise InputError("--squared-relu: given with --swiglu")
    if a.given("--ffn-hidden-size"):
        ffn, ffn_src = a.int("--ffn-hidden-size", hi=100_000_000), a.src("--ffn-hidden-size")
    elif swiglu:
        ffn = int((4 * hidden * 2 / 3) / 64) * 64
        ffn_src = "Megatron default with --swiglu: 4 x --hidden-size x 2/3, rounded down to 64"
    else:
        ffn, ffn_src = 4 * hidden, "Megatron default: 4 x --hidden-size"

    # ---- parallel plan ----
    tp = a.int("--tensor-model-parallel-size", 1, hi=100000)
    pp = a.int("--pipeline-model-parallel-size", 1, hi=100000)
    cp = a.int("--context-parallel-size", 1, hi=100000)
    ep = a.int("--expert-model-parallel-size", 1, hi=100000)
    if heads % tp:
        raise InputError(f"--tensor-model-parallel-size {tp}: does not divide "
                         f"--num-attention-heads {heads}")
    if kv % tp:
        raise InputError(f"--tensor-model-parallel-size {tp}: does not divide "
                         f"--num-query-groups {kv}")
    if opts.world_size is not None:
        world, world_src = opts.world_size, f"--world-size {opts.world_size} (npusim-from-args)"
    elif "--worker-num" in a.launcher:
        world = a.launcher_count("--worker-num")
        world_src = f"msrun --worker_num {world}"
        local = a.launcher_count("--local-worker-num")
        if local is not None and world % local:
            raise InputError(f"msrun --local_worker_num {local}: does not divide --worker_num "
                             f"{world}")
    else:
        nn = a.launcher_count("--nnodes")
        npn = a.launcher_count("--nproc-per-node")
        if "--standalone" in a.launcher and nn is None:
            nn = 1
        if nn is None and npn is None and not a.has_torchrun:
            raise InputError("the world size is not in the arguments (no torchrun --nnodes / "
                             "--nproc-per-node, no msrun --worker_num); give --world-size N")
        nn, npn = nn or 1, npn or 1
        world = nn * npn
        world_src = f"--nnodes {nn} x --nproc-per-node {npn}"
    if world % (tp * pp * cp):
        raise InputError(f"--tensor-model-parallel-size {tp} x --pipeline-model-parallel-size "
                         f"{pp} x --context-parallel-size {cp} does not divide the world size "
                         f"{world}")
    dp = world // (tp * pp * cp)
    stage_layers = layer_list(a, layers, pp)

    cp_algo, cp_ulysses, cp_src = "ring", 0, "Megatron: ring attention"
    if cp > 1:
        algo = a.text("--context-parallel-algo")
        if algo is None and mindspeed:
            algo, cp_src = "ulysses_cp_algo", "MindSpeed's default --context-parallel-algo " \
                "ulysses_cp_algo"
        elif algo is not None:
            cp_src = a.src("--context-parallel-algo")
        cp_algo = CP_ALGOS.get(algo or "megatron_cp_algo")
        if cp_algo is None:
            raise InputError(f"--context-parallel-algo {algo}: expected one of "
                             f"{', '.join(CP_ALGOS)}")
        if cp_algo == "hybrid":
            cp_ulysses = a.int("--ulysses-degree-in-cp", None, 2, 100000)
            if cp_ulysses is None:
                raise InputError("--context-parallel-algo hybrid_cp_algo: --ulysses-degree-in-cp "
                                 "is not given")
            if cp % cp_ulysses or cp_ulysses >= cp:
                raise InputError(f"--ulysses-degree-in-cp {cp_ulysses}: expected a divisor of "
                                 f"--context-parallel-size {cp} below it")
            cp_src += " with " + a.src("--ulysses-degree-in-cp")
    else:
        a.text("--context-parallel-algo")
        a.text("--ulysses-degree-in-cp")

    first = a.int("--decoder-first-pipeline-num-layers", None, 0, 100000)
    first_flag = "--decoder-first-pipeline-num-layers"
    if first is None and a.given("--num-layers-in-first-pipeline-stage"):
        first_flag = "--num-layers-in-first-pipeline-stage"
        first = a.int(first_flag, None, 0, 100000)
    last = a.int("--decoder-last-pipeline-num-layers", None, 0, 100000)
    last_flag = "--decoder-last-pipeline-num-layers"
    if last is None and a.given("--num-layers-in-last-pipeline-stage"):
        last_flag = "--num-layers-in-last-pipeline-stage"
        last = a.int(last_flag, None, 0, 100000)

    if stage_layers is not None and (first is not None or last is not None):
        raise InputError("--num-layer-list: given with "
                         f"{first_flag if first is not None else last_flag}")
    vpp, vpp_src = 1, "Megatron default: no interleaving"
    if a.given("--num-layers-per-virtual-pipeline-stage"):
        per = a.int("--num-layers-per-virtual-pipeline-stage", hi=100000)
        if first is not None or last is not None or stage_layers is not None:
            raise InputError("--num-layers-per-virtual-pipeline-stage: npusim-from-args does not "
                             "combine it with " + (first_flag if first is not None else
                                                   last_flag if last is not None else
                                                   "--num-layer-list"))
        if layers % pp or (layers // pp) % per:
            raise InputError(f"--num-layers-per-virtual-pipeline-stage {per}: does not divide the "
                             f"{layers} / {pp} layers of a pipeline stage")
        vpp = layers // pp // per
        vpp_src = (f"--num-layers {layers} / --pipeline-model-parallel-size {pp} / "
                   f"--num-layers-per-virtual-pipeline-stage {per}")
    elif a.given("--num-virtual-stages-per-pipeline-rank"):
        vpp = a.int("--num-virtual-stages-per-pipeline-rank", hi=100000)
        vpp_src = a.src("--num-virtual-stages-per-pipeline-rank")
    if vpp > 1 and pp == 1:
        raise InputError("--num-layers-per-virtual-pipeline-stage: interleaving needs "
                         "--pipeline-model-parallel-size > 1")
    schedule = None
    if a.given("--schedules-method"):
        schedule = a.text("--schedules-method")
        if schedule != "dualpipev":
            raise InputError(f"--schedules-method {shorten(schedule)}: npusim models dualpipev "
                             "(parallel.pp_schedule), not this schedule")
        if pp < 2:
            raise InputError("--schedules-method dualpipev: needs "
                             "--pipeline-model-parallel-size of at least 2")
        if vpp > 1 or first is not None or last is not None or stage_layers is not None:
            raise InputError("--schedules-method dualpipev: places two chunks per stage in its "
                             "own V; npusim-from-args does not combine it with virtual stages or "
                             "per-stage layer counts")
        vpp, vpp_src = 2, "--schedules-method dualpipev: two model chunks per stage, in a V"

    sp = a.given("--sequence-parallel")
    sp_src = "--sequence-parallel" if sp else "Megatron default: off"
    if sp and tp == 1:
        sp, sp_src = False, "--sequence-parallel, off with tp 1 (as Megatron turns it off)"

    zero, zero_src = 0, "Megatron default: no --use-distributed-optimizer"
    if a.given("--use-distributed-optimizer"):
        zero, zero_src = 1, "--use-distributed-optimizer"
    strategy = a.choice("--data-parallel-sharding-strategy",
                        ("no_shard", "optim", "optim_grads", "optim_grads_params"))
    if a.given("--use-custom-fsdp") or a.given("--use-megatron-fsdp"):
        zero = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3,
                None: 3}[strategy]
        zero_src = "Megatron FSDP, --data-parallel-sharding-strategy " + \
            (strategy or "optim_grads_params (its default)")
    if a.given("--use-torch-fsdp2"):
        zero, zero_src = 3, "--use-torch-fsdp2 (FSDP: parameters, gradients and optimizer sharded)"

    recompute, rc_src = "none", "Megatron default: no recomputation"
    gran = a.choice("--recompute-granularity", ("full", "selective"))
    method_flag = next((f for f in ("--recompute-method", "--activations-checkpoint-method")
                        if a.given(f)), "--recompute-method")
    method = a.choice(method_flag, ("uniform", "block"))
    nl_flag = next((f for f in ("--recompute-num-layers", "--activations-checkpoint-num-layers",
                                "--checkpoint-num-layers") if a.given(f)), "--recompute-num-layers")
    rc_layers = a.int(nl_flag, None, 1, 100000)
    if a.given("--recompute-activations"):
        recompute, rc_src = "selective", "--recompute-activations"
    if a.given("--checkpoint-activations"):
        recompute, rc_src = "full", "--checkpoint-activations (Megatron's older name of full)"
    if gran is not None:
        recompute, rc_src = gran, a.src("--recompute-granularity")
    if gran == "full" and method is None:
        raise InputError("--recompute-granularity full: Megatron needs --recompute-method uniform "
                         "or block with it")
    if recompute == "selective" and method is not None:
        raise InputError(f"{method_flag} {method}: Megatron refuses a recompute method with "
                         "selective recomputation")
    if recompute == "full" and method == "block":
        chunk = layers // (pp * vpp) if layers % (pp * vpp) == 0 else None
        if rc_layers is None:
            raise InputError(f"{method_flag} block: {nl_flag} is not given")
        if chunk is None or rc_layers < chunk:
            a.note(f"{method_flag} block {nl_flag} {rc_layers} recomputes some layers of each "
                   "stage; modelled as full recomputation of every layer")
        rc_src += f", {method_flag} block {nl_flag} {rc_layers}"
    elif recompute == "full" and method is not None:
        rc_src += f", {method_flag} {method}"

    # ---- model ----
    if a.given("--normalization"):
        norm = {"LayerNorm": "layernorm", "RMSNorm": "rmsnorm"}.get(a.text("--normalization"))
        if norm is None:
            raise InputError(f"--normalization: expected LayerNorm or RMSNorm, found "
                             f"{shorten(a.text('--normalization'))}")
        norm_src = a.src("--normalization")
    else:
        norm, norm_src = "layernorm", "Megatron default: LayerNorm"

    if a.given("--position-embedding-type"):
        t = a.text("--position-embedding-type")
        pos = {"learned_absolute": "learned", "rope": "rope", "mrope": "rope",
               "yarn": "rope"}.get(t)
        if pos is None:
            raise InputError(f"--position-embedding-type {t}: npusim models rope and "
                             "learned_absolute positions only")
        pos_src = a.src("--position-embedding-type")
    elif a.given("--use-rotary-position-embeddings"):
        pos, pos_src = "rope", "--use-rotary-position-embeddings"
    else:
        pos, pos_src = "learned", "Megatron default: learned_absolute"

    geglu = next((f for f in ("--geglu", "--gelu-tanh", "--quick-geglu") if a.given(f)), None)
    if swiglu and geglu:
        raise InputError(f"{geglu}: given with --swiglu")
    if swiglu:
        act, act_src = "swiglu", "--swiglu"
    elif geglu == "--geglu":
        act, act_src = "geglu", "--geglu"
    elif geglu == "--quick-geglu":   # Megatron: gated_linear_unit with quick_gelu (gpt-oss)
        act, act_src = "geglu", "--quick-geglu (Megatron: a gated linear unit of quick-GeLU)"
        a.note("--quick-geglu: quick-GeLU's gate costed as GeGLU's kernel (the same shapes)")
    elif geglu:   # MindSpeed: a gated MLP of the tanh-approximated GeLU (Gemma)
        act, act_src = "geglu", "--gelu-tanh (MindSpeed: gated_linear_unit with GeLU's tanh form)"
        a.note("--gelu-tanh: the tanh form is costed as GeGLU's kernel (MindSpeed runs it as "
               "eager PyTorch element-wise ops)")
    elif a.given("--squared-relu"):
        act, act_src = "gelu", "--squared-relu, as the two-matrix gelu MLP (same shapes)"
        a.note("--squared-relu is modelled as the gelu MLP (same shapes and FLOPs of its matmuls)")
    else:
        act, act_src = "gelu", "Megatron default: GeLU"

    untie = a.given("--untie-embeddings-and-output-weights")
    tied_src = "--untie-embeddings-and-output-weights" if untie else \
        "Megatron default: tied (no --untie-embeddings-and-output-weights)"

    att = a.float("--attention-dropout", 0.1, 0.0, 0.99)
    hid = a.float("--hidden-dropout", 0.1, 0.0, 0.99)
    dropout = max(att, hid)
    drop_src = " and ".join(a.src(f) if f in a.flags else f"{f} 0.1 (Megatron default)"
                            for f in ("--attention-dropout", "--hidden-dropout"))
    if att != hid:
        a.note(f"--attention-dropout {att:g} and --hidden-dropout {hid:g} differ; npusim has one "
               f"dropout: {dropout:g}")

    vocab, vocab_src = vocabulary(a, tp, opts)

    layers_src = a.src("--num-layers")
    moe = mixture_of_experts(a, layers, ffn, tp, ep, dp, cp, opts.sources)
    etp = moe.pop("_etp") if moe is not None else (tp, "")
    if a.given("--noop-layers"):
        noops = noop_layers(a, layers, pp, vpp, stage_layers, first, last)
        layers -= len(noops)
        layers_src += f" less the {len(noops)} of {a.src('--noop-layers')}"
        if vpp > 1:   # Megatron's virtual stage v holds layers v x per .. (v + 1) x per - 1
            per = (layers + len(noops)) // (pp * vpp)
            stage_layers = [per - sum(1 for k in noops if v * per <= k < (v + 1) * per)
                            for v in range(pp * vpp)]
        else:
            stage_layers = [c - sum(1 for k in noops if start <= k < start + c)
                            for start, c in zip(stage_starts(stage_layers, layers + len(noops), pp),
                                            stage_layers or [(layers + len(noops)) // pp] * pp)]
        # the virtual stages of stage st: Megatron's c x pp + st, DualPipeV's V
        chunks = [[st, 2 * pp - 1 - st] if schedule else [c * pp + st for c in range(vpp)]
                  for st in range(pp)]
        if min(sum(stage_layers[v] for v in vs) for vs in chunks) < 1:
            raise InputError(f"{a.src('--noop-layers')}: leaves a pipeline stage with no layer")
        if len(set(stage_layers)) == 1 and not a.given("--num-layer-list"):
            stage_layers = None
        if moe is not None and moe.get("dense_layers"):
            k = moe["dense_layers"]
            moe["dense_layers"] = k - sum(1 for n in noops if n < k)
    model.set("name", opts.model_name, opts.model_name_source)
    model.set("layers", layers, layers_src)
    model.set("hidden", hidden, a.src("--hidden-size"))
    model.set("heads", heads, a.src("--num-attention-heads"))
    model.set("kv_heads", kv, kv_src)
    if head_dim:
        model.set("head_dim", head_dim, a.src("--kv-channels") +
                  " (not --hidden-size / --num-attention-heads)")
    model.set("ffn_hidden", ffn, ffn_src)
    model.set("vocab", vocab, vocab_src)
    model.set("seq_len", seq, a.src(seq_flag))
    model.set("activation", act, act_src)
    model.set("norm", norm, norm_src)
    model.set("position_embedding", pos, pos_src)
    model.set("tied_embeddings", not untie, tied_src)
    model.set("dropout", dropout, drop_src)
    if moe is not None:
        model.d["moe"] = moe
    mla = latent_attention(a, opts.sources)
    if mla is not None:
        model.d["mla"] = mla
    if window is not None:
        model.set("sliding_window_tokens", window[0], window[2])
        if window[1]:
            model.set("full_attention_every", window[1], window[2])
    mtp = a.int("--mtp-num-layers", 0, 0, 100)
    if mtp:
        model.set("mtp_layers", mtp, a.src("--mtp-num-layers"))

    # ---- plan ----
    par.set("dp", dp, f"world size {world} ({world_src}) / (tp {tp} x pp {pp} x cp {cp})")
    par.set("tp", tp, flag_or(a, "--tensor-model-parallel-size", "Megatron default: 1"))
    par.set("sequence_parallel", sp, sp_src)
    par.set("pp", pp, flag_or(a, "--pipeline-model-parallel-size", "Megatron default: 1"))
    par.set("vpp", vpp, vpp_src)
    if schedule:
        par.set("pp_schedule", schedule, a.src("--schedules-method"))
    if first is not None:
        par.set("first_stage_layers", first, a.src(first_flag))
    if last is not None:
        par.set("last_stage_layers", last, a.src(last_flag))
    if stage_layers is not None:
        par.set("stage_layers", stage_layers, " with ".join(
            a.src(f) for f in ("--num-layer-list", "--noop-layers") if a.given(f)))
    par.set("cp", cp, flag_or(a, "--context-parallel-size", "Megatron default: 1"))
    if cp_algo != "ring":
        par.set("cp_algo", cp_algo, cp_src)
        if cp_ulysses:
            par.set("cp_ulysses", cp_ulysses, cp_src)
    par.set("ep", ep, flag_or(a, "--expert-model-parallel-size", "Megatron default: 1"))
    if etp[0] != tp:
        par.set("etp", etp[0], etp[1])
    par.set("zero", zero, zero_src)
    par.set("recompute", recompute, rc_src)
    if a.given("--use-tp-pp-dp-mapping"):
        if cp > 1 or ep > 1:
            raise InputError("--use-tp-pp-dp-mapping: Megatron refuses it with context or "
                             "expert parallelism")
        par.set("order", "tp-cp-pp-dp", "--use-tp-pp-dp-mapping")

    # ---- training ----
    mb = a.int("--micro-batch-size", hi=10_000_000)
    if a.given("--global-batch-size"):
        gb, gb_src = a.int("--global-batch-size", hi=1_000_000_000), a.src("--global-batch-size")
    else:
        gb, gb_src = mb * dp, "Megatron default: --micro-batch-size x dp"
    if gb % (mb * dp):
        raise InputError(f"--global-batch-size {gb}: not a multiple of --micro-batch-size {mb} "
                         f"x dp {dp}")
    if a.given("--bf16") and a.given("--fp16"):
        raise InputError("--fp16: given with --bf16")
    if a.given("--bf16"):
        prec, prec_src = "bf16", "--bf16"
    elif a.given("--fp16"):
        prec, prec_src = "fp16", "--fp16"
    else:
        raise InputError("--bf16: neither --bf16 nor --fp16 is given, and npusim does not model "
                         "fp32 training")
    if a.given("--fp8-format"):
        a.choice("--fp8-format", ("e4m3", "hybrid"))
        prec, prec_src = "fp8", a.src("--fp8-format")
    opt = a.choice("--optimizer", ("adam", "sgd", "muon", "dist_muon"), "adam")
    if opt != "adam":
        raise InputError(f"--optimizer {opt}: npusim models adam only")

    if a.given("--use-flash-attn"):
        flash, flash_src = True, "--use-flash-attn"
    elif a.given("--attention-backend"):
        backend = a.choice("--attention-backend", ("flash", "fused", "unfused", "local", "auto"))
        flash, flash_src = backend in ("flash", "fused", "auto"), a.src("--attention-backend")
    else:
        flash, flash_src = False, "Megatron default: no --use-flash-attn"
    if cp > 1 and not flash:
        if a.given("--attention-backend"):
            raise InputError(f"{a.src('--attention-backend')}: context parallelism needs a fused "
                             "attention kernel")
        flash, flash_src = True, "context parallelism: ring attention runs a fused kernel"

    ogr = a.given("--overlap-grad-reduce")
    if prec == "fp16":
        fp32_grads = a.given("--accumulate-allreduce-grads-in-fp32")
        g32_src = "--accumulate-allreduce-grads-in-fp32" if fp32_grads else \
            "Megatron default with --fp16: gradients in fp16"
    else:
        fp32_grads = not a.given("--grad-reduce-in-bf16")
        g32_src = "--grad-reduce-in-bf16" if not fp32_grads else \
            "Megatron with --bf16: gradients accumulated and reduced in fp32"
    opg = a.given("--overlap-param-gather")
    if opg and zero not in (1, 2):
        raise InputError("--overlap-param-gather: needs --use-distributed-optimizer")
    if opg and not ogr:
        raise InputError("--overlap-param-gather: needs --overlap-grad-reduce (as in Megatron)")
    if a.given("--no-overlap-p2p-communication"):
        op2p, op2p_src = False, "--no-overlap-p2p-communication"
    elif schedule:
        op2p, op2p_src = False, ("--schedules-method dualpipev: dualpipev.py waits for each "
                                 "batch of sends and receives before the next compute")
        a.given("--overlap-p2p-communication")
    elif vpp > 1:
        op2p, op2p_src = True, ("--overlap-p2p-communication" if a.given(
            "--overlap-p2p-communication") else "Megatron default with interleaving: overlapped")
    else:
        op2p, op2p_src = False, "Megatron: not overlapped without interleaving"
        a.given("--overlap-p2p-communication")

    tr.set("micro_batch", mb, a.src("--micro-batch-size"))
    tr.set("global_batch", gb, gb_src)
    tr.set("precision", prec, prec_src)
    tr.set("optimizer", "adam", flag_or(a, "--optimizer", "Megatron default: adam"))
    tr.set("flash_attention", flash, flash_src)
    tr.set("overlap_grad_reduce", ogr, "--overlap-grad-reduce" if ogr else
           "Megatron default: no --overlap-grad-reduce")
    if ogr:
        if a.given("--ddp-bucket-size"):
            elems = a.int("--ddp-bucket-size", hi=1 << 50)
            b_src = a.src("--ddp-bucket-size") + " elements"
        else:
            elems = max(MEGATRON_BUCKET_ELEMENTS, 1_000_000 * dp)
            b_src = "Megatron default: max(40M, 1M x dp) elements"
        bucket = elems * (4 if fp32_grads else 2) / MIB
        tr.set("grad_bucket_MiB", bucket, f"{b_src} x {4 if fp32_grads else 2} bytes")
    elif a.given("--ddp-bucket-size"):
        a.text("--ddp-bucket-size")
    tr.set("grad_reduce_in_fp32", fp32_grads, g32_src)
    tr.set("overlap_param_gather", opg, "--overlap-param-gather" if opg else
           "Megatron default: no --overlap-param-gather")
    tr.set("overlap_p2p_comm", op2p, op2p_src)
    fuse = next((f for f in ("--tp-comm-overlap", "--use-mc2") if a.given(f)), None)
    if fuse is not None and tp > 1:
        tr.set("overlap_tp_comm", True, a.src(fuse))
    else:
        tr.set("overlap_tp_comm", False, f"{fuse}: nothing to fuse with tp 1" if fuse else
               "Megatron default: no --tp-comm-overlap")
    a2a = next((f for f in ("--overlap-moe-expert-parallel-comm", "--moe-fb-overlap")
                if a.given(f)), None)
    if a2a is not None and model.d.get("moe") is None:
        a.note(f"{a2a}: no experts to overlap; not read")
    elif a2a is not None and pp > 1 and vpp == 1:
        a.note(f"{a2a}: the merged 1F1B is modelled on the interleaved schedule only "
               f"(pp {pp}, vpp 1: taken as plain 1F1B)")
    elif a2a is not None:
        tr.set("overlap_moe_a2a", True, a.src(a2a))

    name = opts.name or f"{opts.model_name}-{world}npu"
    if len(name) > MAX_NAME_CHARS:
        name = name[:MAX_NAME_CHARS]
    plan = f"TP{tp} PP{pp}" + (f" VPP{vpp}" if vpp > 1 else "") + \
        (f" CP{cp}" if cp > 1 else "") + (f" EP{ep}" if ep > 1 else "") + f" DP{dp}"
    desc = (f"{opts.model_name} on {world} NPUs, {plan}, converted by npusim-from-args from "
            f"{opts.input_name}")
    return {"name": name, "description": one_line(desc)[:1000],
            "model": model.d, "parallel": par.d, "training": tr.d}


def layer_list(a, layers, pp):
    """parallel.stage_layers from MindSpeed's --num-layer-list (layers per
    pipeline stage, comma-separated), or None."""
    if not a.given("--num-layer-list"):
        return None
    t = a.text("--num-layer-list")
    parts = t.split(",")
    if not all(re.fullmatch(r"\s*\d{1,6}\s*", p) for p in parts):
        raise InputError(f"--num-layer-list: expected layer counts separated by commas, found "
                         f"{shorten(t)}")
    counts = [int(p) for p in parts]
    if len(counts) != pp:
        raise InputError(f"--num-layer-list: expected {pp} counts (one per pipeline stage), "
                         f"found {len(counts)}")
    if sum(counts) != layers:
        raise InputError(f"--num-layer-list: the counts add up to {sum(counts)}, not "
                         f"--num-layers {layers}")
    if min(counts) < 1:
        raise InputError("--num-layer-list: a pipeline stage with no layer")
    return counts


def noop_layers(a, layers, pp, vpp, stage_layers, first, last):
    """The layer numbers of MindSpeed's --noop-layers (layers that pass
    their input through: no compute, no weights), checked; the stages then
    hold fewer real layers, which parallel.stage_layers says (with
    interleaving, one count per virtual stage)."""
    t = a.text("--noop-layers")
    if not re.fullmatch(r"\d{1,6}(,\d{1,6})*", t.replace(" ", "")):
        raise InputError(f"--noop-layers: expected layer numbers separated by commas, found "
                         f"{shorten(t)}")
    noops = sorted({int(v) for v in t.replace(" ", "").split(",")})
    if noops[-1] >= layers:
        raise InputError(f"--noop-layers: layer {noops[-1]} is past --num-layers {layers}")
    if vpp > 1 and layers % (pp * vpp):
        raise InputError(f"--noop-layers {t}: --num-layers {layers} is not a multiple of "
                         f"pp {pp} x vpp {vpp}")
    if first is not None or last is not None:
        raise InputError(f"--noop-layers {t}: npusim-from-args does not combine it with "
                         "--decoder-first/last-pipeline-num-layers")
    if stage_layers is None and layers % pp:
        raise InputError(f"--noop-layers {t}: --num-layers {layers} is not a multiple of "
                         f"--pipeline-model-parallel-size {pp}")
    return noops


def stage_starts(stage_layers, layers, pp):
    """The first layer of each pipeline stage: by --num-layer-list, or an even split."""
    counts = stage_layers or [layers // pp] * pp
    return [sum(counts[:k]) for k in range(len(counts))]


def vocabulary(a, tp, opts):
    """model.vocab: MindSpeed's --padded-vocab-size as given, or the
    tokenizer's size padded as Megatron pads it (to a multiple of
    --make-vocab-size-divisible-by x tp)."""
    if a.given("--padded-vocab-size"):
        return a.int("--padded-vocab-size", hi=100_000_000), a.src("--padded-vocab-size")
    tok = a.text("--tokenizer-type")
    if opts.tokenizer_vocab is not None:
        base, base_src = opts.tokenizer_vocab, f"--tokenizer-vocab {opts.tokenizer_vocab} " \
            "(npusim-from-args)"
    elif tok == "GPT2BPETokenizer":
        base, base_src = GPT2_BPE_VOCAB, f"--tokenizer-type GPT2BPETokenizer ({GPT2_BPE_VOCAB})"
    elif tok == "NullTokenizer" and a.given("--vocab-size"):
        base = a.int("--vocab-size", hi=100_000_000) + 1
        base_src = f"{a.src('--vocab-size')} + 1 (NullTokenizer's end-of-document token)"
    elif tok in (None, "TikTokenizer") and a.given("--vocab-size"):
        base, base_src = a.int("--vocab-size", hi=100_000_000), a.src("--vocab-size")
    elif known_vocab(a, opts) is not None:
        base, base_src = known_vocab(a, opts)
    else:
        what = f"--tokenizer-type {tok} reads it from a file" if tok else \
            "no --vocab-size, --padded-vocab-size or --tokenizer-type GPT2BPETokenizer"
        raise InputError(f"model.vocab: the arguments do not give the vocabulary ({what}); "
                         "give --tokenizer-vocab N")
    div = a.int("--make-vocab-size-divisible-by", 128, hi=100_000_000)
    multiple = div * tp
    padded = -(-base // multiple) * multiple
    src = f"{base_src} padded to a multiple of " + \
        (a.src("--make-vocab-size-divisible-by") if "--make-vocab-size-divisible-by" in a.flags
         else "--make-vocab-size-divisible-by 128 (Megatron default)") + f" x tp {tp}"
    if padded > 100_000_000:
        raise InputError(f"--make-vocab-size-divisible-by {div}: pads the vocabulary to {padded}")
    return padded, src


def known_vocab(a, opts):
    """(entries, source) of a tokenizer file the model family fixes, or None."""
    paths = [v.text for f in ("--tokenizer-model", "--tokenizer-name-or-path", "--vocab-file")
             if f in a.flags for v in a.flags[f].values if not v.unknown]
    for where, text in [("the model's name", opts.model_name)] + \
            [("the tokenizer's path", p) for p in paths]:
        for pattern, entries, whose in KNOWN_VOCABS:
            if re.search(pattern, text.lower()):
                return entries, (f"{whose} ({entries}), the family named by {where} "
                                 f"{shorten(text)}")
    return None


def moe_layer_freq(a, layers, dense):
    """(dense_layers, source): the layers before the first MoE layer, from
    --first-k-dense-replace and --moe-layer-freq. Megatron's frequency N puts
    experts in layer i when i % N == 0 (N = 1, or MindSpeed's -1: every
    layer); a pattern "[0]*k+[1]*m" in layers k on. Experts in a pattern
    with dense layers after the first MoE one are refused."""
    src = a.src("--first-k-dense-replace") if dense else ""
    t = a.text("--moe-layer-freq")
    if t is None:
        return dense, src
    t = t.strip()
    if re.fullmatch(r"-?\d+", t):
        if int(t) not in (1, -1):
            raise InputError(f"--moe-layer-freq {t}: experts in every {t}th layer only are not "
                             "modelled by npusim (experts in every layer after the first k)")
        return dense, src
    pattern = layer_pattern(t)
    if pattern is None or len(pattern) != layers:
        raise InputError(f"--moe-layer-freq {shorten(t)}: expected an integer or a pattern such "
                         f"as [0]*3+[1]*{max(layers - 3, 1)} of {layers} entries")
    k = pattern.index(1) if 1 in pattern else layers
    if any(v != 1 for v in pattern[k:]):
        raise InputError(f"--moe-layer-freq {shorten(t)}: dense layers after the first MoE layer "
                         "are not modelled by npusim (experts in every layer after the first k)")
    k = max(k, dense)
    return k, (src + ", " if src else "") + a.src("--moe-layer-freq")


def layer_pattern(text):
    """Megatron's --moe-layer-freq pattern ("[1,0,1]", "[0]*3+[1]*58") as a
    list of 0/1, or None: read as a sum of lists times counts, never run."""
    out = []
    for term in text.replace(" ", "").strip("()").split("+"):
        m = re.fullmatch(r"\[([01](?:,[01])*)\](?:\*(\d{1,6}))?", term)
        if not m:
            return None
        out += [int(v) for v in m.group(1).split(",")] * int(m.group(2) or 1)
        if len(out) > 1_000_000:
            return None
    return out


def mixture_of_experts(a, layers, ffn, tp, ep, dp, cp, sources):
    if not a.given("--num-experts"):
        if ep > 1:
            raise InputError(f"--expert-model-parallel-size {ep}: no --num-experts")
        return None
    experts = a.int("--num-experts", hi=1_000_000)
    out = Out(sources)
    topk = a.int("--moe-router-topk", 2, hi=1_000_000)
    if topk > experts:
        raise InputError(f"--moe-router-topk {topk}: more than --num-experts {experts}")
    if experts % ep:
        raise InputError(f"--expert-model-parallel-size {ep}: does not divide --num-experts "
                         f"{experts}")
    etp = a.int("--expert-tensor-parallel-size", tp, hi=100000)
    etp_src = flag_or(a, "--expert-tensor-parallel-size", "Megatron default: tp")
    if a.given("--moe-tp-extend-ep"):   # MindSpeed: EP extended over the TP ranks
        if a.given("--expert-tensor-parallel-size") and etp != 1:
            raise InputError(f"--moe-tp-extend-ep: given with {a.src('--expert-tensor-parallel-size')}")
        etp, etp_src = 1, "--moe-tp-extend-ep (experts whole, EP over the TP ranks)"
    if (tp * dp * cp) % (ep * etp):
        raise InputError(f"--expert-model-parallel-size {ep} x expert tp {etp} does not "
                         f"divide tp {tp} x dp {dp} x cp {cp} (Megatron refuses it too; a "
                         "world size set outside the script? give --world-size)")
    if etp == tp and (dp * cp) % ep:
        raise InputError(f"--expert-model-parallel-size {ep}: does not divide dp {dp} x cp {cp} "
                         f"with experts split over tp {tp} (Megatron refuses it too)")
    eflag = next((f for f in ("--moe-ffn-hidden-size", "--moe-intermediate-size") if a.given(f)),
                 None)
    if eflag:
        effn, effn_src = a.int(eflag, hi=100_000_000), a.src(eflag)
    else:
        effn, effn_src = ffn, "Megatron default: --ffn-hidden-size"
    shared, sh_src = 0, "Megatron default: none"
    if a.given("--moe-shared-expert-intermediate-size"):
        size = a.int("--moe-shared-expert-intermediate-size", hi=100_000_000)
        if size % effn:
            raise InputError(f"--moe-shared-expert-intermediate-size {size}: not a multiple of "
                             f"the experts' {effn}")
        shared, sh_src = size // effn, a.src("--moe-shared-expert-intermediate-size") + \
            f" / {effn}"
    elif a.given("--n-shared-experts"):
        shared = a.int("--n-shared-experts", 0, 0, 1_000_000)
        sh_src = a.src("--n-shared-experts")
    t = a.text("--expert-interval")
    if t is not None and t.strip() != "1":
        raise InputError(f"--expert-interval {t}: experts in only some layers (other than the "
                         "first k) are not modelled by npusim")
    # MindSpeed's -1 makes no layer dense (layer i >= -1 is always MoE)
    dense = a.int("--first-k-dense-replace", 0, -1, 100000)
    dense, dense_src = moe_layer_freq(a, layers, max(dense, 0))
    if a.given("--moe-expert-capacity-factor"):
        cap = a.float("--moe-expert-capacity-factor", None, 0.01, 1000.0)
        cap_src = a.src("--moe-expert-capacity-factor")
    else:
        cap, cap_src = 1.0, "Megatron default: dropless, modelled as an even split (1)"
    out.set("experts", experts, a.src("--num-experts"))
    out.set("top_k", topk, flag_or(a, "--moe-router-topk", "Megatron default: 2"))
    out.set("expert_ffn_hidden", effn, effn_src)
    out.set("capacity_factor", cap, cap_src)
    out.set("shared_experts", shared, sh_src)
    if dense:
        out.set("dense_layers", dense, dense_src)
    zero = a.int("--num-zero-experts", 0, 0, 1_000_000)
    if zero:
        out.set("zero_experts", zero, a.src("--num-zero-experts"))
    if spec_module(a) == "longcat_spec":
        out.set("shortcut", True, a.src("--spec") + " (LongCat-Flash's shortcut-connected MoE "
                "layers: two attention blocks and dense MLPs beside the MoE block)")
    out.d["_etp"] = (etp, etp_src)   # the plan's, taken out by convert()
    return out.d
