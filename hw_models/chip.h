/* chip.h - one NPU die (or one GPU) as the chip model sees it: cube cores, vector
 * cores, their on-core buffers, L2 and HBM.
 *
 * This header holds the plain configuration structs that the config loader fills
 * (sim/config/config.c) and the derived figures every later model needs (peak rates).
 * All fields are in base units: hertz, bytes, bytes per second, seconds, cycles.
 * The JSON keys that feed them carry the architect's units (GHz, KiB, GBps, us);
 * the loader converts once. The cycle-level op model lives in its own module;
 * nothing here knows about SimGrid. */
#ifndef NPUSIM_CHIP_H
#define NPUSIM_CHIP_H

#include <stdbool.h>
#include <stdint.h>

#define CHIP_NAME_MAX 64

/* Data types the cube and vector units compute in. */
typedef enum {
  CHIP_DTYPE_FP16,
  CHIP_DTYPE_BF16,
  CHIP_DTYPE_FP32,
  CHIP_DTYPE_INT8,
  CHIP_DTYPE_FP8,
  CHIP_DTYPE_COUNT
} chip_dtype_t;

typedef struct {
  int cores;                        /* cube cores (AIC) per die; SMs on a GPU */
  int fractal_mkn[3];               /* fp16/bf16 fractal M,K,N computed per issue */
  int fractal_mkn_int8[3];          /* int8 fractal M,K,N */
  double macs_per_cycle[CHIP_DTYPE_COUNT]; /* per core, by chip_dtype_t; 0 = unsupported */
  uint64_t l0a_bytes;               /* left-operand buffer */
  uint64_t l0b_bytes;               /* right-operand buffer */
  uint64_t l0c_bytes;               /* accumulator buffer */
  uint64_t l1_bytes;                /* staging buffer fed by MTE2 */
  double mte1_l0a_bytes_per_cycle;  /* L1 -> L0A */
  double mte1_l0b_bytes_per_cycle;  /* L1 -> L0B */
  double mte2_bytes_per_cycle;      /* GM -> L1, per-core port limit */
  double fixpipe_bytes_per_cycle;   /* L0C -> GM */
  double step_overhead_cycles;      /* pipe handshake per k-step of a tile */
  double op_overhead_s;             /* launch + scalar cost of one cube op */
  bool stream_k;                    /* the matmul library may spread k-steps over the cores */
} chip_cube_cfg_t;

typedef struct {
  int cores;                        /* vector cores (AIV) per die */
  double bytes_per_cycle;           /* vector ALU width per core */
  uint64_t ub_bytes;                /* unified buffer per core */
  double mte2_bytes_per_cycle;      /* GM -> UB, per-core port limit */
  double mte3_bytes_per_cycle;      /* UB -> GM, per-core port limit */
  double step_overhead_cycles;      /* pipe handshake per UB tile */
  double op_overhead_s;             /* launch + scalar cost of one vector op */
  double special_per_cycle;         /* exp/rsqrt/tanh results per cycle; 0 = fp32 lane rate */
  double overlap_with_cube;         /* share of attention's softmax hidden under the cube */
  /* memory-level parallelism (Little's law): a core streams at most the bytes it keeps in
   * flight per load latency; 0 bytes: not modelled */
  double load_latency_s;          /* a global load's latency under streaming load */
  double bytes_in_flight;         /* per core and input stream, with full-width loads */
  double load_vector_bytes;       /* the widest load per thread; 0: loads are never narrower */
  double rowwise_bytes_in_flight; /* per core, for an unfused kernel that loops over its rows */
  double mlp_blend_exponent;      /* p in (t_hbm^p + t_mlp^p)^(1/p); 0: the larger of the two */
  double host_issue_s;            /* host time to issue one unfused (eager) kernel */
  double host_wrapper_s;          /* more per call of a Python functional wrapper (F.*) */
} chip_vector_cfg_t;

/* How the chip's fused attention kernels are cut and launched (attention.c). */
typedef struct {
  double fwd_block_q, fwd_block_kv; /* forward tile: query rows x key rows */
  double bwd_block_q, bwd_block_kv; /* backward tile */
  double head_dim_granule;          /* head_dim padded up to a multiple of this */
  double dq_atomic_bytes_per_cycle; /* fp32 dQ reduce into L2 per core; 0 = overlapped store */
  double bwd_kernel_gap_s;          /* host gap before each backward kernel, run alone */
} chip_attention_cfg_t;

typedef struct {
  uint64_t size_bytes;              /* shared L2 capacity */
  double bw_bytes_per_s;            /* aggregate L2 read bandwidth */
} chip_l2_cfg_t;

typedef struct {
  uint64_t capacity_bytes;          /* HBM capacity per die */
  double bw_bytes_per_s;            /* peak HBM bandwidth per die */
  double efficiency;                /* achievable fraction of bw_bytes_per_s, (0, 1] */
} chip_hbm_cfg_t;

/* Power: what the die draws idle, and on top what its units draw when busy at
 * clock_hz. All 0: energy is not modelled (hw_models/power.h). */
typedef struct {
  double idle_W;                    /* powered, clocks up, nothing running */
  double active_W;                  /* more, while any op runs, whatever its pipes' shares */
  double cube_W;                    /* more, with every cube core busy */
  double vector_W;                  /* more, with every vector core busy */
  double hbm_J_per_byte;            /* per byte between HBM and the cores */
  double max_W;                     /* the board's power limit (TDP); 0: none */
  double clock_hz;                  /* clock cube_W and vector_W are stated at; 0: none */
  double clock_exponent;            /* unit power goes as clock^clock_exponent */
} chip_power_cfg_t;

typedef struct {
  char name[CHIP_NAME_MAX];         /* e.g. "ascend-910b2" */
  double freq_hz;                   /* core clock */
  double sustained_clock;           /* fraction of freq_hz held through a training step */
  int dies_per_package;             /* dies sharing one package; each die is a rank */
  chip_cube_cfg_t cube;
  chip_vector_cfg_t vector;
  chip_attention_cfg_t attention;
  chip_l2_cfg_t l2;
  chip_hbm_cfg_t hbm;
  chip_power_cfg_t power;
} chip_cfg_t;

/* Names as used on the command line and in JSON ("bf16"), indexed by chip_dtype_t. */
extern const char *const chip_dtype_names[CHIP_DTYPE_COUNT];

/* Name of a dtype as used on the command line and in JSON ("bf16"). */
const char *chip_dtype_name(chip_dtype_t dtype);

/* Parses a dtype name; returns 0 and sets *out, or -1 for an unknown name. */
int chip_dtype_parse(const char *name, chip_dtype_t *out);

/* Bytes one element of dtype occupies. */
int chip_dtype_bytes(chip_dtype_t dtype);

/* Dense cube peak in FLOP/s for dtype (2 FLOP per MAC); 0 when unsupported. */
double chip_cube_peak_flops(const chip_cfg_t *chip, chip_dtype_t dtype);

/* Vector peak in FLOP/s for dtype: lanes x 2 (FMA) x cores x clock. */
double chip_vector_peak_flops(const chip_cfg_t *chip, chip_dtype_t dtype);

/* HBM bandwidth the chip can sustain: peak x efficiency, bytes per second. */
double chip_hbm_effective_bw(const chip_cfg_t *chip);

/* The chip as a step of rank programs runs it (replay, train): at the clock it
 * holds through a step (freq_hz x sustained_clock), and with the host launching
 * kernels ahead of the device, so no host gap between an attention backward's
 * kernels (that gap is in a backward timed alone per call). */
chip_cfg_t chip_in_step(const chip_cfg_t *chip);

#endif
