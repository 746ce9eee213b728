"""fsdp2_args.py - MindSpeed-LLM's FSDP2 launches for npusim-from-args.

`torchrun ... train_fsdp2.py CONFIG.yaml [--section.key value ...]` reads its
plan from a YAML file (with the command's --section.key overrides) and its
model from a Hugging Face checkpoint's config.json (model.model_name_or_path).
This module turns the three into the Megatron argument list npusim-from-args
already converts (megatron_args.convert), and says where each value came from
so the workload's _source strings name the YAML key or config.json field, not
a Megatron flag the script never had:

  model     config.json (--hf-config FILE, or config.json in the checkpoint
            directory when it exists, or the published one of a model named
            by the checkpoint directory in hf_configs.json, which holds
            the Qwen3 models MindSpeed's FSDP2 examples train, each as
            MindSpeed's own Megatron launch of it states it): llama, mistral,
            qwen2, qwen3 (dense); mixtral, qwen2_moe, qwen3_moe (MoE); any
            other model_type is refused by name
  plan      FSDP over parallel.fsdp_size ranks (parameters, gradients and
            optimizer sharded: ZeRO-3; hybrid sharding below the data-parallel
            size), parallel.ep_size, parallel.cp_size (Ulysses or ring); tensor and
            pipeline parallelism 1, as the FSDP2 trainer runs
  batch     training.per_device_train_batch_size x gradient_accumulation_steps
            x the data-parallel size; data.cutoff_len the sequence
  recompute parallel.recompute: every layer's activations recomputed

The YAML is read with PyYAML (Debian's python3-yaml), imported only here.
Not modelled: ep_fsdp_size (the experts' own shard group: npusim shards the
experts' optimizer over their expert-data-parallel replicas), the loss-chunking
and fusion options (noted as ignored by the converter's own rules)."""

import json
import os

from megatron_shell import FSDP2_PROGRAM as PROGRAM, Field, InputError, shorten

MAX_CONFIG_BYTES = 1 << 20
PUBLISHED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_configs.json")

# Hugging Face model types and what they are in Megatron's flags.
DENSE = {"llama", "mistral", "qwen2", "qwen3"}
MOE = {"mixtral", "qwen2_moe", "qwen3_moe"}


def is_fsdp2(fields):
    """Whether the command runs MindSpeed's FSDP2 trainer."""
    return any(os.path.basename(f.text) == PROGRAM for f in fields)


def _read_text(path, what):
    """A config file's text: a regular file (a FIFO would block), UTF-8, at
    most MAX_CONFIG_BYTES."""
    if not os.path.isfile(path):
        raise InputError(f"{what}: expected a regular file, found "
                         f"{'none' if not os.path.exists(path) else 'something else'}")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise InputError(f"{what}: cannot read it: {e.strerror or e}")
    except ValueError:
        raise InputError(f"{what}: expected UTF-8 text, found other bytes")
    if len(text) > MAX_CONFIG_BYTES:
        raise InputError(f"{what}: expected at most 1 MiB, found more")
    return text


def _load_yaml(path):
    try:
        import yaml
    except ImportError:
        raise InputError(f"{path}: reading {PROGRAM}'s YAML config needs PyYAML "
                         "(apt-get install python3-yaml)")
    text = _read_text(path, path)
    try:
        # aliases could expand a small file without bound (nested *refs): refused
        if any(isinstance(ev, yaml.AliasEvent) for ev in yaml.parse(text)):
            raise InputError(f"{path}: expected a YAML config without aliases (*name), found one")
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InputError(f"{path}: expected YAML, found an error: {shorten(str(e), 120)}")
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping of sections (model, data, parallel, "
                         "training), found something else")
    return data


