/* coll_cfg.c - the collectives' config names and the algorithms' capability
 * table, with the rules and texts that read it: the config rule for a forced
 * algorithm, --algo parsing and the help text.
 *
 * The table states capabilities, not costs: a row says where an algorithm may
 * be forced and which building blocks its emitter builds (tests/unit/sim/coll/test_coll.c
 * checks the prims column against coll_algo_emit). Two limits stay with the
 * emitters: nb builds only uniform all-to-all blocks (not alltoallv, nor the
 * aggregated blocks of a multi-server all-to-all), and the in-switch reduction
 * needs the switch endpoint the planner gives it. */
#include "coll_cfg.h"

#include <string.h>

#include "topo.h"

#define AT(l) (1u << (l))
#define EVERY_LEVEL (AT(0) | AT(1) | AT(2))
#define BUILDS(p) (1u << (p))
#define REDUCING_BLOCKS                                                                       \
  (BUILDS(PRIM_RS) | BUILDS(PRIM_AG) | BUILDS(PRIM_AR) | BUILDS(PRIM_BCAST) | BUILDS(PRIM_REDUCE))
#define EVERY_BLOCK (REDUCING_BLOCKS | BUILDS(PRIM_A2A))

const char *const coll_library_names[COLL_LIB_COUNT] = {"hccl", "nccl"};
const char *const coll_progress_names[COLL_PROGRESS_COUNT] = {"auto", "phase", "rank"};
const char *const coll_proto_names[COLL_PROTO_COUNT] = {"ll", "ll128", "simple"};

bool coll_rank_paced(coll_progress_t progress, const topo_t *topo) {
  return progress == COLL_PROGRESS_RANK ||
         (progress == COLL_PROGRESS_AUTO && topo_ecmp_hashed(topo));
}

double coll_nvls_chunk_bytes(const coll_nvls_t *nv, double n, int heads) {
  double lanes = (double)nv->channels * heads, c = nv->chunk_bytes;
  static const struct { double rows, chunk; } shrink[] = {{64, 65536}, {8, 32768}, {2, 16384}};
  for (size_t i = 0; i < sizeof shrink / sizeof shrink[0]; i++)
    if (n < shrink[i].rows * lanes * c && c > shrink[i].chunk)
      c = shrink[i].chunk;
  return c;
}

/* The capability table. Adding an algorithm: its enum value, a row here, its
 * emitter in coll_algos.c (and, if "auto" should pick it, a rule in
 * coll_select.c). */
static const coll_algo_caps_t algo_table[COLL_ALGO_COUNT] = {
    [COLL_ALGO_AUTO] = {.name = "auto", .what = "keeps the library's choice",
                        .levels = EVERY_LEVEL},
    [COLL_ALGO_MESH] = {.name = "mesh", .what = "sends to every peer at once",
                        .levels = AT(0), .prims = EVERY_BLOCK, .all_pairs = true},
    [COLL_ALGO_RING] = {.name = "ring", .what = "passes blocks around a ring",
                        .levels = EVERY_LEVEL, .prims = REDUCING_BLOCKS},
    [COLL_ALGO_HD] = {.name = "hd", .what = "halves and doubles the distance (recursive "
                      "halving-doubling)", .levels = EVERY_LEVEL, .prims = REDUCING_BLOCKS},
    [COLL_ALGO_NHR] = {.name = "nhr", .what = "sends the largest blocks to the nearest ranks",
                       .levels = EVERY_LEVEL, .prims = REDUCING_BLOCKS},
    [COLL_ALGO_NB] = {.name = "nb", .what = "sends min(2^k, p-2^k) blocks in step k "
                      "(nonuniform Bruck)", .levels = EVERY_LEVEL, .prims = EVERY_BLOCK},
    [COLL_ALGO_PAIRWISE] = {.name = "pairwise", .what = "exchanges with one peer a step",
                            .levels = EVERY_LEVEL, .prims = BUILDS(PRIM_A2A)},
    [COLL_ALGO_TREE] = {.name = "tree", .what = "pipelines two mirrored binary trees",
                        .levels = EVERY_LEVEL,
                        .prims = BUILDS(PRIM_AR) | BUILDS(PRIM_BCAST) | BUILDS(PRIM_REDUCE)},
    [COLL_ALGO_PIPELINE] = {.name = "pipeline", .what = "overlaps server and cluster links",
                            .levels = AT(1), .prims = BUILDS(PRIM_AR), .composed = true,
                            .only_for = "allreduce over 2+ servers (no supernode level) with "
                                        "2+ ranks per node"},
    [COLL_ALGO_NVLS] = {.name = "nvls", .what = "reduces in the scale-up switch",
                        .levels = AT(0), .prims = BUILDS(PRIM_AR), .in_switch = true,
                        .only_for = "an allreduce inside one server"},
    [COLL_ALGO_ONESHOT] = {.name = "oneshot", .what = "reads every peer's whole buffer and "
                           "reduces it locally (serving engines' small all-reduce)",
                           .levels = AT(0), .prims = BUILDS(PRIM_AR), .all_pairs = true,
                           .only_for = "an allreduce inside one server"},
    [COLL_ALGO_TWOSHOT] = {.name = "twoshot", .what = "reduce-scatters then all-gathers by "
                           "peer-to-peer reads (serving engines' mid-size all-reduce)",
                           .levels = AT(0), .prims = BUILDS(PRIM_AR), .all_pairs = true,
                           .only_for = "an allreduce inside one server"},
};

