/* config_schema.c - every key of the system and workload configs: type, unit,
 * range, default and meaning, with the struct field it fills.
 *
 * Order matters: keys print in this order, and a default "=path" may only name a
 * key listed before it. Ranges bound the JSON value as written (GBps, not
 * bytes/s); they reject nonsense (zero cores, negative bandwidth), not
 * unusual-but-possible hardware. Every rate, clock and size has a positive
 * lower bound (a link of 10 MB/s, a clock of 10 MHz, a 1 KiB buffer: below any
 * hardware built) so that no derived time or rate is infinite, zero or NaN; a
 * key where 0 means "off" accepts 0 or that range. */
#include "config_schema.h"

#include "config_doc.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "workload.h"

/* A constant's digits as written, for the texts that state a range. */
#define TEXT_OF(x) TEXT_OF_(x)
#define TEXT_OF_(x) #x

#define GIGA 1e9
#define MICRO 1e-6
#define KIB 1024.0
#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)

/* A field is named as SYS(path) or WL(path); FIELD turns it into an offset and
 * refuses to compile when the field's C type does not match the key's type. */
#define SYS(f) system_cfg_t, f
#define WL(f) workload_cfg_t, f
#define FIELD(type, ...) FIELD_(type, __VA_ARGS__)
#define FIELD_(type, T, f)                                                                    \
  (offsetof(T, f) + 0 * sizeof(char[_Generic(((T *)0)->f, type : 1, default : -1)]))
#define ENUM_FIELD(...) ENUM_FIELD_(__VA_ARGS__)
#define ENUM_FIELD_(T, f) (offsetof(T, f) + 0 * sizeof(char[sizeof(((T *)0)->f) == sizeof(int) ? 1 : -1]))

/* A section; SECTION's field is the bool that says whether the optional section is there. */
#define OBJ(p, text) { .path = p, .type = CFG_OBJECT, .offset = CFG_NO_FIELD, .doc = text }
#define SECTION(p, field, text)                                                               \
  { .path = p, .type = CFG_OBJECT, .optional = true, .offset = FIELD(bool, field), .doc = text }
#define INT(p, field, lo, hi, dflt, text)                                                     \
  { .path = p, .type = CFG_INT, .unit = "", .to_base = 1, .min = lo, .max = hi, .def = dflt,  \
    .offset = FIELD(int, field), .doc = text }
/* A number in [lo, hi], lo > 0 (POS), in [lo, hi] (NUM), or 0 or in [lo, hi] (OFF,
 * where 0 means off or absent), scaled into base units. */
#define POS(p, u, scale, field, lo, hi, dflt, text)                                           \
  { .path = p, .type = CFG_NUM, .unit = u, .to_base = scale, .min = lo, .max = hi,           \
    .def = dflt, .offset = FIELD(double, field), .doc = text }
#define OFF(p, u, scale, field, lo, hi, dflt, text)                                           \
  { .path = p, .type = CFG_NUM, .unit = u, .to_base = scale, .min = lo, .max = hi,           \
    .zero_ok = true, .def = dflt, .offset = FIELD(double, field), .doc = text }
#define NUM(p, u, scale, field, lo, hi, dflt, text)                                           \
  { .path = p, .type = CFG_NUM, .unit = u, .to_base = scale, .min = lo, .max = hi,           \
    .def = dflt, .offset = FIELD(double, field), .doc = text }
#define SIZE(p, u, scale, field, lo, hi, dflt, text)                                          \
  { .path = p, .type = CFG_SIZE, .unit = u, .to_base = scale, .min = lo, .max = hi,          \
    .def = dflt, .offset = FIELD(uint64_t, field), .doc = text }
#define BOOL(p, field, dflt, text)                                                            \
  { .path = p, .type = CFG_BOOL, .unit = "", .def = dflt, .offset = FIELD(bool, field),       \
    .doc = text }
/* A required string must not be empty; an optional one may be. */
#define STR(p, field, maxlen, dflt, text)                                                     \
  { .path = p, .type = CFG_STR, .unit = "", .min = (dflt) ? 0 : 1, .max = maxlen,            \
    .def = dflt, .offset = FIELD(char *, field), .doc = text }
/* A string of minlen to maxlen characters parsed by conv into field f of struct
 * T (a list, an order); expect says what conv accepts. */
#define PARSED(p, T, f, minlen, maxlen, dflt, conv, expect, text)                             \
  { .path = p, .type = CFG_STR, .unit = "", .min = minlen, .max = maxlen,                     \
    .def = dflt, .convert = conv, .convert_expect = expect, .offset = offsetof(T, f),         \
    .doc = text }
/* A MoE router's skew (workloads/moe_routing.h), the same keys under serving
 * and training: the Zipf exponent and the measured loads of SECTION.routing,
 * stored in `route` (a moe_routing_t). */
#define MOE_ROUTING_LOADS(section, route)                                                     \
  NUM(section ".zipf_s", "", 1, WL(route.zipf_s), 0, 10, "1",                                 \
      "Zipf exponent of " section ".routing zipf (0 is uniform)."),                           \
  PARSED(section ".expert_load", workload_cfg_t, route.load, 0, 8191, "\"\"",                \
         convert_expert_load, "non-negative numbers joined by ',' (at most 512)",             \
         "For " section ".routing measured: the load of each routed expert in expert order "  \
         "(token counts or shares, as an engine's expert distribution recorder or a "        \
         "training run's router statistics give them; model.moe.experts of them).")
/* Free text kept in the document only (name, description). */
#define NOTE(p, maxlen, text)                                                                 \
  { .path = p, .type = CFG_STR, .unit = "", .min = 0, .max = maxlen, .def = "\"\"",          \
    .offset = CFG_NO_FIELD, .doc = text }
#define ENUM(p, names, n, field, dflt, text)                                                  \
  { .path = p, .type = CFG_ENUM, .unit = "", .choices = names, .nchoices = n, .def = dflt,   \
    .offset = ENUM_FIELD(field), .doc = text }
/* An enum whose names are a column of a table: name_of(i) names value i. */
#define ENUM_OF(p, name_of, n, field, dflt, text)                                             \
  { .path = p, .type = CFG_ENUM, .unit = "", .choice_name = name_of, .nchoices = n,          \
    .def = dflt, .offset = ENUM_FIELD(field), .doc = text }
/* An array of at most n integers in [lo, hi] (default empty) into an int[n]
 * field, how many into the int field count. */
#define INTS(p, field, count, n, lo, hi, text)                                                \
  { .path = p, .type = CFG_INTS, .unit = "", .min = lo, .max = hi, .def = "[]", .items = n,   \
    .offset = INTS_FIELD(n, field), .count_offset = FIELD(int, count), .doc = text }
#define INTS_FIELD(n, ...) INTS_FIELD_(n, __VA_ARGS__)
#define INTS_FIELD_(n, T, f)                                                                  \
  (FIELD_(int *, T, f) + 0 * sizeof(char[sizeof(((T *)0)->f) == (n) * sizeof(int) ? 1 : -1]))
#define INT3(p, field, lo, hi, dflt, text)                                                    \
  { .path = p, .type = CFG_INT3, .unit = "", .min = lo, .max = hi, .def = dflt,               \
    .offset = FIELD(int *, field), .doc = text }
/* A serving pool's node type (serve_cfg.h). */
#define NODE_TYPE_DOC                                                                              \
  "The chip (its chip.name) of the servers this pool runs on, on a system with "                   \
  "cluster.node_types (docs/serve.md, \"Pools of different chips\"); \"\": the default "           \
  "chip's servers."
/* A serving pool's split (serve_cfg.h). */
#define POOL_PLAN(obj, pool)                                                                  \
  INT(obj ".tp", WL(pool.tp), 1, 1e5, "1", "Tensor-parallel size; divides heads."),           \
  INT(obj ".pp", WL(pool.pp), 1, 1e5, "1", "Pipeline stages; at most layers."),               \
  INT(obj ".dp", WL(pool.dp), 1, 1e5, "1",                                                    \
      "Attention data-parallel groups of tp NPUs, each with its own batch and KV cache."),    \
  INT(obj ".ep", WL(pool.ep), 1, 1e6, "1",                                                    \
      "Expert-parallel size: the experts spread over this many of the tp x dp ranks, "      \
      "ceil(experts / ep) on each (above experts, the spare ranks hold redundant copies)."), \
  ENUM(obj ".ep_dispatch", serve_dispatch_names, SERVE_DISPATCH_COUNT, WL(pool.ep_dispatch),  \
       "\"direct\"",                                                                        \
       "How tokens reach their experts' ranks: direct (an all-to-all to every rank), or "    \
       "server_dedup (across servers once per destination server over the rail, then on "    \
       "inside it: DeepEP's normal kernels).")
/* A request-length distribution of the generator. */
#define LENGTHS(obj, field, what)                                                             \
  OBJ(obj, what " lengths of generated requests."),                                           \
  ENUM(obj ".distribution", serve_len_dist_names, SERVE_LEN_COUNT, WL(field.dist), "\"fixed\"", \
       "fixed (the mean), uniform over [min, max], or lognormal (mean, sigma) clipped."),     \
  INT(obj ".mean", WL(field.mean), 1, 1e8, "512", what " tokens, mean."),                     \
  INT(obj ".min", WL(field.min), 1, 1e8, "1", what " tokens, at least."),                     \
  INT(obj ".max", WL(field.max), 1, 1e8, "=" obj ".mean", what " tokens, at most."),          \
  NUM(obj ".sigma", "", 1, WL(field.sigma), 0, 10, "0.5", "Log-normal shape.")