def _find(path, script):
    """The YAML the command names: as given, else under one of the script's
    directories (MindSpeed's scripts run from the repository's root)."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    d = os.path.dirname(os.path.abspath(script)) if script and script != "-" else os.getcwd()
    while True:
        cand = os.path.join(d, path)
        if os.path.exists(cand):
            return cand
        up = os.path.dirname(d)
        if up == d:
            raise InputError(f"{PROGRAM} {path}: the YAML config is not found (as given, nor "
                             "under the script's directories)")
        d = up


def _override(cfg, name, value):
    """--section.key value onto the config, the value read as YAML would."""
    import yaml
    keys = name[2:].split(".")
    node = cfg
    for k in keys[:-1]:
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise InputError(f"{name}: {k} is not a section of the YAML config")
    try:
        node[keys[-1]] = yaml.safe_load(value)
    except yaml.YAMLError:
        node[keys[-1]] = value


def _get(cfg, dotted, default=None):
    node = cfg
    for k in dotted.split("."):
        if not isinstance(node, dict) or k not in node:
            return default
        node = node[k]
    return node


def _count(value, what, lo=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise InputError(f"{what}: expected an integer of at least {lo}, found {shorten(value)}")
    return value


def _hf_config(path):
    text = _read_text(path, f"--hf-config {path}")
    try:
        hf = json.loads(text)
    except ValueError as e:
        raise InputError(f"--hf-config {path}: expected JSON, found an error: {shorten(str(e))}")
    if not isinstance(hf, dict):
        raise InputError(f"--hf-config {path}: expected a JSON object (a config.json)")
    return hf


def _published(ckpt):
    """(name, config) of the checkpoint directory's model in hf_configs.json, or None."""
    name = os.path.basename(os.path.normpath(str(ckpt))) if ckpt else ""
    with open(PUBLISHED, encoding="utf-8") as f:
        table = json.load(f)
    return next(((k, v) for k, v in table.items() if not k.startswith("_") and
                  name.lower() in [n.lower() for n in [k] + v.get("_aliases", [])]), None)


def _model_flags(hf, path, label="config.json"):
    """Megatron flags of the HF model, each with the field of `label` it came from."""
    kind = hf.get("model_type")
    if kind not in DENSE | MOE:
        raise InputError(f"{path}: model_type {shorten(kind)} is not one npusim-from-args maps "
                         f"({', '.join(sorted(DENSE | MOE))})")
    flags = []

    def need(key, flag):
        v = _count(hf.get(key), f"{path}: {key}")
        flags.append((flag, str(v), f"{label} {key}"))
        return v

    need("num_hidden_layers", "--num-layers")
    hidden = need("hidden_size", "--hidden-size")
    heads = need("num_attention_heads", "--num-attention-heads")
    kv = hf.get("num_key_value_heads", heads)
    if kv != heads:
        flags.append(("--group-query-attention", None, f"{label} num_key_value_heads"))
        need("num_key_value_heads", "--num-query-groups")
    if "head_dim" in hf and hf["head_dim"] is not None and hf["head_dim"] != hidden // heads:
        need("head_dim", "--kv-channels")
    need("vocab_size", "--padded-vocab-size")
    if hf.get("hidden_act", "silu") != "silu":
        raise InputError(f"{path}: hidden_act {shorten(hf.get('hidden_act'))}: expected silu "
                         "(SwiGLU)")
    for flag, text in (("--swiglu", f"{label} hidden_act silu"),
                       ("--normalization", f"{label}: RMSNorm"),
                       ("--position-embedding-type", f"{label}: rotary positions"),
                       ("--disable-bias-linear", f"{label} model_type {kind}: no biases")):
        flags.append((flag, {"--normalization": "RMSNorm",
                             "--position-embedding-type": "rope"}.get(flag), text))
    drop = hf.get("attention_dropout", 0.0)
    flags.append(("--attention-dropout", str(drop), f"{label} attention_dropout {drop}"))
    flags.append(("--hidden-dropout", "0", "no hidden dropout (Hugging Face decoders have none)"))
    if not hf.get("tie_word_embeddings", False):
        flags.append(("--untie-embeddings-and-output-weights", None,
                      f"{label} tie_word_embeddings false"))
    if kind in DENSE:
        need("intermediate_size", "--ffn-hidden-size")
        return flags
    experts = "num_local_experts" if kind == "mixtral" else "num_experts"
    need(experts, "--num-experts")
    need("num_experts_per_tok", "--moe-router-topk")
    need("intermediate_size" if kind == "mixtral" else "moe_intermediate_size",
         "--moe-ffn-hidden-size")
    if kind == "qwen2_moe" and hf.get("shared_expert_intermediate_size"):
        need("shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size")
    need("intermediate_size", "--ffn-hidden-size")
    return flags