const coll_algo_caps_t *coll_algo_caps(coll_algo_t algo) { return &algo_table[algo]; }

const char *coll_algo_name(int i) { return algo_table[i].name; }

int coll_algo_parse(const char *name) {
  for (int i = 0; i < COLL_ALGO_COUNT; i++)
    if (strcmp(name, algo_table[i].name) == 0)
      return i;
  return -1;
}

bool coll_algo_builds(coll_algo_t algo, coll_prim_t prim) {
  return (algo_table[algo].prims & BUILDS(prim)) != 0;
}

/* ---- the config rule ---- */

/* Scale-ups that link every pair of a server's NPUs directly. */
static bool links_all_pairs(scale_up_kind_t kind) {
  return kind == SCALE_UP_FULL_MESH || kind == SCALE_UP_SWITCH;
}

/* "a full_mesh or switch": the scale-ups that link every pair. */
static void all_pairs_kinds(char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "a");
  const char *sep = " ";
  for (int k = 0; k < SCALE_UP_COUNT && used < len; k++)
    if (links_all_pairs((scale_up_kind_t)k)) {
      used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, topology_scale_up_names[k]);
      sep = " or ";
    }
}

/* The levels of a mask, "0" or "1, 2". */
static void level_list(unsigned levels, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int l = 0; l < COLL_LEVELS && used < len; l++)
    if (levels & AT(l))
      used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? ", " : "", l);
}

static int level_refusal(const coll_algo_caps_t *c, int level, char *why, size_t len) {
  if (c->levels == AT(0))
    return snprintf(why, len, "an algorithm that runs between servers (\"%s\" works inside "
                    "one), found \"%s\"", c->name, c->name), -1;
  char at[16];
  level_list(c->levels, at, sizeof at);
  return snprintf(why, len, "\"%s\" only at level %s (it %s), found it at level %d", c->name, at,
                  c->what, level), -1;
}

int coll_algo_check_forced(coll_algo_t algo, int level, scale_up_kind_t kind, bool reduces,
                           char *why, size_t why_len) {
  const coll_algo_caps_t *c = &algo_table[algo];
  if (!(c->levels & AT(level)))
    return level_refusal(c, level, why, why_len);
  if (c->in_switch && !reduces)
    return snprintf(why, why_len, "a switch with node.scale_up.in_switch_reduction = true for "
                    "\"%s\", found \"%s\" without it", c->name, c->name), -1;
  if (c->all_pairs && !links_all_pairs(kind)) {
    char kinds[64];
    all_pairs_kinds(kinds, sizeof kinds);
    return snprintf(why, why_len, "\"%s\" only on %s scale-up, found it on a %s", c->name, kinds,
                    topology_scale_up_names[kind]), -1;
  }
  return 0;
}