/* The four numbers of a link_cfg_t in the object obj; bw names its bandwidth key. */
#define LINK(obj, bw, field, what)                                                            \
  POS(obj "." bw, "GB/s", GIGA, SYS(field.bw_bytes_per_s), 0.01, 1e6, NULL,                        \
      "Line rate of " what ", one direction (10^9 bytes/s)."),                                \
  NUM(obj ".latency_us", "us", MICRO, SYS(field.latency_s), 0, 1e6, NULL,                 \
      "One-way latency of one hop over " what "."),                                          \
  NUM(obj ".efficiency", "", 1, SYS(field.efficiency), 0.01, 1, NULL,                     \
      "Fraction of the line rate one transfer over " what " achieves."),                     \
  NUM(obj ".msg_overhead_us", "us", MICRO, SYS(field.msg_overhead_s), 0, 1e6, "0",        \
      "Fixed software/DMA cost of each message over " what "."),                             \
  OFF(obj ".pJ_per_bit", "pJ/bit", 8e-12, SYS(field.energy_J_per_byte), 0.001, 1e5, "0",    \
      "Energy of one bit over " what " (SerDes, NIC, optics); 0: not counted.")

/* One optional protocol section: the library picks the fastest configured one. */
#define PROTO(name, id, what)                                                                 \
  SECTION("collectives." name, SYS(coll.proto[id].present),                                 \
          what "; absent = not used. With none configured, data moves at the links' "         \
          "efficiency with step_latency_us per step."),                                              \
  NUM("collectives." name ".step_latency_us", "us", MICRO, SYS(coll.proto[id].step_latency_s), \
      0, 1e6, NULL, "Cost of each algorithm step in this protocol (synchronisation, fill)."),   \
  NUM("collectives." name ".wire_efficiency", "", 1, SYS(coll.proto[id].wire_efficiency),     \
      0.01, 1, NULL, "Data bytes per byte on the wire in this protocol.")


static int convert_expert_load(const char *text, void *field) {
  return moe_parse_expert_load(text, (moe_expert_load_t *)field);
}

_Static_assert(sizeof(moe_expert_load_t) <= CFG_CONVERT_MAX_BYTES, "scratch for convert");

static int convert_order(const char *text, void *field) {
  return workload_parse_order(text, (par_dim_t *)field);
}

_Static_assert(sizeof(variation_ranges_t) <= CFG_CONVERT_MAX_BYTES, "scratch for convert");
_Static_assert(sizeof(link_faults_t) <= CFG_CONVERT_MAX_BYTES, "scratch for convert");

static int convert_faults(const char *text, void *field) {
  return faults_parse(text, (link_faults_t *)field);
}

_Static_assert(sizeof(node_types_t) <= CFG_CONVERT_MAX_BYTES, "scratch for convert");

static int convert_node_types(const char *text, void *field) {
  return cluster_parse_node_types(text, (node_types_t *)field);
}

static int convert_ranges(const char *text, void *field) {
  return variation_parse_ranges(text, (variation_ranges_t *)field);
}

