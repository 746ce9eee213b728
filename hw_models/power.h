/* power.h - the power a chip draws running an op, and the clock it throttles to.
 *
 * A die draws its idle power whenever it is on; on top, each unit draws its
 * full-load power scaled by the share of the op's time it is busy (the op
 * model's per-pipe utilisation: cube, vector) and by the clock the op runs at,
 * and every byte to or from HBM costs its energy on its whole way between the
 * DRAM and the cores (DRAM, PHY, L2 and on-chip network, load units;
 * tests/validation/validate_energy.py fits it):
 *
 *   P = idle_W + (f / clock)^k (active_W + cube_W u_cube + vector_W u_vector) + E_byte B / t
 *
 * active_W is what the cores draw above idle whenever an op runs, whatever its
 * pipes' busy shares: a memory-bound kernel keeps every SM clocked and occupied
 * (clock tree, warp issue, register files, L1/L2 of stalled warps), which the
 * per-unit and per-byte terms do not count (0 on chips whose per-byte energy was
 * fitted with this folded in, as h100-dgx's). Every op time counts as active;
 * the time between ops (engine overhead, waits) draws idle_W only.
 * active_W, cube_W and vector_W are stated at chip.power.clock_GHz; dynamic power goes as
 * f V^2 and the voltage rises with the clock over the upper part of the DVFS
 * range, so unit power scales as f^k, k = chip.power.clock_exponent [A]. The
 * shipped configs state cube_W so that a dense 8192^3 GEMM at chip.freq_GHz,
 * where it delivers the measured TFLOP/s, draws exactly max_W [A: dense GEMMs
 * run at the power limit].
 *
 * Throttling: an op whose power at the chip's clock passes max_W runs at the
 * highest clock at which it stays within max_W (op_model in op_cost.c finds
 * it). Its compute (cycles) stretches with the clock; its
 * HBM time and launch overhead do not. max_W = 0 or clock_GHz = 0: no
 * throttling. Not modelled: leakage rising with temperature, a limit averaged
 * over a window (a chip may exceed max_W for milliseconds; every op here is held
 * to it on its own), the memory clock, the host and the fans.
 * Link energy is per byte on each link class (link_cfg_t.energy_J_per_byte).
 * Nothing here knows about SimGrid. SimGrid's host energy plugin is not used: it
 * gives a host's power from its CPU load and pstate while SimGrid executes its
 * work, whereas npusim's ops are costed by the chip model outside SimGrid (the
 * analytic replay, serve and the op memo never run them on SimGrid hosts), and
 * the power here needs what that plugin has no place for: each pipe's busy
 * share, the HBM bytes and the throttled clock of every op. */
#ifndef NPUSIM_POWER_H
#define NPUSIM_POWER_H

#include <stdbool.h>

#include "op.h"

/* The lowest clock a throttled op runs at, as a fraction of the chip's [A: far
 * below what the shipped configs' ops reach]. An op still above max_W there
 * (idle and its HBM traffic alone pass it) runs there and draws more. */
#define POWER_MIN_CLOCK_FRACTION 0.2

/* Whether the chip has a power model (any parameter above 0). */
bool power_modelled(const chip_cfg_t *chip);

/* Whether ops are held to max_W by lowering their clock: a power model, a
 * limit and the clock unit power is stated at. */
bool power_throttles(const chip_cfg_t *chip);

/* Factor on active_W, cube_W and vector_W at clock_hz: (clock_hz / chip.power.clock)^k;
 * 1 when the chip states no clock. */
double power_unit_scale(const chip_cfg_t *chip, double clock_hz);

/* Joules an op spends above idle: its units' busy power at the clock it ran at
 * (r->clock_hz) over its time, and its HBM bytes. */
double power_op_dynamic_J(const chip_cfg_t *chip, const op_result_t *r);

/* Watts the die draws running the op back to back: idle plus dynamic. */
double power_op_W(const chip_cfg_t *chip, const op_result_t *r);

#endif
