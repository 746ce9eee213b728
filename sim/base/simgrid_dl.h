/* simgrid_dl.h - SimGrid's C API, opened when a run first needs it.
 *
 * Linking libsimgrid costs every process about 30 ms before main (100 ms
 * under AddressSanitizer): the static constructors of SimGrid and of the ns-3
 * libraries it depends on. Only the flow fidelity and the actors engine run
 * SimGrid, yet every `npusim op`, analytic `coll`, `train` or `serve` paid it,
 * three times what the run itself takes, in every point of a sweep. So npusim
 * does not link SimGrid: simgrid_dl_open, called by the one place that starts
 * a simulation (coll_flow_start) and by --version, opens it with dlopen and
 * fills a table with the functions listed here.
 *
 * The files that call SimGrid include this header instead of SimGrid's. It
 * includes SimGrid's headers (the types and the prototypes, which type the
 * table), then makes each listed name a call through the table, so the call
 * sites read as SimGrid's own API. A SimGrid function used without being
 * listed fails the build (npusim links no libsimgrid to resolve it), and so
 * does a listed one that SimGrid's headers define inline (the table is typed
 * by the exported function; sg_actor_start is the one such case npusim uses).
 *
 * The table is process-wide, as the library it mirrors is: SimGrid's engine is
 * global and runs once per process (coll_flow.c). It is filled once and only
 * read after. */
#ifndef NPUSIM_SIMGRID_DL_H
#define NPUSIM_SIMGRID_DL_H

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/cond.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <simgrid/version.h>

#include "npu_err.h"

/* every SimGrid function npusim calls */
#define SIMGRID_DL_FUNCTIONS(X) \
  X(sg_actor_init) \
  X(sg_actor_self) \
  X(sg_actor_self_get_data) \
  X(sg_actor_set_data) \
  X(sg_actor_set_host) \
  X(sg_actor_sleep_for) \
  X(sg_actor_sleep_until) \
  X(sg_actor_start_) \
  X(sg_barrier_destroy) \
  X(sg_barrier_init) \
  X(sg_barrier_wait) \
  X(sg_comm_detach) \
  X(sg_comm_test) \
  X(sg_comm_unref) \
  X(sg_comm_wait) \
  X(sg_comm_wait_all) \
  X(sg_comm_wait_all_for) \
  X(sg_cond_destroy) \
  X(sg_cond_init) \
  X(sg_cond_notify_one) \
  X(sg_cond_wait) \
  X(sg_host_by_name) \
  X(sg_host_self) \
  X(sg_mailbox_by_name) \
  X(sg_mailbox_get) \
  X(sg_mailbox_get_async) \
  X(sg_mailbox_put) \
  X(sg_mailbox_put_async) \
  X(sg_mailbox_put_init) \
  X(sg_mutex_destroy) \
  X(sg_mutex_init) \
  X(sg_mutex_lock) \
  X(sg_mutex_unlock) \
  X(sg_version_get) \
  X(simgrid_get_clock) \
  X(simgrid_init) \
  X(simgrid_load_platform) \
  X(simgrid_run)

typedef struct {
#define SIMGRID_DL_POINTER(name) __typeof__(name) *name;
  SIMGRID_DL_FUNCTIONS(SIMGRID_DL_POINTER)
#undef SIMGRID_DL_POINTER
} simgrid_dl_t;

extern simgrid_dl_t simgrid_dl;

/* Opens SimGrid and fills simgrid_dl, once per process; 0, or -1 with err
 * naming the library and why it could not be opened. */
int simgrid_dl_open(npu_err_t *err);

#ifndef SIMGRID_DL_TABLE /* simgrid_dl.c fills the table by these names */
#define sg_actor_init (simgrid_dl.sg_actor_init)
#define sg_actor_self (simgrid_dl.sg_actor_self)
#define sg_actor_self_get_data (simgrid_dl.sg_actor_self_get_data)
#define sg_actor_set_data (simgrid_dl.sg_actor_set_data)
#define sg_actor_set_host (simgrid_dl.sg_actor_set_host)
#define sg_actor_sleep_for (simgrid_dl.sg_actor_sleep_for)
#define sg_actor_sleep_until (simgrid_dl.sg_actor_sleep_until)
/* SimGrid's header defines sg_actor_start inline over sg_actor_start_ */
#define sg_actor_start(actor, code, argc, argv) \
  (simgrid_dl.sg_actor_start_((actor), (code), (argc), (const char *const *)(argv)))
#define sg_barrier_destroy (simgrid_dl.sg_barrier_destroy)
#define sg_barrier_init (simgrid_dl.sg_barrier_init)
#define sg_barrier_wait (simgrid_dl.sg_barrier_wait)
#define sg_comm_detach (simgrid_dl.sg_comm_detach)
#define sg_comm_test (simgrid_dl.sg_comm_test)
#define sg_comm_unref (simgrid_dl.sg_comm_unref)
#define sg_comm_wait (simgrid_dl.sg_comm_wait)
#define sg_comm_wait_all (simgrid_dl.sg_comm_wait_all)
#define sg_comm_wait_all_for (simgrid_dl.sg_comm_wait_all_for)
#define sg_cond_destroy (simgrid_dl.sg_cond_destroy)
#define sg_cond_init (simgrid_dl.sg_cond_init)
#define sg_cond_notify_one (simgrid_dl.sg_cond_notify_one)
#define sg_cond_wait (simgrid_dl.sg_cond_wait)
#define sg_host_by_name (simgrid_dl.sg_host_by_name)
#define sg_host_self (simgrid_dl.sg_host_self)
#define sg_mailbox_by_name (simgrid_dl.sg_mailbox_by_name)
#define sg_mailbox_get (simgrid_dl.sg_mailbox_get)
#define sg_mailbox_get_async (simgrid_dl.sg_mailbox_get_async)
#define sg_mailbox_put (simgrid_dl.sg_mailbox_put)
#define sg_mailbox_put_async (simgrid_dl.sg_mailbox_put_async)
#define sg_mailbox_put_init (simgrid_dl.sg_mailbox_put_init)
#define sg_mutex_destroy (simgrid_dl.sg_mutex_destroy)
#define sg_mutex_init (simgrid_dl.sg_mutex_init)
#define sg_mutex_lock (simgrid_dl.sg_mutex_lock)
#define sg_mutex_unlock (simgrid_dl.sg_mutex_unlock)
#define sg_version_get (simgrid_dl.sg_version_get)
#define simgrid_get_clock (simgrid_dl.simgrid_get_clock)
#define simgrid_init (simgrid_dl.simgrid_init)
#define simgrid_load_platform (simgrid_dl.simgrid_load_platform)
#define simgrid_run (simgrid_dl.simgrid_run)
#endif

#endif
