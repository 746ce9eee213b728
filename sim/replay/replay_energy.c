/* replay_energy.c - a step's energy from its ops and link figures; see
 * replay_energy.h. */
#include "replay_energy.h"

#include <stdlib.h>
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

/* How many ranks of program pi carry chip index k (all of them without node types). */
static int ranks_on_chip(const system_cfg_t *sys, const trace_program_t *p, const topo_t *topo,
                         int k) {
  if (sys->cluster.node_types.n == 0)
    return k == 0 ? p->nranks : 0;
  int n = 0;
  for (int m = 0; m < p->nranks; m++)
    n += config_server_chip_index(sys, topo_server_of(topo, p->ranks[m])) == k;
  return n;
}

/* Energy of the cores occupied by program pi's collectives on chip k where no
 * compute op runs beside them (power.h's active_W: NCCL/HCCL collectives are
 * kernels on the cores; under compute the cores are already counted). */
static double active_comm_J(const system_cfg_t *sys, const chip_cfg_t *chip,
                            const trace_program_t *p, const replay_result_t *r, int k) {
  if (chip->power.active_W <= 0)
    return 0;
  double s = 0;
  for (int m = 0; m < p->nranks; m++) {
    int rank = p->ranks[m];
    bool on_k = sys->cluster.node_types.n == 0
                    ? k == 0
                    : config_server_chip_index(sys, topo_server_of(&r->topo, rank)) == k;
    if (on_k)
      s += r->per_rank[rank].exposed_comm_s;
  }
  return s * chip->power.active_W * power_unit_scale(chip, chip->freq_hz);
}

void replay_energy(const system_cfg_t *sys, const trace_t *t, const replay_result_t *r,
                   replay_energy_t *out) {
  memset(out, 0, sizeof *out);
  int nchips = sys->cluster.node_types.n + 1;
  int *count = calloc((size_t)nchips * (size_t)(t->nprograms + 1), sizeof *count);
  if (!count)
    return;
  /* count[k * nprograms + pi]: ranks of program pi on chip k; every chip a rank
   * carries must have a power model */
  bool modelled = true;
  for (int k = 0; k < nchips; k++)
    for (int pi = 0; pi < t->nprograms; pi++) {
      int n = ranks_on_chip(sys, &t->programs[pi], &r->topo, k);
      count[k * t->nprograms + pi] = n;
      modelled = modelled && (n == 0 || power_modelled(config_chip_at(sys, k)));
    }
  out->modelled = modelled;
  for (int k = 0; modelled && k < nchips; k++) {
    chip_cfg_t chip = chip_in_step(config_chip_at(sys, k)); /* as the replay costed it */
    op_cache_t *cache = op_cache_new(&chip);
    int ranks = 0;
    for (int pi = 0; cache && pi < t->nprograms; pi++) {
      int n = count[k * t->nprograms + pi];
      ranks += n;
      if (n == 0)
        continue;
      double compute, hbm;
      program_energy(&chip, cache, &t->programs[pi], &compute, &hbm);
      out->compute_J += compute * n + active_comm_J(sys, &chip, &t->programs[pi], r, k);
      out->hbm_J += hbm * n;
    }
    op_cache_free(cache);
    if (ranks > 0)
      out->idle_J += chip.power.idle_W * r->step_time_s * ranks;
  }
  free(count);
  if (!modelled)
    return;
  for (int slot = 0; slot < r->links.nslots; slot++)
    out->links_J += r->links.bytes[slot] * r->topo.links[slot / 2].cfg.energy_J_per_byte;
  out->links_J += (double)topo_switch_ports(&r->topo) * sys->cluster.scale_out.switch_port_W *
                  r->step_time_s;
  out->total_J = out->idle_J + out->compute_J + out->hbm_J + out->links_J;
}