static const cfg_key_t system_keys[] = {
    STR("name", SYS(name), CHIP_NAME_MAX - 1, NULL, "Name of the system, shown in reports."),
    NOTE("description", 1000, "Free text: what this system is."),

    OBJ("chip", "One die: the unit that is one rank."),
    STR("chip.name", SYS(chip.name), CHIP_NAME_MAX - 1, NULL, "Chip (die) model name."),
    POS("chip.freq_GHz", "GHz", GIGA, SYS(chip.freq_hz), 0.01, 10, NULL, "Core clock."),
    NUM("chip.sustained_clock_fraction", "", 1, SYS(chip.sustained_clock), 0.05, 1, "1",
        "Fraction of chip.freq_GHz the cores hold through a whole training step (power cap "
        "with cores, HBM and links all busy); replay and train cost ops at that clock, "
        "`npusim op` at chip.freq_GHz as isolated-kernel benchmarks run."),
    INT("chip.dies_per_package", SYS(chip.dies_per_package), 1, 8, "1",
        "Dies in one package; each die is a rank. More than 1 needs node.die_link."),

    OBJ("chip.cube", "Matrix (cube) cores; SMs' tensor cores on a GPU."),
    INT("chip.cube.cores", SYS(chip.cube.cores), 1, 4096, NULL, "Cube cores per die."),
    INT3("chip.cube.fractal_mkn", SYS(chip.cube.fractal_mkn), 1, 1024, "[16, 16, 16]",
         "M, K, N of the fp16/bf16 fractal one cube instruction computes."),
    INT3("chip.cube.fractal_mkn_int8", SYS(chip.cube.fractal_mkn_int8), 1, 1024,
         "[16, 32, 16]", "M, K, N of the int8 fractal."),
    POS("chip.cube.fp16_macs_per_cycle", "MAC/cycle", 1,
        SYS(chip.cube.macs_per_cycle[CHIP_DTYPE_FP16]), 1, 1e7, NULL,
        "fp16 multiply-accumulates per cycle per cube core."),
    OFF("chip.cube.bf16_macs_per_cycle", "MAC/cycle", 1,
        SYS(chip.cube.macs_per_cycle[CHIP_DTYPE_BF16]), 1, 1e7, "=chip.cube.fp16_macs_per_cycle",
        "bf16 MACs per cycle per cube core; 0 = not supported."),
    OFF("chip.cube.fp32_macs_per_cycle", "MAC/cycle", 1,
        SYS(chip.cube.macs_per_cycle[CHIP_DTYPE_FP32]), 1, 1e7, "0",
        "fp32 (HF32/TF32) MACs per cycle per cube core; 0 = not supported."),
    OFF("chip.cube.int8_macs_per_cycle", "MAC/cycle", 1,
        SYS(chip.cube.macs_per_cycle[CHIP_DTYPE_INT8]), 1, 1e7, "0",
        "int8 MACs per cycle per cube core; 0 = not supported."),
    OFF("chip.cube.fp8_macs_per_cycle", "MAC/cycle", 1,
        SYS(chip.cube.macs_per_cycle[CHIP_DTYPE_FP8]), 1, 1e7, "0",
        "fp8 MACs per cycle per cube core; 0 = not supported."),
    SIZE("chip.cube.l0a_KiB", "KiB", KIB, SYS(chip.cube.l0a_bytes), 1, 1e6, NULL,
         "L0A: left-operand buffer per cube core."),
    SIZE("chip.cube.l0b_KiB", "KiB", KIB, SYS(chip.cube.l0b_bytes), 1, 1e6, NULL,
         "L0B: right-operand buffer per cube core."),
    SIZE("chip.cube.l0c_KiB", "KiB", KIB, SYS(chip.cube.l0c_bytes), 1, 1e6, NULL,
         "L0C: accumulator buffer per cube core."),
    SIZE("chip.cube.l1_KiB", "KiB", KIB, SYS(chip.cube.l1_bytes), 1, 1e7, NULL,
         "L1: operand staging buffer per cube core (shared memory on a GPU)."),
    POS("chip.cube.mte1_l0a_bytes_per_cycle", "B/cycle", 1,
        SYS(chip.cube.mte1_l0a_bytes_per_cycle), 1, 1e6, NULL, "MTE1 rate L1 -> L0A per core."),
    POS("chip.cube.mte1_l0b_bytes_per_cycle", "B/cycle", 1,
        SYS(chip.cube.mte1_l0b_bytes_per_cycle), 1, 1e6, NULL, "MTE1 rate L1 -> L0B per core."),
    POS("chip.cube.mte2_bytes_per_cycle", "B/cycle", 1, SYS(chip.cube.mte2_bytes_per_cycle),
        1, 1e6, NULL, "MTE2 rate GM -> L1 per core: the core's port into L2/HBM."),
    POS("chip.cube.fixpipe_bytes_per_cycle", "B/cycle", 1,
        SYS(chip.cube.fixpipe_bytes_per_cycle), 1, 1e6, NULL, "FixPipe rate L0C -> GM per core."),
    NUM("chip.cube.step_overhead_cycles", "cycles", 1, SYS(chip.cube.step_overhead_cycles), 0,
        1e6, "0", "Handshake between the pipes for each k-step of a tile (set/wait flags)."),
    NUM("chip.cube.op_overhead_us", "us", MICRO, SYS(chip.cube.op_overhead_s), 0, 1e6, "0",
        "Launch and scalar cost of one cube op, paid once per op."),
    BOOL("chip.cube.stream_k", SYS(chip.cube.stream_k), "false",
         "Whether the matmul library can deal a matmul's k-steps out evenly over the cores "
         "(stream-K) instead of whole tiles in waves; the model takes the faster."),

    OBJ("chip.vector", "Vector cores (AIV); CUDA cores of the SMs on a GPU."),
    INT("chip.vector.cores", SYS(chip.vector.cores), 1, 4096, NULL, "Vector cores per die."),
    POS("chip.vector.bytes_per_cycle", "B/cycle", 1, SYS(chip.vector.bytes_per_cycle), 1, 1e6,
        NULL, "Vector ALU width per core (256 = 128 fp16 lanes)."),
    SIZE("chip.vector.ub_KiB", "KiB", KIB, SYS(chip.vector.ub_bytes), 1, 1e6, NULL,
         "Unified buffer per vector core."),
    POS("chip.vector.mte2_bytes_per_cycle", "B/cycle", 1,
        SYS(chip.vector.mte2_bytes_per_cycle), 1, 1e6, NULL, "MTE2 rate GM -> UB per core."),
    POS("chip.vector.mte3_bytes_per_cycle", "B/cycle", 1,
        SYS(chip.vector.mte3_bytes_per_cycle), 1, 1e6, NULL, "MTE3 rate UB -> GM per core."),
    NUM("chip.vector.step_overhead_cycles", "cycles", 1, SYS(chip.vector.step_overhead_cycles),
        0, 1e6, "0", "Handshake between the pipes for each UB tile."),
    NUM("chip.vector.op_overhead_us", "us", MICRO, SYS(chip.vector.op_overhead_s), 0, 1e6,
        "0", "Launch and scalar cost of one vector op, paid once per op."),
    OFF("chip.vector.special_per_cycle", "results/cycle", 1, SYS(chip.vector.special_per_cycle),
        0.01, 1e6, "0", "Transcendental results (exp, rsqrt, tanh) per cycle per vector core, "
        "from the special-function unit; 0: at the fp32 lane rate (no separate unit)."),
    NUM("chip.vector.overlap_with_cube", "", 1, SYS(chip.vector.overlap_with_cube), 0, 1, "1",
        "Share of fused attention's vector work on a block (softmax) that runs while the cube "
        "works on another block: 1 when they pipeline (separate cores, warp-specialised "
        "kernels), lower when a core alternates between them."),
    OFF("chip.vector.load_latency_ns", "ns", 1e-9, SYS(chip.vector.load_latency_s), 1, 1e5,
        "0", "Latency of a global-memory load under streaming load (Little's law: a core "
        "streams at most its bytes in flight per latency); 0 with bytes_in_flight_KiB = 0: "
        "not modelled."),
    OFF("chip.vector.bytes_in_flight_KiB", "KiB", KIB, SYS(chip.vector.bytes_in_flight), 0.01,
        1e6, "0", "Bytes a vector core keeps in flight per input stream with full-width loads "
        "(GPU: resident threads x load_vector_bytes; NPU: the MTE2 tiles queued); 0: not "
        "modelled."),
    OFF("chip.vector.load_vector_bytes", "B", 1, SYS(chip.vector.load_vector_bytes), 1, 1e4, "0",
        "The widest load one thread issues (16 on a GPU); an unfused kernel that loads one "
        "element at a time (dtype cast, strided input) keeps element/width as many bytes in "
        "flight; 0: loads are never narrower (DMA)."),
    OFF("chip.vector.rowwise_bytes_in_flight_KiB", "KiB", KIB,
        SYS(chip.vector.rowwise_bytes_in_flight), 0.01, 1e6, "0",
        "Bytes in flight per core of an unfused row-wise kernel (norm, softmax, log-softmax) "
        "that loops over a row between block reductions; 0: as bytes_in_flight_KiB."),
    OFF("chip.vector.mlp_blend_exponent", "", 1, SYS(chip.vector.mlp_blend_exponent), 1, 100,
        "0", "p in (t_hbm^p + t_mlp^p)^(1/p): a kernel near both the HBM and the Little's-law "
        "limit runs slower than either alone (latency rises as HBM queues fill); 0: the larger."),
    NUM("chip.vector.host_issue_us", "us", MICRO, SYS(chip.vector.host_issue_s), 0, 1e6, "0",
        "Host time to issue one kernel of an unfused (eager) op: Python binding, dispatcher, "
        "launch; a device faster than the host waits (ops measured back to back)."),
    NUM("chip.vector.host_wrapper_us", "us", MICRO, SYS(chip.vector.host_wrapper_s), 0, 1e6,
        "0", "More host time per unfused op called through a Python functional wrapper "
        "(F.layer_norm, F.rms_norm, F.silu, F.cross_entropy; F.gelu and torch.softmax bind "
        "straight to C++)."),

    OBJ("chip.attention", "How fused attention kernels tile and launch (hw_models/attention.c)."),
    POS("chip.attention.fwd_block_q", "rows", 1, SYS(chip.attention.fwd_block_q), 1, 4096, "128",
        "Query rows of one forward tile (Br): one unit of work per (batch, head, query block)."),
    POS("chip.attention.fwd_block_kv", "rows", 1, SYS(chip.attention.fwd_block_kv), 1, 4096,
        "128", "Key/value rows a forward unit takes per step (Bc)."),
    POS("chip.attention.bwd_block_q", "rows", 1, SYS(chip.attention.bwd_block_q), 1, 4096, "64",
        "Query rows a backward unit takes per step (Br)."),
    POS("chip.attention.bwd_block_kv", "rows", 1, SYS(chip.attention.bwd_block_kv), 1, 4096,
        "128", "Key/value rows of one backward tile (Bc): one unit per (batch, head, key block)."),
    POS("chip.attention.head_dim_granule", "", 1, SYS(chip.attention.head_dim_granule), 1, 512,
        "16", "The kernels' head_dim comes in multiples of this; a head_dim between them runs "
        "padded to the next (computes and moves the padding)."),
    OFF("chip.attention.dq_atomic_bytes_per_cycle", "B/cycle", 1,
        SYS(chip.attention.dq_atomic_bytes_per_cycle), 0.01, 1e6, "0",
        "Rate at which one core adds a backward step's fp32 dQ block into L2 (atomics or a "
        "bulk reduce), on the step's critical path; 0: through chip.cube.fixpipe_bytes_per_cycle, "
        "overlapped with the matmuls."),
    NUM("chip.attention.bwd_kernel_gap_us", "us", MICRO, SYS(chip.attention.bwd_kernel_gap_s), 0,
        1e5, "0", "Host time the device waits before each kernel of the attention backward "
        "(preprocess, main, dQ conversion, GQA sum) when the backward is launched alone, as a "
        "per-call timing of autograd's backward does; 0 where the host runs ahead."),

    OBJ("chip.l2", "On-chip L2 shared by all cores."),
    SIZE("chip.l2.size_MiB", "MiB", MIB, SYS(chip.l2.size_bytes), 1, 1e6, NULL, "L2 capacity."),
    POS("chip.l2.bandwidth_GBps", "GB/s", GIGA, SYS(chip.l2.bw_bytes_per_s), 1, 1e6, NULL,
        "Aggregate L2 read bandwidth of all cores."),

    OBJ("chip.hbm", "Device memory (HBM) of one die."),
    SIZE("chip.hbm.capacity_GiB", "GiB", GIB, SYS(chip.hbm.capacity_bytes), 1, 1e6, NULL,
        "HBM capacity."),
    POS("chip.hbm.bandwidth_GBps", "GB/s", GIGA, SYS(chip.hbm.bw_bytes_per_s), 1, 1e6, NULL,
        "Peak HBM bandwidth."),
    NUM("chip.hbm.efficiency", "", 1, SYS(chip.hbm.efficiency), 0.01, 1, NULL,
        "Fraction of peak HBM bandwidth that streaming kernels achieve."),

    OBJ("chip.power", "What the die draws (hw_models/power.h); all 0: energy not modelled."),
    OFF("chip.power.idle_W", "W", 1, SYS(chip.power.idle_W), 0.1, 1e5, "0",
        "Power of the die powered and idle."),
    OFF("chip.power.active_W", "W", 1, SYS(chip.power.active_W), 0.1, 1e5, "0",
        "Power on top of idle while any op runs, whatever its pipes' busy shares (cores "
        "clocked and occupied: clock tree, issue, register files, caches of stalled "
        "warps), at chip.power.clock_GHz (scaled by the clock like cube_W)."),
    OFF("chip.power.cube_W", "W", 1, SYS(chip.power.cube_W), 0.1, 1e5, "0",
        "Power on top of idle with every cube core busy at chip.power.clock_GHz (scaled by "
        "the cube's busy share and the clock)."),
    OFF("chip.power.vector_W", "W", 1, SYS(chip.power.vector_W), 0.1, 1e5, "0",
        "Power on top of idle with every vector core busy at chip.power.clock_GHz (scaled by "
        "their busy share and the clock)."),
    OFF("chip.power.clock_GHz", "GHz", GIGA, SYS(chip.power.clock_hz), 0.01, 10, "0",
        "Clock cube_W and vector_W are stated at; at clock f they draw (f / clock_GHz)^"
        "clock_exponent of it. With max_W, an op that would pass max_W at its clock runs "
        "at the highest clock within it (its compute stretches, its HBM time does not). "
        "0: unit power does not follow the clock and no op throttles."),
    NUM("chip.power.clock_exponent", "", 1, SYS(chip.power.clock_exponent), 0, 4, "2",
        "k in unit power ~ clock^k (P = C V^2 f: 1 at a fixed voltage, 3 with the voltage "
        "rising in proportion to the clock)."),
    OFF("chip.power.hbm_pJ_per_bit", "pJ/bit", 8e-12, SYS(chip.power.hbm_J_per_byte), 0.001,
        1e4, "0", "Energy of one bit between HBM and the cores (DRAM, PHY, on-chip path)."),
    OFF("chip.power.max_W", "W", 1, SYS(chip.power.max_W), 1, 1e5, "0",
        "The board's power limit (TDP): ops throttle to it (see clock_GHz); above idle_W + "
        "active_W (what a die running any op draws); 0: none."),

    OBJ("chip.variation", "Stragglers: NPUs away from the chip model's speed (variation.h)."),
    PARSED("chip.variation.speed_factors", system_cfg_t, variation.ranges, 0, 1023, "\"\"",
           convert_ranges,
           "ranks and speed factors, \"R[-R]:FACTOR,...\" (FACTOR in "
           "[" TEXT_OF(VARIATION_MIN_FACTOR) ", " TEXT_OF(VARIATION_MAX_FACTOR) "])",
           "Ranks at a speed factor: \"3:0.5\" runs rank 3's compute at half speed, "
           "\"0-7:0.9,12:0.5\" ranks 0 to 7 at 0.9 and 12 at 0.5 (later ranges win, over "
           "speed_sigma's draw). A rank runs at least " TEXT_OF(VARIATION_MIN_FACTOR)
           " of the chip model's speed, as drawn factors are clipped: no op takes forever."),
    OFF("chip.variation.speed_sigma", "", 1, SYS(variation.speed_sigma), 1e-6, 1, "0",
        "Each rank's speed factor drawn once from 1 + sigma N(0, 1) (clipped at 0.01), "
        "seeded; 0: every rank at 1."),
    OFF("chip.variation.jitter_sigma", "", 1, SYS(variation.jitter_sigma), 1e-6, 10, "0",
        "Every compute op of every rank stretched by 1 + sigma |N(0, 1)|, seeded (OS noise, "
        "clock dips); 0: none."),
    INT("chip.variation.seed", SYS(variation.seed), 0, 2147483647, "1",
        "Seed of speed_sigma's and jitter_sigma's draws: the same seed, the same factors."),

    OBJ("node", "One server: its NPUs and the scale-up fabric joining them."),
    INT("node.npus", SYS(node.npus), 1, 4096, NULL, "Ranks (dies) per server."),
    OBJ("node.scale_up", "Links between the NPUs of one server."),
    ENUM("node.scale_up.topology", topology_scale_up_names, SCALE_UP_COUNT,
         SYS(node.scale_up.kind), NULL,
         "full_mesh: a link set per NPU pair; two_group_mesh: two meshes of npus/2 joined "
         "through the NICs; switch: a port per NPU; ring: two neighbours per NPU."),
    INT("node.scale_up.links_per_npu", SYS(node.scale_up.links_per_npu), 1, 4096, NULL,
        "Links leaving one NPU: to its peers (mesh, ring) or to the switch."),
    LINK("node.scale_up", "link_bandwidth_GBps", node.scale_up.link, "one scale-up link"),
    BOOL("node.scale_up.in_switch_reduction", SYS(node.scale_up.in_switch_reduction), "false",
         "The switch reduces in the network (NVLink SHARP); switch topology only."),
    NUM("node.scale_up.read_request_overhead", "", 1, SYS(node.scale_up.read_request_overhead),
        0, 1, "0",
        "Bytes of read-request packets per byte a read returns, carried the other way: an "
        "in-switch reduction loads the data it reduces (writes need no requests)."),
    SECTION("node.die_link", SYS(node.has_die_link),
        "Link between the dies of one package (SIO); required when chip.dies_per_package > 1."),
    LINK("node.die_link", "bandwidth_GBps", node.die_link, "the die-to-die link"),

    OBJ("cluster", "How servers are joined."),
    INT("cluster.nodes", SYS(cluster.nodes), 0, 1e6, "0",
        "Servers in the cluster; 0 = the smallest number that fits the job."),
    PARSED("cluster.node_types", system_cfg_t, cluster.node_types, 0, 1023, "\"\"",
           convert_node_types,
           "servers and system files, \"S[-S]:FILE,...\" (at most 8 entries)",
           "Servers that carry another chip: \"0-3:ascend-910a.json\" gives servers 0 to 3 "
           "the chip of that system file (a path from the file that sets this key, or from "
           "the working directory for --set; its chip block only: its node, cluster and "
           "collectives are not read), \"\" every server `chip`. Ranges may not overlap nor "
           "pass the cluster's servers; a job on more than one chip replays every rank, and "
           "its links are the cluster's whatever the chips."),
    OBJ("cluster.faults", "Links slower than built, or dead, from the start or from a time in "
        "the run (faults.h)."),
    PARSED("cluster.faults.links", system_cfg_t, cluster.faults, 0, 1023, "\"\"",
           convert_faults,
           "links and the bandwidth left, \"LINK:FACTOR[@T],...\" (FACTOR 0 or in "
           "[" TEXT_OF(FAULTS_MIN_FACTOR) ", 1]; T in [0, " TEXT_OF(FAULTS_MAX_AT_S) "] s)",
           "Each LINK is a kind (scale_up, die, supernode, nic, uplink, core: all of them) or one "
           "link by its name in the job (s0.mesh1-5, s2.nic3, leaf0.spine1, as --links "
           "prints them); FACTOR is the bandwidth left, 0 a dead link; the faults on one link "
           "multiply and leave it at least " TEXT_OF(FAULTS_MIN_FACTOR) " (or 0). Dead links "
           "are routed around (a full-mesh pair through a third NPU, a spine's flows onto the other "
           "spines); a dead link that cuts ranks off is refused, naming them. @T: from T "
           "seconds into the run (simulated time; none or @0: from the start), the link has "
           "FACTOR of its bandwidth before; a transfer crossing T runs at the old rate until T "
           "and the new one after, in both fidelities (coll, replay, train; serve refuses "
           "@T). A link dying during the run (FACTOR 0 with T > 0; all at one T; coll, "
           "replay, train, cluster): transfers starting at or after T take the paths that "
           "remain, one on it at T is resent whole on them from T; refused when it cuts "
           "ranks off."),
    OBJ("cluster.scale_out", "NICs and the switched network between servers."),
    ENUM("cluster.scale_out.topology", topology_scale_out_names, SCALE_OUT_COUNT,
         SYS(cluster.scale_out.kind), NULL,
         "spine_leaf: whole servers under each leaf; rail_optimized: NIC i of every server on "
         "leaf i."),
    INT("cluster.scale_out.nics_per_npu", SYS(cluster.scale_out.nics_per_npu), 1, 64, "1",
        "NIC ports per NPU."),
    LINK("cluster.scale_out", "nic_bandwidth_GBps", cluster.scale_out.nic, "one NIC port"),
    INT("cluster.scale_out.npus_per_leaf", SYS(cluster.scale_out.npus_per_leaf), 1, 1e6, NULL,
        "NPUs (NIC ports) under one leaf switch."),
    NUM("cluster.scale_out.oversubscription", "", 1, SYS(cluster.scale_out.oversubscription), 1,
        1000, "1", "Leaf downlink to uplink bandwidth ratio (2 = 2:1 oversubscribed spine)."),
    INT("cluster.scale_out.spines", SYS(cluster.scale_out.spines), 1, 10000, "1",
        "Spine switches: each leaf's uplink bandwidth split over one link to each, and each "
        "flow (source, destination NPU) hashed onto one as ECMP does; 1 merges them (perfect "
        "balance)."),
    ENUM("cluster.scale_out.ecmp", ecmp_mode_names, ECMP_COUNT, SYS(cluster.scale_out.ecmp),
         "\"flow\"",
         "How the switches spread traffic over the spines and cores: flow (each flow hashed "
         "onto one, as ECMP does; flows collide while another path idles) or packet (each "
         "flow's packets sprayed over all of them, as adaptive routing and packet spraying do "
         "with the NIC reordering: they act as one path of their summed capacity, perfect "
         "balance; a fault names that path, leafN.up or podN.core0)."),
    INT("cluster.scale_out.planes", SYS(cluster.scale_out.planes), 1, 8, "1",
        "Independent scale-out planes (dual-plane: 2, as Alibaba HPN and multi-plane "
        "fat trees build): each plane is a copy of the leaves, spines and cores; each NPU's "
        "nics_per_npu ports are split evenly over them, and a flow between servers is "
        "hashed onto one plane (ECMP; ecmp packet sprays over all, one merged plane), on "
        "which both its ends have a live port. Links are named p1.s0.nic3, p1.leaf4.spine0."),
    INT("cluster.scale_out.npus_per_pod", SYS(cluster.scale_out.npus_per_pod), 0, 1e8, "0",
        "NPUs (NIC ports) in one pod: its leaves and spines (aggregation switches) under a core "
        "tier, a third tier of switches between pods (Llama 3's 24K-GPU clusters: pods of 3,072 "
        "GPUs, 1:7 between pods). Whole leaves (spine_leaf: a multiple of npus_per_leaf; "
        "rail_optimized: of npus_per_leaf x node.npus, whole rail groups); servers fill pods in "
        "order, so Megatron's rank order keeps TP in a server and lets DP cross the core "
        "first. 0: two tiers, no core."),
    NUM("cluster.scale_out.pod_oversubscription", "", 1,
        SYS(cluster.scale_out.pod_oversubscription), 1, 1000, "1",
        "A pod's leaf-uplink to core-uplink bandwidth ratio (7 = Llama 3's 1:7 between pods); "
        "with npus_per_pod."),
    INT("cluster.scale_out.cores", SYS(cluster.scale_out.cores), 1, 10000, "1",
        "Core switches: each pod's core bandwidth split over one link to each, a flow (source, "
        "destination NPU) between pods hashed onto one as ECMP does; 1 merges them."),
    OFF("cluster.scale_out.switch_port_W", "W", 1, SYS(cluster.scale_out.switch_port_W), 0.01,
        1e4, "0", "Power of one switch port (its share of the switch, optics included) while "
        "the job holds it: the leaves' NIC ports and both ends of each leaf-spine link; 0: not "
        "counted."),
    SECTION("cluster.supernode", SYS(cluster.has_supernode),
        "A scale-up domain larger than a server (UB supernode); RoCE beyond it."),
    INT("cluster.supernode.npus", SYS(cluster.supernode.npus), 2, 1e6, NULL,
        "Ranks in one supernode; a multiple of node.npus."),
    LINK("cluster.supernode", "link_bandwidth_GBps", cluster.supernode.link, "one rank's port into the supernode"),

    OBJ("collectives", "How the collective library picks and runs algorithms."),
    ENUM("collectives.library", coll_library_names, COLL_LIB_COUNT, SYS(coll.library),
         NULL, "Whose selection rules \"auto\" follows."),
    ENUM_OF("collectives.level0_algorithm", coll_algo_name, COLL_ALGO_COUNT,
         SYS(coll.algo[0]), "\"auto\"", "Algorithm inside a server."),
    ENUM_OF("collectives.level1_algorithm", coll_algo_name, COLL_ALGO_COUNT,
         SYS(coll.algo[1]), "\"auto\"", "Algorithm between servers."),
    ENUM_OF("collectives.level2_algorithm", coll_algo_name, COLL_ALGO_COUNT,
         SYS(coll.algo[2]), "\"auto\"", "Algorithm between supernodes."),
    POS("collectives.buffer_MiB", "MiB", MIB, SYS(coll.buffer_bytes), 1, 1e6, "200",
        "Staging buffer per communicator; larger messages run in loops (HCCL_BUFFSIZE; HCCL only, NCCL never loops)."),
    NUM("collectives.step_latency_us", "us", MICRO, SYS(coll.step_latency_s), 0, 1e6, "0",
        "Software cost of each algorithm step (synchronisation, task dispatch)."),
    NUM("collectives.op_overhead_us", "us", MICRO, SYS(coll.op_overhead_s), 0, 1e6, "0",
        "Fixed cost of launching one collective."),
    OFF("collectives.reduce_bandwidth_GBps", "GB/s", GIGA, SYS(coll.reduce_bw_bytes_per_s),
        0.01, 1e6, "0", "Local reduction throughput; 0 = reduced inline during the copy, free."),
    OFF("collectives.p2p_launch_us", "us", MICRO, SYS(coll.p2p_launch_s), 0.001, 1e6, "0",
        "Launch of a serving engine's own all-reduce kernel (oneshot, twoshot; vLLM's "
        "custom all-reduce), in place of op_overhead_us; 0 = op_overhead_us."),
    NUM("collectives.p2p_sync_us", "us", MICRO, SYS(coll.p2p_sync_s), 0, 1e6, "0",
        "Flag barrier among the ranks of a oneshot or twoshot all-reduce, once per stage "
        "(each rank writes a flag into every peer's memory and waits for theirs)."),
    OFF("collectives.p2p_read_GBps", "GB/s", GIGA, SYS(coll.p2p_read_bytes_per_s), 0.01, 1e6,
        "0",
        "Rate at which a oneshot or twoshot all-reduce kernel's loads from its peers' buffers "
        "reach, per rank, all peers together, where below its port's (its thread blocks' "
        "loads over NVLink wait on their latency): each byte holds the links as long as "
        "port / rate bytes would; 0 = the links' rate."),
    ENUM("collectives.analytic_progress", coll_progress_names, COLL_PROGRESS_COUNT,
         SYS(coll.analytic_progress), "\"auto\"",
         "How the analytic fidelity paces a collective that shares links with other traffic: "
         "phase (each phase of its schedule ends for every rank with its slowest transfer), "
         "rank (each rank walks its phases on its own, a transfer starting once both its ends "
         "are ready, as the flow fidelity runs it: where hash collisions slow some transfers "
         "and not others it follows flow, docs/collectives.md; it costs events per transfer) "
         "or auto (rank where ECMP hashes flows over more than one spine or core, else "
         "phase). NVLS phases keep phase."),
    NUM("collectives.compute_slowdown", "", 1, SYS(coll.compute_slowdown), 0, 10, "0",
        "Interference: a compute op that runs beside a transfer of its rank (a trace op's "
        "\"overlaps\"; Megatron's overlapped TP and CP communication in train) takes this "
        "fraction of the shorter of the two longer (cores and HBM shared with the transfer's "
        "kernels); 0 = off."),
    NUM("collectives.p2p_eager_max_MiB", "MiB", MIB, SYS(coll.eager_max_bytes), 0, 1e6, "4",
        "A send of at most this size completes once its data is in the receiver's buffer, "
        "without waiting for the matching recv (eager); a larger one waits for the recv "
        "(rendezvous); 0: every send waits. Default: NCCL's staging buffer per peer "
        "(NCCL_BUFFSIZE, 4 MiB); HCCL's HcclSend waits for its HcclRecv (set 0)."),
    PROTO("ll", COLL_PROTO_LL, "NCCL's LL protocol (8-byte flags): low latency, half the wire"),
    PROTO("ll128", COLL_PROTO_LL128, "NCCL's LL128 protocol (a flag per 128 bytes)"),
    PROTO("simple", COLL_PROTO_SIMPLE, "NCCL's Simple protocol: full bandwidth, highest latency"),
    SECTION("collectives.nvls", SYS(coll.nvls.present),
        "NVLS (in-switch all-reduce) as NCCL runs it: a pipeline of chunk steps per channel "
        "and head, each paying chunk_step_us; absent = one round at the links' rate with the "
        "Simple protocol's step latency. Unused where NVLS cannot run (a scale-up without "
        "in-switch reduction, as a system extending this one may be)."),
    INT("collectives.nvls.channels", SYS(coll.nvls.channels), 1, 1024, "16",
        "Thread blocks (channels) NVLS runs on; each serves every head (NCCL: 16 on H100)."),
    POS("collectives.nvls.chunk_KiB", "KiB", KIB, SYS(coll.nvls.chunk_bytes), 1, 1e6, "128",
        "Largest chunk of one step (NCCL_NVLS_CHUNKSIZE); halved to 64, 32 and 16 KiB for "
        "buffers below 64, 8 and 2 chunks per channel and head, as NCCL does."),
    NUM("collectives.nvls.chunk_step_us", "us", MICRO, SYS(coll.nvls.chunk_step_s), 0, 1e6,
        NULL, "Synchronisation of one chunk step of one channel and head, beyond its data."),
    NUM("collectives.nvls.latency_us", "us", MICRO, SYS(coll.nvls.latency_s), 0, 1e6, NULL,
        "Fixed cost of the NVLS round, in place of the Simple protocol's step latency."),
};

