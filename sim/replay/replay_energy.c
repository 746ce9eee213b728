/* replay_energy.c - a step's energy from its ops and link figures; see
 * replay_energy.h. */
#include "replay_energy.h"

#include <string.h>

#include "op_cost.h"
#include "power.h"

/* Dynamic compute and HBM energy of one run of program pi's shaped ops. */
static void program_energy(const chip_cfg_t *chip, op_cache_t *cache, const trace_program_t *p,
                           double *compute_J, double *hbm_J) {
  *compute_J = *hbm_J = 0;
  for (int i = 0; i < p->nops; i++) {
    if (p->ops[i].type != TRACE_OP_SHAPED)
      continue;
    op_desc_t d;
    replay_op_desc(&p->ops[i], &d);
    const op_result_t *res = op_cost(cache, &d);
    double hbm = res->hbm_bytes * chip->power.hbm_J_per_byte;
    *hbm_J += hbm;
    *compute_J += power_op_dynamic_J(chip, res) - hbm;
  }
}

void replay_energy(const system_cfg_t *sys, const trace_t *t, const replay_result_t *r,
                   replay_energy_t *out) {
  memset(out, 0, sizeof *out);
  if (!power_modelled(&sys->chip))
    return;
  out->modelled = true;
  chip_cfg_t chip = sys->chip; /* the clock the replay costed compute at (replay_plan.c) */
  chip.freq_hz *= chip.sustained_clock;
  op_cache_t *cache = op_cache_new(&chip);
  for (int pi = 0; cache && pi < t->nprograms; pi++) {
    double compute, hbm;
    program_energy(&chip, cache, &t->programs[pi], &compute, &hbm);
    out->compute_J += compute * t->programs[pi].nranks;
    out->hbm_J += hbm * t->programs[pi].nranks;
  }
  op_cache_free(cache);
  out->idle_J = chip.power.idle_W * r->step_time_s * t->ranks;
  for (int slot = 0; slot < r->links.nslots; slot++)
    out->links_J += r->links.bytes[slot] * r->topo.links[slot / 2].cfg.energy_J_per_byte;
  out->links_J += (double)topo_switch_ports(&r->topo) * sys->cluster.scale_out.switch_port_W *
                  r->step_time_s;
  out->total_J = out->idle_J + out->compute_J + out->hbm_J + out->links_J;
}
