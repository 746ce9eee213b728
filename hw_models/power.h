/* power.h - the energy a chip spends, from what the op model says it did.
 *
 * A die draws its idle power whenever it is on; on top, each unit draws its
 * full-load power scaled by the share of the op's time it is busy (the op
 * model's per-pipe utilisation: cube, vector), and every byte to or from HBM
 * costs its energy on its whole way between the DRAM and the cores (DRAM, PHY,
 * L2 and on-chip network, load units; scripts/validate_energy.py fits it). So
 * a GEMM bound by the cube draws near cube_W, a decode step bound by HBM draws
 * idle plus the bytes it streams. Not modelled: unit power scaling with the
 * clock an op runs at, and throttling at the power limit (the model's clock is
 * the sustained one), which leave H100 serving power 15-18% low near the limit,
 * and let an op keeping cube and vector busy at once (fused attention) pass
 * max_W where a chip would throttle; leakage rising with temperature; the host
 * and the fans.
 * Link energy is per byte on each link class (link_cfg_t.energy_J_per_byte).
 * Nothing here knows about SimGrid. */
#ifndef NPUSIM_POWER_H
#define NPUSIM_POWER_H

#include <stdbool.h>

#include "op.h"

/* Whether the chip has a power model (any parameter above 0). */
bool power_modelled(const chip_cfg_t *chip);

/* Joules an op spends above idle: its units' busy power over its time and
 * its HBM bytes. */
double power_op_dynamic_J(const chip_cfg_t *chip, const op_result_t *r);

/* Watts the die draws running the op back to back: idle plus dynamic. */
double power_op_W(const chip_cfg_t *chip, const op_result_t *r);

#endif
