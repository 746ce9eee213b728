/* chip.c - derived peak figures of one die; see chip.h. */
#include "chip.h"

#include <string.h>

const char *const chip_dtype_names[CHIP_DTYPE_COUNT] = {"fp16", "bf16", "fp32", "int8", "fp8"};
static const int dtype_bytes[CHIP_DTYPE_COUNT] = {2, 2, 4, 1, 1};

const char *chip_dtype_name(chip_dtype_t dtype) {
  return (dtype >= 0 && dtype < CHIP_DTYPE_COUNT) ? chip_dtype_names[dtype] : "?";
}

int chip_dtype_parse(const char *name, chip_dtype_t *out) {
  for (int i = 0; i < CHIP_DTYPE_COUNT; i++) {
    if (strcmp(name, chip_dtype_names[i]) == 0) {
      *out = (chip_dtype_t)i;
      return 0;
    }
  }
  return -1;
}

int chip_dtype_bytes(chip_dtype_t dtype) {
  return (dtype >= 0 && dtype < CHIP_DTYPE_COUNT) ? dtype_bytes[dtype] : 0;
}

double chip_cube_peak_flops(const chip_cfg_t *chip, chip_dtype_t dtype) {
  return 2.0 * chip->cube.macs_per_cycle[dtype] * chip->cube.cores * chip->freq_hz;
}

double chip_vector_peak_flops(const chip_cfg_t *chip, chip_dtype_t dtype) {
  /* The vector ALU is bytes_per_cycle wide; an FMA counts as two FLOP per lane. */
  double lanes = chip->vector.bytes_per_cycle / chip_dtype_bytes(dtype);
  return 2.0 * lanes * chip->vector.cores * chip->freq_hz;
}

double chip_hbm_effective_bw(const chip_cfg_t *chip) {
  return chip->hbm.bw_bytes_per_s * chip->hbm.efficiency;
}

chip_cfg_t chip_in_step(const chip_cfg_t *chip) {
  chip_cfg_t c = *chip;
  c.freq_hz *= c.sustained_clock;
  c.attention.bwd_kernel_gap_s = 0;
  return c;
}