static const cfg_key_t workload_keys[] = {
    NOTE("name", 63, "Name of the workload, shown in reports."),
    NOTE("description", 1000, "Free text: what this workload is."),

    OBJ("model", "The transformer."),
    STR("model.name", WL(model.name), WORKLOAD_NAME_MAX - 1, NULL, "Model name."),
    INT("model.layers", WL(model.layers), 1, 1e5, NULL, "Transformer layers."),
    INT("model.hidden", WL(model.hidden), 1, 1e7, NULL,
        "Hidden size; a multiple of heads unless head_dim is set."),
    INT("model.heads", WL(model.heads), 1, 1e5, NULL, "Attention (query) heads."),
    INT("model.kv_heads", WL(model.kv_heads), 1, 1e5, "=model.heads",
        "Key/value heads (grouped-query attention); divides heads."),
    INT("model.head_dim", WL(model.head_dim), 0, 1e5, "0",
        "Width of one query, key and value head (Megatron's --kv-channels, Hugging Face's "
        "head_dim; Qwen3-32B: 128 with hidden 5120 and 64 heads); 0: hidden / heads. The "
        "query and output projections are heads x head_dim wide. Not with model.mla."),
    INT("model.ffn_hidden", WL(model.ffn_hidden), 1, 1e8, NULL, "MLP inner size."),
    INT("model.vocab", WL(model.vocab), 1, 1e8, NULL, "Vocabulary size."),
    INT("model.seq_len", WL(model.seq_len), 1, 1e8, NULL, "Tokens per sample."),
    ENUM("model.activation", workload_activation_names, ACTIVATION_COUNT, WL(model.activation),
         "\"gelu\"", "MLP activation; swiglu (SiLU-gated) and geglu (GeLU-gated, Gemma, "
         "Grok-1) have a gated MLP (three weight matrices)."),
    ENUM("model.norm", workload_norm_names, NORM_COUNT, WL(model.norm), "\"layernorm\"",
         "Normalisation layer."),
    ENUM("model.position_embedding", workload_position_names, POSITION_COUNT, WL(model.position),
         "\"rope\"",
         "Positions: rotary embedding applied to queries and keys in every layer (LLaMA), or a "
         "learned table of seq_len x hidden added to the input once (GPT)."),
    BOOL("model.tied_embeddings", WL(model.tied_embeddings), "false",
         "The LM head shares the input embedding's weights."),
    NUM("model.dropout", "", 1, WL(model.dropout), 0, 0.99, "0",
        "Attention and hidden dropout probability; above 0 the mask multiplies run (Megatron's "
        "GPT default 0.1, LLaMA recipes 0)."),
    SECTION("model.moe", WL(model.has_moe), "Mixture of experts; absent for a dense model."),
    INT("model.moe.experts", WL(model.moe.experts), 1, 1e6, NULL, "Routed experts per layer."),
    INT("model.moe.top_k", WL(model.moe.top_k), 1, 1e6, NULL,
        "Experts each token is routed to; at most experts."),
    INT("model.moe.expert_ffn_hidden", WL(model.moe.expert_ffn_hidden), 1, 1e8, NULL,
        "MLP inner size of one expert."),
    NUM("model.moe.capacity_factor", "", 1, WL(model.moe.capacity_factor), 0.01, 1000, "1",
        "Expert capacity relative to an even split of tokens."),
    INT("model.moe.shared_experts", WL(model.moe.shared_experts), 0, 1e6, "0",
        "Experts every token passes through."),
    INT("model.moe.groups", WL(model.moe.groups), 0, 1e6, "0",
        "Routing groups the experts are split into (DeepSeek-V3's n_group: 8); 0: none. "
        "Serving only."),
    INT("model.moe.top_groups", WL(model.moe.top_groups), 0, 1e6, "0",
        "Groups a token's experts may come from (DeepSeek-V3's topk_group: 4): with experts "
        "placed by group, this caps the servers a token is sent to."),
    INT("model.moe.dense_layers", WL(model.moe.dense_layers), 0, 1e5, "0",
        "The first layers keep a dense MLP of ffn_hidden (DeepSeek-V3: 3)."),
    INT("model.moe.zero_experts", WL(model.moe.zero_experts), 0, 1e6, "0",
        "Zero-computation experts (LongCat-Flash: 256 beside 512): the router picks top_k of "
        "experts + zero_experts, a zero expert returns its input scaled. Taken as picked in "
        "proportion to their number [A] (LongCat balances them by expert bias to about 8 of "
        "12), so top_k x experts / (experts + zero_experts) routed experts per token; the "
        "zero experts' tokens cross their own all-to-alls, as MindSpeed-LLM dispatches them. "
        "Training only."),
    BOOL("model.moe.shortcut", WL(model.moe.shortcut), "false",
         "LongCat-Flash's shortcut-connected MoE: each MoE layer is two attention blocks, each "
         "followed by a dense MLP of ffn_hidden, and one MoE block fed from the first attention "
         "block's output (run in turn, as MindSpeed-LLM runs it). Training only."),
    SECTION("model.mla", WL(model.has_mla),
            "Multi-head latent attention (DeepSeek-V2/V3): the KV cache holds one latent of "
            "kv_lora_rank + qk_rope_head_dim per token and layer. Serving runs it absorbed "
            "(attention over the latent); training as Megatron-Core does, rebuilding every "
            "head's key and value from the latent, the down projections whole on every TP "
            "rank."),
    INT("model.mla.q_lora_rank", WL(model.mla.q_lora_rank), 0, 1e6, "0",
        "Query compression rank; 0 projects queries directly."),
    INT("model.mla.kv_lora_rank", WL(model.mla.kv_lora_rank), 1, 1e6, NULL,
        "Rank of the compressed key/value latent (DeepSeek-V3: 512)."),
    INT("model.mla.qk_nope_head_dim", WL(model.mla.qk_nope_head_dim), 1, 1e5, NULL,
        "Per head, the query/key part without rotary (DeepSeek-V3: 128)."),
    INT("model.mla.qk_rope_head_dim", WL(model.mla.qk_rope_head_dim), 1, 1e5, NULL,
        "Per head, the rotary part; its key is shared by all heads (DeepSeek-V3: 64)."),
    INT("model.mla.v_head_dim", WL(model.mla.v_head_dim), 1, 1e5, NULL,
        "Per head, the value width (DeepSeek-V3: 128)."),
    INT("model.sliding_window_tokens", WL(model.sliding_window_tokens), 0, 1e9, "0",
        "Sliding-window attention: each query of a windowed layer sees only the keys ending at "
        "its own, this many (Mistral 7B: 4096, Gemma 2: 4096, gpt-oss: 128); 0: every key "
        "before it. Fused attention skips the key blocks outside the window (training: with "
        "cp 1 or cp_algo ulysses); in serving a windowed layer's decode reads at most the "
        "window, while the KV cache still keeps every token of every layer (no engine's "
        "freeing of blocks outside the window is modelled)."),
    INT("model.full_attention_every", WL(model.full_attention_every), 0, 1e5, "0",
        "With sliding_window_tokens: every Nth layer (the Nth, 2Nth, ... counting from 1) "
        "attends to the whole sequence (Gemma 2 and gpt-oss: 2, alternating; Gemma 3: 6); 0: "
        "every layer is windowed."),
    INT("model.mtp_layers", WL(model.mtp_layers), 0, 100, "0",
        "Multi-token prediction depth (DeepSeek-V3: 1; Megatron's --mtp-num-layers): modules "
        "after the last layer on the last pipeline stage, each two norms, a projection of 2 x "
        "hidden to hidden, one layer (a MoE layer where the last layer is) and the shared LM "
        "head with its loss. Training only (serving drafts with them through "
        "serving.speculative); not in the model's parameter total."),

    OBJ("parallel", "How the model is split over NPUs."),
    INT("parallel.dp", WL(parallel.dp), 1, 1e7, "1", "Data-parallel replicas."),
    INT("parallel.tp", WL(parallel.tp), 1, 1e5, "1",
        "Tensor-parallel size; divides heads and kv_heads."),
    BOOL("parallel.sequence_parallel", WL(parallel.sequence_parallel), "false",
         "Megatron sequence parallelism in the TP group (needs tp > 1)."),
    INT("parallel.pp", WL(parallel.pp), 1, 1e5, "1", "Pipeline stages."),
    INT("parallel.vpp", WL(parallel.vpp), 1, 1e5, "1",
        "Virtual stages per pipeline rank (interleaved 1F1B); pp x vpp divides layers."),
    ENUM("parallel.pp_schedule", workload_pp_schedule_names, PP_SCHEDULE_COUNT,
         WL(parallel.pp_schedule), "\"1f1b\"",
         "The pipeline schedule (workloads/pipeline.h): 1f1b (Megatron's, interleaved when vpp "
         "> 1) or dualpipev (DeepSeek's DualPipeV, MindSpeed's --schedules-method dualpipev: "
         "vpp 2, stage s holding virtual stages s and 2 pp - 1 - s so the LM head and loss sit "
         "on stage 0; a forward of one chunk paired with a backward of the other in the steady "
         "state, merged so each one's all-to-alls run beside the other's compute when "
         "training.overlap_moe_a2a is set, in turn otherwise; the weight gradients of the "
         "warm-up's and cool-down's backwards deferred into the bubbles (zero bubble); at least "
         "2 x pp micro-batches). Bubble (pp - 1)(F&B + B - 3W) per chunk's times, as "
         "deepseek-ai/DualPipe states it."),
    INT("parallel.first_stage_layers", WL(parallel.first_stage_layers), 0, 1e5, "0",
        "Layers on the first pipeline stage (Megatron's decoder_first_pipeline_num_layers); "
        "0: an even share. The stages without a set count share the rest evenly."),
    INT("parallel.last_stage_layers", WL(parallel.last_stage_layers), 0, 1e5, "0",
        "Layers on the last pipeline stage (Megatron's decoder_last_pipeline_num_layers); "
        "0: an even share."),
    INTS("parallel.stage_layers", WL(parallel.stage_layers), WL(parallel.stage_count),
         WORKLOAD_STAGES_MAX, 0, 1e5,
         "Layers on each pipeline stage, first to last (MindSpeed's --num-layer-list): pp "
         "entries summing to model.layers; with vpp > 1, pp x vpp entries, one per virtual "
         "stage in Megatron's order (virtual stage chunk x pp + stage: all stages' first "
         "chunks, then their second ones; Megatron-Core's --pipeline-model-parallel-layout, "
         "MindSpeed's no-op layers with interleaving: a virtual stage may hold none, a pipeline "
         "stage at least one); empty: first_stage_layers / last_stage_layers or an even share. "
         "Not with those two."),
    INT("parallel.cp", WL(parallel.cp), 1, 1e5, "1", "Context-parallel size (ring attention)."),
    ENUM("parallel.cp_algo", workload_cp_algo_names, CP_ALGO_COUNT, WL(parallel.cp_algo),
         "\"ring\"",
         "How context parallelism splits attention: ring (key/value blocks passed around the CP "
         "ring beside the blocks' attention; Megatron's and MindSpeed's megatron_cp_algo), "
         "ulysses (DeepSpeed-Ulysses, MindSpeed's ulysses_cp_algo: all-to-alls swap the sequence "
         "split for a head split, queries, keys and values in and the output back; heads and "
         "key/value heads per TP rank divisible by cp), allgather (MindSpeed's "
         "kvallgather_cp_algo: every key and value gathered first, their gradients "
         "reduce-scattered after) or hybrid (Ulysses in groups of cp_ulysses positions, the "
         "ring across them; MindSpeed's hybrid_cp_algo)."),
    INT("parallel.cp_ulysses", WL(parallel.cp_ulysses), 0, 1e5, "0",
        "With cp_algo hybrid: the Ulysses degree inside cp (MindSpeed's "
        "--ulysses-degree-in-cp), a divisor of cp between 2 and cp / 2."),
    INT("parallel.ep", WL(parallel.ep), 1, 1e5, "1",
        "Expert-parallel size; divides experts. With etp = tp it is carved out of dp x cp; "
        "with any other etp folded over tp x cp x dp (ep x etp divides tp x cp x dp)."),
    INT("parallel.etp", WL(parallel.etp), 1, 1e5, "=parallel.tp",
        "Expert tensor parallelism (Megatron's --expert-tensor-parallel-size): tp splits each "
        "expert over the TP group and reduces it there; any other value folds the experts over "
        "tp x cp x dp as Megatron-Core's expert grid ETP x EP x EDP (MoE parallel folding; "
        "MindSpeed's --moe-tp-extend-ep is etp 1): each rank routes its own sequence shard "
        "(needs sequence_parallel when tp > 1), the dispatch all-to-all may span TP ranks, and "
        "with etp > 1 each expert's width is split over an ETP group of its own that gathers "
        "the dispatched tokens before the experts and reduce-scatters them after."),
    INT("parallel.zero", WL(parallel.zero), 0, 3, "0",
        "ZeRO stage: 1 shards optimizer states (distributed optimizer), 2 also gradients, 3 "
        "also weights."),
    INT("parallel.zero_shard_size", WL(parallel.zero_shard_size), 0, 1e7, "0",
        "Replicas one ZeRO/FSDP shard spans: 0 shards over all dp x cp (FSDP's full_shard and "
        "shard_grad_op); a divisor of dp x cp shards within groups of that many consecutive "
        "replicas and replicates the groups (HSDP, FSDP's hybrid_shard): gradients are "
        "reduce-scattered in the group, then all-reduced across groups."),
    ENUM("parallel.recompute", workload_recompute_names, RECOMPUTE_COUNT, WL(parallel.recompute),
         "\"none\"", "Activation recomputation: none, selective (attention core) or full."),
    PARSED("parallel.order", workload_cfg_t, parallel.order, 1, 63, "\"tp-cp-dp-pp\"",
           convert_order, "a permutation of tp, cp, dp, pp joined by '-'",
           "Rank order, innermost first (Megatron: tp-cp-dp-pp; EP lies within dp)."),

    SECTION("training", WL(has_training),
            "How the model is trained (npusim train); a workload has this or serving."),
    INT("training.micro_batch", WL(training.micro_batch), 1, 1e7, "1",
        "Samples per micro-batch per data-parallel replica."),
    INT("training.global_batch", WL(training.global_batch), 1, 1e9, NULL,
        "Samples per step over all replicas; a multiple of micro_batch x dp."),
    ENUM("training.precision", workload_precision_names, PRECISION_COUNT, WL(training.precision),
         "\"bf16\"", "Compute precision of matmuls; fp8 needs chip.cube.fp8_macs_per_cycle > 0."),
    ENUM("training.optimizer", workload_optimizer_names, OPTIMIZER_COUNT, WL(training.optimizer),
         "\"adam\"", "Optimizer."),
    BOOL("training.flash_attention", WL(training.flash_attention), "true",
         "Fused (FlashAttention-style) attention kernel."),
    BOOL("training.overlap_grad_reduce", WL(training.overlap_grad_reduce), "true",
         "Reduce gradients in buckets overlapped with the backward pass."),
    SIZE("training.grad_bucket_MiB", "MiB", MIB, WL(training.grad_bucket_bytes), 1, 1e6, "80",
         "Gradient bucket size for the overlapped reduction."),
    BOOL("training.grad_reduce_in_fp32", WL(training.grad_reduce_in_fp32), "true",
         "Gradient buffers and their data-parallel reduction in fp32 (4 bytes per parameter; "
         "Megatron's choice with bf16); false keeps them in 16 bits (--grad-reduce-in-bf16)."),
    BOOL("training.overlap_param_gather", WL(training.overlap_param_gather), "false",
         "With parallel.zero 1 or 2: the parameter all-gather after the optimizer runs beside "
         "the next step's forward, chunk by chunk (Megatron's --overlap-param-gather; false, "
         "its default, leaves it at the end of the step)."),
    BOOL("training.overlap_p2p_comm", WL(training.overlap_p2p_comm), "false",
         "Pipeline sends run beside the next chunk's compute; false makes the compute "
         "stream wait for each send (Megatron's default without interleaving; with "
         "interleaving Megatron overlaps them unless --no-overlap-p2p-communication)."),
    BOOL("training.overlap_tp_comm", WL(training.overlap_tp_comm), "false",
         "TP communication fused with its matmuls (Megatron's --tp-comm-overlap, Ascend's MC2 "
         "--use-mc2): the gather before a column-parallel matmul (sequence parallelism) and the "
         "reduction after the attention output and MLP down projections split into tp chunks "
         "pipelined with the matmul's, each transfer beside a neighbouring chunk's matmul "
         "(collectives.compute_slowdown); the first gather chunk and the last reduction chunk "
         "stay exposed."),
    BOOL("training.overlap_moe_a2a", WL(training.overlap_moe_a2a), "false",
         "1F1B with the MoE all-to-alls overlapped (Megatron-Core's "
         "--overlap-moe-expert-parallel-comm, MindSpeed's --moe-fb-overlap): in the steady "
         "state a forward and a backward of two micro-batches run merged, layer by layer, each "
         "one's dispatch and combine beside the other's compute (its largest kernel there slowed "
         "by collectives.compute_slowdown); without a pipeline the micro-batches go F0, F1+B0, "
         "..., two in flight. MoE models only."),
    OBJ("training.moe", "How a MoE layer's tokens spread over the experts in training."),
    ENUM("training.moe.routing", moe_routing_names, MOE_ROUTE_COUNT, WL(training.moe_route.kind),
         "\"uniform\"",
         "As serving.moe.routing (workloads/moe_routing.h): uniform, zipf (placements seeded "
         "with 1) or measured (expert_load). Every rank of a stage computes and receives the "
         "expected busiest EP rank's tokens, since the all-to-alls hold the others until it is "
         "done. [A] uniform: a load-balancing loss or bias keeps a training run's loads near "
         "even; set zipf or measured from the run's router statistics."),
    MOE_ROUTING_LOADS("training.moe", training.moe_route),
    OBJ("training.kernels",
        "Which kernels the framework runs where frameworks differ "
        "(docs/chip-model.md, \"Vector ops\"): fused (one kernel) or unfused (eager "
        "PyTorch's own kernels, issued one by one from the host)."),
    ENUM("training.kernels.swiglu", workload_kernels_names, KERNELS_COUNT,
         WL(training.swiglu_kernels), "\"fused\"",
         "fused: one kernel (Megatron's bias_swiglu fusion, MindSpeed's npu_swiglu, Liger); "
         "unfused: silu on the strided first half, then mul (plain PyTorch). The same for "
         "geglu (gelu for silu)."),
    ENUM("training.kernels.cross_entropy", workload_kernels_names, KERNELS_COUNT,
         WL(training.cross_entropy_kernels), "\"fused\"",
         "fused: loss and gradient in one kernel (Megatron --cross-entropy-loss-fusion, "
         "Liger); unfused: F.cross_entropy's log-softmax + NLL/mean, and in the backward "
         "log-softmax's gradient (reads output and gradient, writes the input gradient)."),

    SECTION("serving", WL(has_serving),
            "How the model is served (npusim serve; docs/serve.md): instances, scheduler, KV "
            "cache, requests."),
    INT("serving.instances", WL(serving.colocated.instances), 1, 1e6, "1",
        "Instances that both prefill and decode (without the prefill and decode sections)."),
    STR("serving.node_type", WL(serving.colocated.node_type), SERVE_NODE_TYPE_MAX - 1, "\"\"",
        NODE_TYPE_DOC),
    OBJ("serving.parallel", "How one co-located instance is split."),
    POOL_PLAN("serving.parallel", serving.colocated),
    SECTION("serving.prefill", WL(serving.has_prefill),
            "Disaggregated prefill pool: its instances prefill only and send each request's KV "
            "cache to a decode instance; needs the decode section."),
    INT("serving.prefill.instances", WL(serving.prefill.instances), 1, 1e6, "1",
        "Prefill instances."),
    STR("serving.prefill.node_type", WL(serving.prefill.node_type), SERVE_NODE_TYPE_MAX - 1, "\"\"",
        NODE_TYPE_DOC),
    POOL_PLAN("serving.prefill", serving.prefill),
    SECTION("serving.decode", WL(serving.disaggregated),
            "Disaggregated decode pool: its instances decode requests prefilled elsewhere."),
    INT("serving.decode.instances", WL(serving.decode.instances), 1, 1e6, "1", "Decode instances."),
    STR("serving.decode.node_type", WL(serving.decode.node_type), SERVE_NODE_TYPE_MAX - 1, "\"\"",
        NODE_TYPE_DOC),
    POOL_PLAN("serving.decode", serving.decode),
    ENUM("serving.weight_dtype", serve_dtype_names, SERVE_DTYPE_COUNT, WL(serving.weight_dtype),
         "\"bf16\"", "Weights and matmul inputs (fp8 and int8 need the chip's rate for them)."),

    OBJ("serving.scheduler", "Continuous batching, as vLLM schedules (per attention group)."),
    INT("serving.scheduler.max_num_seqs", WL(serving.max_num_seqs), 1, 1e6, "256",
        "Sequences in one iteration (vLLM's max_num_seqs)."),
    INT("serving.scheduler.max_batched_tokens", WL(serving.max_batched_tokens), 1, 1e8, "8192",
        "Tokens, prefill and decode, in one iteration (vLLM's max_num_batched_tokens); with "
        "chunked_prefill it is the chunk budget."),
    BOOL("serving.scheduler.chunked_prefill", WL(serving.chunked_prefill), "true",
         "Sarathi-style: decodes first, then prefill chunks fill the token budget; false runs "
         "whole prompts in prefill-only iterations, before any decode (vLLM V0)."),
    BOOL("serving.scheduler.two_batch_overlap", WL(serving.two_batch_overlap), "false",
         "MoE layers run as two micro-batches, the expert all-to-alls of one under the other's "
         "compute (SGLang's two-batch overlap, DeepSeek's dual micro-batch, CloudMatrix-Infer's "
         "microbatch pipeline): a layer takes the longer of its compute and its communication, "
         "and the weights are read once per micro-batch."),
    OFF("serving.scheduler.iteration_overhead_us", "us", MICRO, WL(serving.iteration_overhead_s),
        0.1, 1e6, "0",
        "Host time per iteration outside the device's kernels (scheduling, input preparation) "
        "that the engine does not hide; 0 assumes it overlaps (an assumption per engine)."),
    OBJ("serving.kernels",
        "Which kernels the engine runs where engines differ (docs/chip-model.md, \"Vector "
        "ops\"); the host's time per iteration is serving.scheduler.iteration_overhead_us."),
    ENUM("serving.kernels.swiglu", workload_kernels_names, KERNELS_COUNT,
         WL(serving.swiglu_kernels), "\"fused\"",
         "fused: one kernel (vLLM's and SGLang's silu_and_mul, TensorRT-LLM's gated "
         "activation); unfused: silu on the strided first half, then mul (plain PyTorch, "
         "as Hugging Face transformers runs it). The same for geglu (gelu for silu)."),
    ENUM("serving.allreduce", serve_allreduce_names, SERVE_AR_COUNT, WL(serving.allreduce),
         "\"collective\"",
         "Who runs the tensor-parallel all-reduces: collective (the library's choice, as "
         "npusim coll; NCCL's ring or NVLS), or engine (the serving engine's own kernels "
         "where it has them: vLLM's custom all-reduce on 2-8 NVLink GPUs of one server "
         "below 8 MiB, one-shot or two-shot by size; elsewhere the library)."),
    OBJ("serving.moe", "How a MoE layer's tokens spread over the experts and how fast the "
        "dispatch/combine kernels move them."),
    ENUM("serving.moe.routing", moe_routing_names, MOE_ROUTE_COUNT, WL(serving.moe_route.kind),
         "\"uniform\"",
         "uniform: every expert gets top_k / experts of the tokens; zipf: the expert of "
         "popularity rank r gets a share proportional to r^-zipf_s (at most 1 / top_k), which "
         "expert is how popular drawn at random (seeded by requests.seed); measured: "
         "expert_load. The experts sit in contiguous blocks on the EP ranks; the expected "
         "busiest rank's tokens set the expert matmuls and the dispatch/combine bytes."),
    MOE_ROUTING_LOADS("serving.moe", serving.moe_route),
    OFF("serving.moe.dispatch_rdma_GBps", "GB/s", GIGA, WL(serving.moe_dispatch_rdma_Bps), 0.01,
        1e5, "0",
        "Rate one rank's dispatch and combine kernels reach between servers (DeepEP's normal "
        "kernels: 43-58 GB/s on 400 Gb/s NICs, its README); 0 = the links' rate."),
    OFF("serving.moe.dispatch_nvlink_GBps", "GB/s", GIGA, WL(serving.moe_dispatch_nvlink_Bps),
        0.01, 1e5, "0",
        "Rate one rank's dispatch and combine kernels reach inside a server (DeepEP's normal "
        "kernels: about 153-158 GB/s over NVLink, its README); 0 = the links' rate."),
    INT("serving.scheduler.cuda_graph_max_batch", WL(serving.cuda_graph_max_batch), 0, 1e6, "0",
        "CUDA-graph padding: a decode-only iteration of at most this many tokens per group "
        "runs the graph captured for the next size up, vLLM's capture list 1, 2, 4, then "
        "multiples of 8 (vllm/worker/model_runner.py _BATCH_SIZES_TO_CAPTURE; V0 captures up "
        "to 256): the layers' matmuls, norms and all-reduces run at the padded size; 0: off."),

    SECTION("serving.speculative", WL(serving.spec.on),
            "Speculative decoding: each decode step drafts draft_tokens per sequence and the "
            "target verifies them and one more in one step (query length k + 1); a sequence "
            "gains (1 - a^(k+1)) / (1 - a) tokens per step on average (Leviathan et al. 2023). "
            "Absent: one token per step."),
    ENUM("serving.speculative.method", serve_spec_names, SERVE_SPEC_COUNT, WL(serving.spec.method),
         "\"mtp\"",
         "mtp: the model's multi-token-prediction modules, one transformer layer (as the "
         "model's last) and the LM head per draft token, run one after another (DeepSeek-V3); "
         "draft: a separate draft model, each draft token costing draft_cost_share of the "
         "target's one-token decode step."),
    INT("serving.speculative.draft_tokens", WL(serving.spec.draft_tokens), 0, 64, "1",
        "Draft tokens per sequence per step (k); 0 runs as without the section."),
    NUM("serving.speculative.acceptance_rate", "", 1, WL(serving.spec.acceptance_rate), 0, 1, NULL,
        "Chance that each draft token is accepted, given the ones before it were (a); 1: "
        "every step gains k + 1 tokens. A measured rate of the engine and data set."),
    OFF("serving.speculative.draft_cost_share", "", 1, WL(serving.spec.draft_cost_share), 0.0001,
        10, "0",
        "method draft: one draft token's step as a share of the target's one-token decode "
        "step at the same batch (about the draft's parameters / the target's) [A]; 0 leaves "
        "the draft's cost out."),
    SECTION("serving.prefix_cache", WL(serving.prefix.on),
            "Prefix caching: requests share a prompt prefix whose KV blocks stay cached (vLLM's "
            "automatic prefix caching, SGLang's RadixAttention); a hit skips the prefix's "
            "prefill (its attention is still read by the rest of the prompt) and holds the "
            "prefix's blocks in common with the other hits, not a copy. Absent: no reuse."),
    INT("serving.prefix_cache.shared_prefix_tokens", WL(serving.prefix.shared_prefix_tokens), 0,
        1e8, NULL,
        "Tokens at the start of every prompt that are the same across requests (a system "
        "prompt, a few-shot header); cached in whole KV blocks, at most the prompt less one "
        "token."),
    NUM("serving.prefix_cache.hit_rate", "", 1, WL(serving.prefix.hit_rate), 0, 1, "1",
        "Share of requests that find the prefix cached, spread evenly over the requests in "
        "arrival order (1: every request, the prefix cached before the run; 0: today's "
        "numbers)."),
    OBJ("serving.kv_cache", "The paged KV cache."),
    INT("serving.kv_cache.block_tokens", WL(serving.block_tokens), 1, 1e5, "16",
        "Tokens per KV block (vLLM 16, Ascend 128)."),
    ENUM("serving.kv_cache.dtype", serve_dtype_names, SERVE_DTYPE_COUNT, WL(serving.kv_dtype),
         "\"bf16\"", "KV cache element type."),
    OFF("serving.kv_cache.capacity_GiB", "GiB", GIB, WL(serving.kv_capacity_bytes), 0.001, 1e6, "0",
        "KV cache per NPU; 0 derives it: HBM x memory_utilization - weights - activations."),
    NUM("serving.kv_cache.memory_utilization", "", 1, WL(serving.memory_utilization), 0.01, 1,
        "0.9", "Share of HBM the engine takes (vLLM's gpu_memory_utilization)."),
    ENUM("serving.kv_cache.preemption", serve_preempt_names, SERVE_PREEMPT_COUNT,
         WL(serving.preemption), "\"recompute\"",
         "When blocks run out: drop the youngest sequence's cache and prefill it again "
         "(recompute), or copy it to host memory and back (swap)."),
    POS("serving.kv_cache.swap_bandwidth_GBps", "GBps", GIGA, WL(serving.swap_bytes_per_s), 0.01,
        1e5, "25", "Host link per NPU for swapping (PCIe Gen5 x16: about 25 effective) [A]."),

    OBJ("serving.requests", "The requests: a trace file, or a generator (Poisson arrivals)."),
    STR("serving.requests.trace", WL(serving.trace_path), SERVE_PATH_MAX - 1, "\"\"",
        "JSONL or CSV of arrival_s, prompt_tokens, output_tokens (relative paths from the "
        "workload file); empty: generate them."),
    OFF("serving.requests.rate_per_s", "1/s", 1, WL(serving.rate_per_s), 1e-9, 1e9, "0",
        "Mean arrival rate of the generator (Poisson); 0: all arrive at time 0 (offline)."),
    INT("serving.requests.count", WL(serving.count), 1, SERVE_MAX_REQUESTS, "1000",
        "Requests generated (at most 10^7, as a trace's rows: docs/serve.md)."),
    INT("serving.requests.seed", WL(serving.seed), 0, 2147483647, "1",
        "Seed of the generator: the same seed, the same requests."),
    LENGTHS("serving.requests.prompt", serving.prompt, "Prompt"),
    LENGTHS("serving.requests.output", serving.output, "Output"),
};