def fsdp2_fields(fields, script, hf_config):
    """The Megatron argument list of an FSDP2 command, and {flag: origin} for
    the _source strings. fields: the command's expanded words."""
    k = next(i for i, f in enumerate(fields) if os.path.basename(f.text) == PROGRAM)
    launcher, rest = fields[:k], fields[k + 1:]
    if not rest or rest[0].text.startswith("--"):
        raise InputError(f"{PROGRAM}: expected its YAML config first, found "
                         f"{shorten(rest[0].shown) if rest else 'nothing'}")
    if rest[0].unknown:
        raise InputError(f"{PROGRAM} {shorten(rest[0].shown)}: {rest[0].unknown}")
    yaml_path = _find(rest[0].text, script)
    cfg = _load_yaml(yaml_path)
    yname = os.path.basename(yaml_path)
    j = 1
    while j < len(rest):
        name = rest[j].text
        if not name.startswith("--") or "." not in name:
            raise InputError(f"{PROGRAM}: expected --section.key overrides after the YAML, "
                             f"found {shorten(rest[j].shown)}")
        if j + 1 >= len(rest) or rest[j + 1].text.startswith("--"):   # a switch: true
            _override(cfg, name, "true")
            j += 1
            continue
        if rest[j + 1].unknown and name in ("--parallel.fsdp_size", "--parallel.ep_size",
                                            "--parallel.cp_size", "--data.cutoff_len",
                                            "--training.per_device_train_batch_size",
                                            "--training.gradient_accumulation_steps",
                                            "--model.model_name_or_path"):
            raise InputError(f"{name} {shorten(rest[j + 1].shown)}: {rest[j + 1].unknown}")
        _override(cfg, name, rest[j + 1].text)
        j += 2
    hf, label = None, "config.json"
    if hf_config is None:
        ckpt = _get(cfg, "model.model_name_or_path")
        cand = os.path.join(str(ckpt), "config.json") if ckpt else None
        published = _published(ckpt) if cand is None or not os.path.isfile(cand) else None
        if published:
            name, hf = published
            hf_config = f"{shorten(ckpt)} ({name}, hf_configs.json)"
            label = f"{name}'s published config.json (as MindSpeed-LLM's {hf['_source']} states it)"
        elif cand is None or not os.path.isfile(cand):
            raise InputError(f"{PROGRAM} trains a model read from the Hugging Face checkpoint "
                             f"{shorten(ckpt)} (its config.json is not here, nor a published "
                             "one of that name in hf_configs.json); give --hf-config FILE")
        else:
            hf_config = cand
    if hf is None:
        hf = _hf_config(hf_config)
    out, origin = [], {}

    def put(flag, value, where):
        out.append(Field(flag))
        if value is not None:
            out.append(Field(value))
        origin[flag + (" " + value if value is not None else "")] = where

    for flag, value, where in _model_flags(hf, hf_config, label):
        put(flag, value, where)
    seq = _count(_get(cfg, "data.cutoff_len"), f"{yname}: data.cutoff_len")
    put("--seq-length", str(seq), f"{yname} data.cutoff_len {seq}")
    put("--max-position-embeddings", str(seq), f"{yname} data.cutoff_len {seq}")
    mbs = _count(_get(cfg, "training.per_device_train_batch_size", 1),
                 f"{yname}: training.per_device_train_batch_size")
    accum = _count(_get(cfg, "training.gradient_accumulation_steps", 1),
                   f"{yname}: training.gradient_accumulation_steps")
    put("--micro-batch-size", str(mbs), f"{yname} training.per_device_train_batch_size {mbs}")
    cp = _count(_get(cfg, "parallel.cp_size", 1), f"{yname}: parallel.cp_size")
    if cp > 1:
        put("--context-parallel-size", str(cp), f"{yname} parallel.cp_size {cp}")
        cp_type = _get(cfg, "parallel.cp_type", "ulysses")
        algo = {"ulysses": "ulysses_cp_algo", "ring": "megatron_cp_algo"}.get(cp_type)
        if algo is None:
            raise InputError(f"{yname}: parallel.cp_type {shorten(cp_type)}: expected ulysses "
                             "or ring")
        put("--context-parallel-algo", algo, f"{yname} parallel.cp_type {cp_type}")
    ep = _count(_get(cfg, "parallel.ep_size", 1), f"{yname}: parallel.ep_size")
    if ep > 1:
        put("--expert-model-parallel-size", str(ep), f"{yname} parallel.ep_size {ep}")
    put("--use-torch-fsdp2", None, f"{PROGRAM}")
    for flag in ("--tensor-model-parallel-size", "--pipeline-model-parallel-size"):
        put(flag, "1", f"{PROGRAM}: FSDP2, no tensor or pipeline parallelism")
    if _get(cfg, "parallel.recompute", False) is True:
        put("--recompute-granularity", "full", f"{yname} parallel.recompute true")
        put("--recompute-method", "uniform", "every layer")
        put("--recompute-num-layers", "1", "every layer")
    put("--bf16", None, f"{PROGRAM}: bf16 (MindSpeed's FSDP2 trainer)")
    if _get(cfg, "optimization.use_flash_attn", False) is True:
        put("--use-flash-attn", None, f"{yname} optimization.use_flash_attn true")
    plan = {"fsdp_size": _get(cfg, "parallel.fsdp_size"), "accum": accum, "mbs": mbs,
            "yaml": yname}
    return launcher + [Field("pretrain_gpt.py")] + out, origin, plan


