/* power.c - chip power from op results; see power.h. */
#include "power.h"

#include <math.h>

bool power_modelled(const chip_cfg_t *chip) {
  const chip_power_cfg_t *p = &chip->power;
  return p->idle_W > 0 || p->active_W > 0 || p->cube_W > 0 || p->vector_W > 0 || p->hbm_J_per_byte > 0;
}

bool power_throttles(const chip_cfg_t *chip) {
  return power_modelled(chip) && chip->power.max_W > 0 && chip->power.clock_hz > 0;
}

double power_unit_scale(const chip_cfg_t *chip, double clock_hz) {
  const chip_power_cfg_t *p = &chip->power;
  if (p->clock_hz <= 0 || clock_hz <= 0)
    return 1;
  return pow(clock_hz / p->clock_hz, p->clock_exponent);
}

double power_op_dynamic_J(const chip_cfg_t *chip, const op_result_t *r) {
  const chip_power_cfg_t *p = &chip->power;
  double units_W =
      p->active_W + p->cube_W * r->util[PIPE_CUBE] + p->vector_W * r->util[PIPE_VECTOR];
  return r->time_s * units_W * power_unit_scale(chip, r->clock_hz) +
         r->hbm_bytes * p->hbm_J_per_byte;
}

double power_op_W(const chip_cfg_t *chip, const op_result_t *r) {
  return chip->power.idle_W + (r->time_s > 0 ? power_op_dynamic_J(chip, r) / r->time_s : 0);
}