static const cfg_schema_t schemas[CONFIG_KIND_COUNT] = {
    {CONFIG_SYSTEM, "system", system_keys, sizeof system_keys / sizeof system_keys[0],
     sizeof(system_cfg_t)},
    {CONFIG_WORKLOAD, "workload", workload_keys, sizeof workload_keys / sizeof workload_keys[0],
     sizeof(workload_cfg_t)},
};

const cfg_schema_t *cfg_schema_get(config_kind_t kind) { return &schemas[kind]; }

const cfg_key_t *cfg_schema_find(const cfg_schema_t *schema, const char *path) {
  for (size_t i = 0; i < schema->nkeys; i++)
    if (strcmp(schema->keys[i].path, path) == 0)
      return &schema->keys[i];
  return NULL;
}

size_t cfg_path_parent_len(const char *path) {
  const char *dot = strrchr(path, '.');
  return dot ? (size_t)(dot - path) : 0;
}

const char *cfg_path_leaf(const char *path) {
  const char *dot = strrchr(path, '.');
  return dot ? dot + 1 : path;
}

bool cfg_key_is_child(const cfg_key_t *key, const char *parent, size_t parent_len) {
  return cfg_path_parent_len(key->path) == parent_len &&
         strncmp(key->path, parent, parent_len) == 0;
}