def finish(workload, origin, plan):
    """The converted workload with FSDP2's global batch and shard group, and
    every _source string naming the YAML key or config.json field."""
    par, tr = workload["parallel"], workload["training"]
    dp = par["dp"]
    tr["global_batch"] = plan["mbs"] * plan["accum"] * dp
    if "global_batch_source" in tr:
        tr["global_batch_source"] = (f"{plan['yaml']} per_device_train_batch_size {plan['mbs']} "
                                     f"x gradient_accumulation_steps {plan['accum']} x dp {dp}")
    fsdp = plan["fsdp_size"]
    if fsdp is not None:
        fsdp = _count(fsdp, f"{plan['yaml']}: parallel.fsdp_size")
        replicas = dp * par.get("cp", 1)
        if replicas % fsdp:
            raise InputError(f"{plan['yaml']}: parallel.fsdp_size {fsdp}: expected a divisor of "
                             f"the data-parallel ranks ({replicas})")
        if fsdp < replicas:
            par["zero_shard_size"] = fsdp
            if "zero_source" in par:
                par["zero_shard_size_source"] = f"{plan['yaml']} parallel.fsdp_size {fsdp} " \
                    "(hybrid sharding)"

    def rewrite(node):
        if isinstance(node, dict):
            for key, v in node.items():
                if key.endswith("_source") and isinstance(v, str):
                    for flag in sorted(origin, key=len, reverse=True):
                        v = v.replace(flag, origin[flag])
                    node[key] = v
                else:
                    rewrite(v)
    rewrite(workload)
    return workload
