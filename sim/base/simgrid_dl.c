/* simgrid_dl.c - SimGrid opened at first use; see simgrid_dl.h. */
#define SIMGRID_DL_TABLE
#include "simgrid_dl.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

simgrid_dl_t simgrid_dl;

int simgrid_dl_open(npu_err_t *err) {
  static bool opened = false;
  if (opened)
    return 0;
  /* RTLD_GLOBAL: SimGrid's plugins and ns-3 resolve against it */
  void *lib = dlopen(NPUSIM_SIMGRID_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    npu_err_set(err, "SimGrid: expected the library %s (the flow fidelity and the actors engine "
                "run on it), found: %s", NPUSIM_SIMGRID_LIBRARY, dlerror());
    return -1;
  }
#define SIMGRID_DL_FILL(name)                                                              \
  {                                                                                        \
    void *symbol = dlsym(lib, #name);                                                      \
    if (!symbol) {                                                                         \
      npu_err_set(err, "SimGrid: expected the function %s in %s, found none", #name,       \
                  NPUSIM_SIMGRID_LIBRARY);                                                 \
      return -1;                                                                           \
    }                                                                                      \
    memcpy(&simgrid_dl.name, &symbol, sizeof symbol); /* ISO C has no object-to-function cast */ \
  }
  SIMGRID_DL_FUNCTIONS(SIMGRID_DL_FILL)
#undef SIMGRID_DL_FILL
  opened = true;
  return 0;
}

#ifdef NPUSIM_SANITIZE
/* LeakSanitizer (GCC 12) faults in its tracer while scanning the thread-local
 * storage of a library opened with dlopen (SimGrid's, after an actors run),
 * and the whole leak check is lost. Not scanning thread-local storage can only
 * report more leaks, never hide one (npusim keeps nothing there). It then
 * reports two blocks of the dynamic loader's own: the scope array of the
 * dlopen (glibc's dl-open.c, add_to_global_resize) and SimGrid's thread-local
 * block (__tls_get_addr). They are suppressed by the loader's module name, not
 * by function name: matching a function name symbolizes the stack, and that
 * took 0.2 s of every SimGrid run's exit (the tests run with symbolize=0,
 * tests/CMakeLists.txt). npusim allocates nothing through the loader. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) {
  return "use_tls=0:print_suppressions=0";
}
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:ld-linux\n";
}
#endif