/* ---- --algo ---- */

/* "auto, mesh, ..., nvls": every name of the table. */
static void name_list(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < COLL_ALGO_COUNT && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", algo_table[i].name);
}

int coll_apply_algo(const char *text, bool multi_level, coll_cfg_t *cfg, npu_err_t *err) {
  char buf[128], names[160];
  snprintf(buf, sizeof buf, "%s", text);
  coll_algo_t given[COLL_LEVELS];
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int found = coll_algo_parse(tok);
    if (found < 0 || n == COLL_LEVELS) {
      name_list(names, sizeof names);
      return npu_err_set(err, "algo: expected up to %d of %s separated by ',', found "
                      "\"%.60s\"", COLL_LEVELS, names, text), -1;
    }
    given[n++] = (coll_algo_t)found;
  }
  if (n == 0)
    return npu_err_set(err, "algo: expected an algorithm name, found \"\""), -1;
  if (n == 1)
    cfg->algo[multi_level ? 1 : 0] = given[0];
  else
    for (int l = 0; l < n; l++)
      cfg->algo[l] = given[l];
  return 0;
}

/* ---- help ---- */

/* The ops a building block serves, as the user names them. */
static const char *const prim_ops[PRIM_COUNT] = {"reducescatter", "allgather", "allreduce",
                                                 "broadcast",     "reduce",    "alltoall"};

#define HELP_WIDTH 88  /* columns of the help text */
#define HELP_INDENT 12 /* where a row's text starts */

/* Prints text from column HELP_INDENT, wrapped at spaces to HELP_WIDTH. */
static void print_wrapped(FILE *f, const char *text) {
  int col = HELP_INDENT;
  while (*text) {
    size_t word = strcspn(text, " ");
    if (col > HELP_INDENT && col + 1 + (int)word > HELP_WIDTH) {
      fprintf(f, "\n%*s", HELP_INDENT, "");
      col = HELP_INDENT;
    } else if (col > HELP_INDENT) {
      fputc(' ', f);
      col++;
    }
    fprintf(f, "%.*s", (int)word, text);
    col += (int)word;
    text += word + strspn(text + word, " ");
  }
  fputc('\n', f);
}

/* "allreduce, broadcast": the ops of the blocks in prims. */
static void op_list(unsigned prims, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int p = 0; p < PRIM_COUNT && used < len; p++)
    if (prims & BUILDS(p))
      used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", prim_ops[p]);
}

static void print_row(FILE *f, const coll_algo_caps_t *c) {
  char at[16], ops[96], kinds[64], text[512];
  level_list(c->levels, at, sizeof at);
  op_list(c->prims, ops, sizeof ops);
  all_pairs_kinds(kinds, sizeof kinds);
  int used = snprintf(text, sizeof text, "%s; level%s %s; %s%s", c->what,
                      strchr(at, ',') ? "s" : "", at, c->only_for ? "only for " : "",
                      c->only_for ? c->only_for : ops);
  if (c->in_switch)
    used += snprintf(text + used, sizeof text - used, "; needs node.scale_up.in_switch_reduction");
  if (c->all_pairs)
    snprintf(text + used, sizeof text - used, "; needs %s scale-up", kinds);
  fprintf(f, "  %-*s", HELP_INDENT - 2, c->name);
  print_wrapped(f, text);
}

void coll_algo_print_help(FILE *f) {
  fprintf(f, "\nalgorithms (--algo, collectives.levelN_algorithm; level 0 inside a server, 1 "
             "between\nservers, 2 between supernodes): what each does, the levels a config may "
             "force it at,\nthe ops it runs:\n");
  for (int i = 1; i < COLL_ALGO_COUNT; i++)
    print_row(f, &algo_table[i]);
}