/* Edit distance between a and b ignoring case, counting a swap of two
 * neighbouring letters as one edit (optimal string alignment); names are cut
 * at 32 characters. */
static int edit_distance(const char *a, const char *b) {
  int d[33][33];
  size_t la = strlen(a), lb = strlen(b);
  if (la > 32 || lb > 32)
    return 99;
  for (size_t i = 0; i <= la; i++)
    d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++)
    d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    for (size_t j = 1; j <= lb; j++) {
      int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
      int best = d[i - 1][j - 1] + (ca != cb);
      if (d[i - 1][j] + 1 < best)
        best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  }
  return d[la][lb];
}

/* Suggest only what is plausibly a typo: a few edits, at most a third of the name. */
static bool close_enough(const char *name, int d) {
  int limit = (int)strlen(name) / 3;
  return d <= (limit < 2 ? 2 : limit);
}

const char *cfg_suggest_name(const char *name, const char *const *names, size_t n, int *distance) {
  const char *best = NULL;
  int best_d = 99;
  for (size_t i = 0; i < n; i++) {
    int d = edit_distance(name, names[i]);
    if (d < best_d) {
      best_d = d;
      best = names[i];
    }
  }
  if (distance)
    *distance = best_d;
  return close_enough(name, best_d) ? best : NULL;
}

