/* replay_energy.h - the energy of a replayed step: every rank's chip (its
 * server's, cluster.node_types) idle through the step, its compute ops' dynamic energy and HBM traffic
 * (hw_models/power.h, at the clock the replay costed them), the cores' active_W
 * while a collective runs with no compute op beside it (exposed_comm_s), every byte on
 * every link at its class's energy per byte, and the scale-out switch ports
 * the job holds (cluster.scale_out.switch_port_W) through the step.
 *
 * Ops given by duration (trace compute ops) count as idle time: their units'
 * load is unknown. Link bytes are the replay's link figures: complete in the
 * analytic fidelity; in flow with representatives only the simulated traffic
 * (replay.h), so links_J is then a lower bound. */
#ifndef NPUSIM_REPLAY_ENERGY_H
#define NPUSIM_REPLAY_ENERGY_H

#include "replay.h"

typedef struct {
  bool modelled;    /* every chip of the job has a power model */
  double idle_J;    /* every rank's idle power over the step */
  double compute_J; /* cube and vector units above idle */
  double hbm_J;     /* HBM traffic */
  double links_J;   /* bytes on links */
  double total_J;
} replay_energy_t;

void replay_energy(const system_cfg_t *sys, const trace_t *t, const replay_result_t *r,
                   replay_energy_t *out);

#endif
