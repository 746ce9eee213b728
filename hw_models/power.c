/* power.c - chip energy from op results; see power.h. */
#include "power.h"

bool power_modelled(const chip_cfg_t *chip) {
  const chip_power_cfg_t *p = &chip->power;
  return p->idle_W > 0 || p->cube_W > 0 || p->vector_W > 0 || p->hbm_J_per_byte > 0;
}

double power_op_dynamic_J(const chip_cfg_t *chip, const op_result_t *r) {
  const chip_power_cfg_t *p = &chip->power;
  return r->time_s * (p->cube_W * r->util[PIPE_CUBE] + p->vector_W * r->util[PIPE_VECTOR]) +
         r->hbm_bytes * p->hbm_J_per_byte;
}

double power_op_W(const chip_cfg_t *chip, const op_result_t *r) {
  return chip->power.idle_W + (r->time_s > 0 ? power_op_dynamic_J(chip, r) / r->time_s : 0);
}