const char *cfg_schema_suggest(const cfg_schema_t *schema, const char *parent,
                               size_t parent_len, const char *name, int *distance) {
  const char *best = NULL;
  int best_d = 99;
  for (size_t i = 0; i < schema->nkeys; i++) {
    if (!cfg_key_is_child(&schema->keys[i], parent, parent_len))
      continue;
    const char *leaf = cfg_path_leaf(schema->keys[i].path);
    int d = edit_distance(name, leaf);
    if (d < best_d) {
      best_d = d;
      best = leaf;
    }
  }
  if (distance)
    *distance = best_d;
  return close_enough(name, best_d) ? best : NULL;
}

const char *cfg_key_choice(const cfg_key_t *key, int i) {
  return key->choices ? key->choices[i] : key->choice_name(i);
}

const char *cfg_key_suggest_choice(const cfg_key_t *key, const char *name) {
  const char *best = NULL;
  int best_d = 99;
  for (int i = 0; i < key->nchoices; i++) {
    int d = edit_distance(name, cfg_key_choice(key, i));
    if (d < best_d) {
      best_d = d;
      best = cfg_key_choice(key, i);
    }
  }
  return close_enough(name, best_d) ? best : NULL;
}

static void range_text(const cfg_key_t *key, char *buf, size_t len) {
  char lo[32], hi[32];
  jsonfile_format_number(key->min, lo, sizeof lo);
  jsonfile_format_number(key->max, hi, sizeof hi);
  snprintf(buf, len, "%sin %c%s, %s]", key->zero_ok ? "0 or " : "", key->min_exclusive ? '(' : '[',
           lo, hi);
}

void cfg_key_expectation(const cfg_key_t *key, char *buf, size_t len) {
  char range[64];
  range_text(key, range, sizeof range);
  switch (key->type) {
  case CFG_OBJECT:
    snprintf(buf, len, "an object");
    break;
  case CFG_INT:
    snprintf(buf, len, "an integer %s", range);
    break;
  case CFG_NUM:
  case CFG_SIZE:
    snprintf(buf, len, "a number %s", range);
    break;
  case CFG_BOOL:
    snprintf(buf, len, "true or false");
    break;
  case CFG_STR:
    if (key->convert)
      snprintf(buf, len, "%s", key->convert_expect);
    else
      snprintf(buf, len, "a string of 1 to %g characters", key->max);
    break;
  case CFG_ENUM: {
    size_t used = (size_t)snprintf(buf, len, "one of");
    for (int i = 0; i < key->nchoices && used < len; i++)
      used += (size_t)snprintf(buf + used, len - used, "%s \"%s\"", i ? "," : "",
                               cfg_key_choice(key, i));
    break;
  }
  case CFG_INT3:
    snprintf(buf, len, "an array of 3 integers %s", range);
    break;
  case CFG_INTS:
    snprintf(buf, len, "an array of at most %d integers %s", key->items, range);
    break;
  }
}
