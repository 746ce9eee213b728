/* test_config.c - the config loader: every error class with its exact line,
 * extends chains, --set overrides, defaults, unit conversion, round trips. */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "test_util.h"

#define BASE910B "{\"extends\": \"ascend-910b.json\""

static system_cfg_t sys;
static workload_cfg_t wl;

static void expect_sys_error(const char *text, const char *const *sets, const char *expected) {
  const char *got = load_text(CONFIG_SYSTEM, SYSTEMS_DIR, text, sets, &sys);
  CU_ASSERT_STRING_EQUAL(got, expected);
  if (strcmp(got, expected) != 0)
    fprintf(stderr, "\n  expected: %s\n  got:      %s\n", expected, got);
}

static void test_shipped_systems_and_workloads_all_load(void) {
  const char *dirs[2] = {SYSTEMS_DIR, WORKLOADS_DIR};
  int loaded[2] = {0, 0};
  for (int kind = 0; kind < 2; kind++) {
    DIR *d = opendir(dirs[kind]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strstr(e->d_name, ".json"))
        continue;
      char path[512];
      snprintf(path, sizeof path, "%s/%s", dirs[kind], e->d_name);
      npu_err_t err = {{0}};
      config_doc_t *doc = config_doc_load((config_kind_t)kind, path, &err);
      int rc = doc ? config_doc_resolve(doc, kind ? (void *)&wl : (void *)&sys, &err) : -1;
      CU_ASSERT_EQUAL(rc, 0);
      if (rc)
        fprintf(stderr, "\n  %s\n", err.msg);
      loaded[kind] += rc == 0;
      config_doc_free(doc);
    }
    closedir(d);
  }
  CU_ASSERT(loaded[0] >= 5); /* the five shipped systems of issue #2 */
  CU_ASSERT(loaded[1] >= 1);
}

static void test_units_are_converted_once_into_base_units(void) {
  CU_ASSERT_STRING_EQUAL(load_text(CONFIG_SYSTEM, SYSTEMS_DIR, BASE910B "}", NULL, &sys), "");
  CU_ASSERT_DOUBLE_EQUAL(sys.chip.freq_hz, 1.8e9, 1);
  CU_ASSERT_EQUAL(sys.chip.cube.l1_bytes, 512u * 1024);
  CU_ASSERT_EQUAL(sys.chip.hbm.capacity_bytes, 64ull << 30);
  CU_ASSERT_EQUAL(sys.chip.l2.size_bytes, 192ull << 20);
  CU_ASSERT_DOUBLE_EQUAL(sys.node.scale_up.link.bw_bytes_per_s, 28e9, 1);
  CU_ASSERT_DOUBLE_EQUAL(sys.node.scale_up.link.latency_s, 0.5e-6, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(sys.cluster.scale_out.nic.bw_bytes_per_s, 25e9, 1);
  CU_ASSERT_DOUBLE_EQUAL(sys.coll.buffer_bytes, 200.0 * 1024 * 1024, 1);
  CU_ASSERT_EQUAL(sys.node.scale_up.kind, SCALE_UP_FULL_MESH);
  CU_ASSERT_EQUAL(sys.coll.library, COLL_LIB_HCCL);
  CU_ASSERT_EQUAL(sys.chip.cube.fractal_mkn_int8[1], 32);
  CU_ASSERT_FALSE(sys.cluster.has_supernode);
}

static void test_defaults_fill_missing_keys(void) {
  /* kv_heads defaults to heads ("=model.heads"); the rest to the table's values. */
  CU_ASSERT_STRING_EQUAL(load_text(CONFIG_WORKLOAD, WORKLOADS_DIR,
                                   "{\"model\": {\"name\": \"m\", \"layers\": 2, \"hidden\": 64, "
                                   "\"heads\": 4, \"ffn_hidden\": 256, \"vocab\": 100, "
                                   "\"seq_len\": 8}, \"training\": {\"global_batch\": 4}}",
                                   NULL, &wl),
                         "");
  CU_ASSERT_EQUAL(wl.model.kv_heads, 4);
  CU_ASSERT_EQUAL(wl.parallel.dp, 1);
  CU_ASSERT_EQUAL(wl.parallel.order[0], PAR_DIM_TP);
  CU_ASSERT_EQUAL(wl.parallel.order[3], PAR_DIM_PP);
  CU_ASSERT_EQUAL(wl.training.grad_bucket_bytes, 80ull << 20);
  CU_ASSERT_TRUE(wl.training.flash_attention);
  CU_ASSERT_FALSE(wl.model.has_moe);
}

static void test_unknown_key_is_named_with_a_suggestion(void) {
  expect_sys_error(BASE910B ", \"chip\": {\"freq_ghz\": 2}}", NULL,
                   "t.json: chip.freq_ghz: expected a key of chip, found unknown key "
                   "\"freq_ghz\" (did you mean \"freq_GHz\"?)");
  expect_sys_error(BASE910B ", \"nodes\": 2}", NULL,
                   "t.json: nodes: expected a key of the top level, found unknown key \"nodes\" "
                   "(did you mean \"node\"?)");
  expect_sys_error(BASE910B ", \"chip\": {\"hbm\": {\"speed\": 2}}}", NULL,
                   "t.json: chip.hbm.speed: expected a key of chip.hbm, found unknown key "
                   "\"speed\"");
}

static void test_wrong_type_and_range_are_reported(void) {
  expect_sys_error(BASE910B ", \"chip\": {\"cube\": {\"cores\": \"24\"}}}", NULL,
                   "t.json: chip.cube.cores: expected an integer in [1, 4096], found \"24\"");
  expect_sys_error(BASE910B ", \"chip\": {\"cube\": {\"cores\": 24.5}}}", NULL,
                   "t.json: chip.cube.cores: expected an integer in [1, 4096], found 24.5");
  expect_sys_error(BASE910B ", \"chip\": {\"cube\": {\"cores\": 0}}}", NULL,
                   "t.json: chip.cube.cores: expected an integer in [1, 4096], found 0");
  expect_sys_error(BASE910B ", \"chip\": {\"hbm\": {\"bandwidth_GBps\": -1}}}", NULL,
                   "t.json: chip.hbm.bandwidth_GBps: expected a number in [1, 1000000], "
                   "found -1");
  expect_sys_error(BASE910B ", \"chip\": {\"hbm\": {\"efficiency\": 1.5}}}", NULL,
                   "t.json: chip.hbm.efficiency: expected a number in [0.01, 1], found 1.5");
  expect_sys_error(BASE910B ", \"chip\": {\"hbm\": {\"bandwidth_GBps\": 1e400}}}", NULL,
                   "t.json: chip.hbm.bandwidth_GBps: expected a number in [1, 1000000], "
                   "found inf");
  expect_sys_error(BASE910B ", \"chip\": {\"hbm\": 3}}", NULL,
                   "t.json: chip.hbm: expected an object, found 3");
  expect_sys_error(BASE910B ", \"node\": {\"scale_up\": {\"in_switch_reduction\": 1}}}", NULL,
                   "t.json: node.scale_up.in_switch_reduction: expected true or false, found 1");
  expect_sys_error(BASE910B ", \"node\": {\"scale_up\": {\"topology\": \"mesh\"}}}", NULL,
                   "t.json: node.scale_up.topology: expected one of \"full_mesh\", "
                   "\"two_group_mesh\", \"switch\", \"ring\", found \"mesh\"");
  expect_sys_error(BASE910B ", \"chip\": {\"cube\": {\"fractal_mkn\": [16, 16]}}}", NULL,
                   "t.json: chip.cube.fractal_mkn: expected an array of 3 integers in [1, 1024], "
                   "found an array of 2");
  expect_sys_error(BASE910B ", \"chip\": {\"cube\": {\"l1_KiB\": 1.0001}}}", NULL,
                   "t.json: chip.cube.l1_KiB: expected a number in [1, 10000000] (a whole "
                   "number of bytes), found 1.0001");
  /* no rate so small that a time derived from it overflows to inf */
  expect_sys_error(BASE910B ", \"chip\": {\"hbm\": {\"bandwidth_GBps\": 1e-300}}}", NULL,
                   "t.json: chip.hbm.bandwidth_GBps: expected a number in [1, 1000000], "
                   "found 1e-300");
  expect_sys_error(BASE910B ", \"chip\": {\"cube\": {\"fp8_macs_per_cycle\": 1e-9}}}", NULL,
                   "t.json: chip.cube.fp8_macs_per_cycle: expected a number 0 or in [1, "
                   "10000000], found 1e-09");
  expect_sys_error(BASE910B ", \"name\": \"\"}", NULL,
                   "t.json: name: expected a string of 1 to 63 characters, found \"\"");
}

static void test_missing_required_key_is_named(void) {
  expect_sys_error("{\"name\": \"x\"}", NULL,
                   "t.json: chip.name: expected a string of 1 to 63 characters (required), found "
                   "no such key");
  expect_sys_error("{}", NULL,
                   "t.json: name: expected a string of 1 to 63 characters (required), found no "
                   "such key");
}

static void test_syntax_errors_give_line_and_column(void) {
  expect_sys_error("{\n  \"a\": 1,\n  \"b\": [1, 2,, 3]\n}", NULL,
                   "t.json:3:14: expected valid JSON, found ','");
  expect_sys_error("{\"a\": 1", NULL, "t.json:1:8: expected valid JSON, found the end of the file");
  expect_sys_error("", NULL, "t.json:1:1: expected valid JSON, found the end of the file");
  expect_sys_error("{} x", NULL, "t.json:1:4: expected valid JSON, found 'x'");
  expect_sys_error("[1, 2]", NULL, "t.json: (top level): expected a JSON object, found an array of 2");
  expect_sys_error("{\"a\": {\"k\": 1, \"k\": 2}}", NULL,
                   "t.json: a.k: expected each key once, found \"k\" twice");
  npu_err_t err;
  const char nul_text[] = "{\"a\":\0 1}";
  CU_ASSERT_PTR_NULL(config_doc_parse(CONFIG_SYSTEM, "t.json", SYSTEMS_DIR, nul_text,
                                      sizeof nul_text - 1, &err));
  CU_ASSERT_STRING_EQUAL(err.msg, "t.json:1:6: expected JSON text, found a NUL byte");
}

static void test_oversized_config_is_refused_quickly(void) {
  /* 20000 values: far beyond any real config; refused before any per-key work. */
  size_t cap = 20000 * 16 + 16, used = 0;
  char *text = malloc(cap);
  used += (size_t)snprintf(text, cap, "{");
  for (int i = 0; i < 20000; i++)
    used += (size_t)snprintf(text + used, cap - used, "%s\"k%d\": %d", i ? "," : "", i, i);
  snprintf(text + used, cap - used, "}");
  expect_sys_error(text, NULL, "t.json: (top level): expected at most 10000 JSON values in a "
                               "config and the files it extends, found 20001");
  free(text);
}

static void test_missing_file_is_reported(void) {
  npu_err_t err;
  CU_ASSERT_PTR_NULL(config_doc_load(CONFIG_SYSTEM, "no/such.json", &err));
  CU_ASSERT_STRING_EQUAL(err.msg, "no/such.json: expected a readable system config file, found "
                                  "No such file or directory");
  CU_ASSERT_PTR_NULL(config_doc_load(CONFIG_SYSTEM, SYSTEMS_DIR, &err));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "found a directory"));
}

static void test_extends_chain_merges_with_child_winning(void) {
  const char *dir = make_temp_dir();
  char text[512], path[512];
  snprintf(text, sizeof text,
           "{\"extends\": \"%s/ascend-910b.json\", \"chip\": {\"freq_GHz\": 2.0, "
           "\"cube\": {\"cores\": 30}}}", SYSTEMS_DIR);
  write_file(dir, "b.json", text);
  write_file(dir, "a.json", "{\"extends\": \"b.json\", \"chip\": {\"cube\": {\"cores\": 20}}}");
  snprintf(path, sizeof path, "%s/a.json", dir);
  npu_err_t err;
  config_doc_t *doc = config_doc_load(CONFIG_SYSTEM, path, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  CU_ASSERT_EQUAL_FATAL(config_doc_resolve(doc, &sys, &err), 0);
  CU_ASSERT_EQUAL(sys.chip.cube.cores, 20);          /* a wins over b */
  CU_ASSERT_DOUBLE_EQUAL(sys.chip.freq_hz, 2e9, 1);   /* b wins over the base */
  CU_ASSERT_EQUAL(sys.chip.vector.cores, 48);         /* from the base */
  char *csv = rows_csv(doc);
  char want[640];
  snprintf(want, sizeof want, "system,chip.freq_GHz,2,GHz,%s/b.json,\n", dir);
  CU_ASSERT_PTR_NOT_NULL(strstr(csv, want)); /* origin b, and the base's note is dropped */
  snprintf(want, sizeof want, "system,chip.cube.cores,20,,%s,\n", path);
  CU_ASSERT_PTR_NOT_NULL(strstr(csv, want));
  snprintf(want, sizeof want, "system,chip.vector.cores,48,,%s/ascend-910b.json,[C]", SYSTEMS_DIR);
  CU_ASSERT_PTR_NOT_NULL(strstr(csv, want));
  CU_ASSERT_PTR_NOT_NULL(strstr(csv, "system,chip.dies_per_package,1,,default,\n"));
  free(csv);
  config_doc_free(doc);
  remove_temp_dir(dir);
}

static void test_extends_cycles_and_bad_targets_are_errors(void) {
  const char *dir = make_temp_dir();
  char path[512], want[1024];
  write_file(dir, "a.json", "{\"extends\": \"b.json\"}");
  write_file(dir, "b.json", "{\"extends\": \"a.json\"}");
  snprintf(path, sizeof path, "%s/a.json", dir);
  npu_err_t err;
  CU_ASSERT_PTR_NULL(config_doc_load(CONFIG_SYSTEM, path, &err));
  snprintf(want, sizeof want,
           "%s/b.json: extends: expected a chain without cycles, found %s/a.json -> %s/b.json -> "
           "%s/a.json", dir, dir, dir, dir);
  CU_ASSERT_STRING_EQUAL(err.msg, want);
  write_file(dir, "self.json", "{\"extends\": \"self.json\"}");
  snprintf(path, sizeof path, "%s/self.json", dir);
  CU_ASSERT_PTR_NULL(config_doc_load(CONFIG_SYSTEM, path, &err));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "expected a chain without cycles"));
  remove_temp_dir(dir);

  expect_sys_error("{\"extends\": \"nope.json\"}", NULL,
                   "t.json: extends: expected a readable file, found \"nope.json\" (No such file "
                   "or directory)");
  expect_sys_error("{\"extends\": 3}", NULL,
                   "t.json: extends: expected the path of a config file, found 3");
}

static void test_set_overrides_are_typed_and_recorded(void) {
  const char *sets[] = {"chip.hbm.bandwidth_GBps=3200", "chip.cube.fractal_mkn=16,32,16",
                        "node.scale_up.in_switch_reduction=false",
                        "collectives.level1_algorithm=ring", NULL};
  npu_err_t err;
  config_doc_t *doc = load_text_doc(CONFIG_SYSTEM, SYSTEMS_DIR, BASE910B "}", sets, &sys, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  CU_ASSERT_DOUBLE_EQUAL(sys.chip.hbm.bw_bytes_per_s, 3.2e12, 1);
  CU_ASSERT_EQUAL(sys.chip.cube.fractal_mkn[1], 32);
  CU_ASSERT_EQUAL(sys.coll.algo[1], COLL_ALGO_RING);
  char *csv = rows_csv(doc);
  CU_ASSERT_PTR_NOT_NULL(strstr(csv, "system,chip.hbm.bandwidth_GBps,3200,GB/s,--set,\n"));
  free(csv);
  config_doc_free(doc);

  const char *set2[] = {"chip.cube.fractal_mkn=[16,16,8]", NULL};
  CU_ASSERT_STRING_EQUAL(load_text(CONFIG_SYSTEM, SYSTEMS_DIR, BASE910B "}", set2, &sys), "");
  CU_ASSERT_EQUAL(sys.chip.cube.fractal_mkn[2], 8);
}

static void test_set_rejects_unknown_paths_and_bad_values(void) {
  const char *s1[] = {"chip.hbm.bandwith_GBps=3200", NULL};
  expect_sys_error(BASE910B "}", s1,
                   "--set: chip.hbm.bandwith_GBps: expected a key of chip.hbm, found unknown key "
                   "\"bandwith_GBps\" (did you mean \"bandwidth_GBps\"?)");
  const char *s2[] = {"chip.hbm.bandwidth_GBps=fast", NULL};
  expect_sys_error(BASE910B "}", s2,
                   "--set: chip.hbm.bandwidth_GBps: expected a number in [1, 1000000], found "
                   "\"fast\"");
  const char *s3[] = {"chip.hbm=3", NULL};
  expect_sys_error(BASE910B "}", s3,
                   "--set: chip.hbm: expected a value key, found the section \"chip.hbm\"");
  const char *s4[] = {"chip.hbm.bandwidth_GBps", NULL};
  expect_sys_error(BASE910B "}", s4,
                   "--set: expected PATH=VALUE (e.g. chip.hbm.bandwidth_GBps=3200), found "
                   "\"chip.hbm.bandwidth_GBps\"");
  const char *s5[] = {"chip.cube.cores=-3", NULL};
  expect_sys_error(BASE910B "}", s5,
                   "--set: chip.cube.cores: expected an integer in [1, 4096], found -3");
  const char *s6[] = {"node.scale_up.in_switch_reduction=yes", NULL};
  expect_sys_error(BASE910B "}", s6,
                   "--set: node.scale_up.in_switch_reduction: expected true or false, found "
                   "\"yes\"");
  const char *s7[] = {"chip.cube.fractal_mkn=16,16", NULL};
  expect_sys_error(BASE910B "}", s7,
                   "--set: chip.cube.fractal_mkn: expected an array of 3 integers in [1, 1024], "
                   "found \"16,16\"");
  /* An optional section created by --set still needs its required keys. */
  const char *s8[] = {"cluster.supernode.npus=16", NULL};
  expect_sys_error(BASE910B "}", s8,
                   "t.json: cluster.supernode.link_bandwidth_GBps: expected a number in [0.01, "
                   "1000000] (required), found no such key");
}

static void test_set_paths_route_to_their_config(void) {
  npu_err_t err;
  CU_ASSERT_EQUAL(config_kind_of_path("chip.hbm.bandwidth_GBps=1", &err), CONFIG_SYSTEM);
  CU_ASSERT_EQUAL(config_kind_of_path("parallel.tp=8", &err), CONFIG_WORKLOAD);
  CU_ASSERT_EQUAL(config_kind_of_path("modle.layers=8", &err), -1);
  CU_ASSERT_STRING_EQUAL(err.msg, "--set: modle: expected a key of the system or workload "
                                  "config, found unknown key \"modle\" (did you mean \"model\"?)");
}

static void test_source_notes_must_be_strings_on_known_keys(void) {
  expect_sys_error(BASE910B ", \"chip\": {\"freq_GHz_source\": 3}}", NULL,
                   "t.json: chip.freq_GHz_source: expected a string (where freq_GHz comes from), "
                   "found 3");
  expect_sys_error(BASE910B ", \"chip\": {\"speed_source\": \"x\"}}", NULL,
                   "t.json: chip.speed_source: expected a key of chip, found unknown key "
                   "\"speed_source\"");
}

/* Resolves text, prints it canonically, loads that back: same structs, same text. */
static void assert_round_trip(config_kind_t kind, const char *dir, const char *text) {
  union {
    system_cfg_t s;
    workload_cfg_t w;
  } first, second;
  npu_err_t err;
  config_doc_t *a = load_text_doc(kind, dir, text, NULL, &first, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  char *json_a = config_doc_json_string(a);
  config_doc_t *b = load_text_doc(kind, dir, json_a, NULL, &second, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  char *json_b = config_doc_json_string(b);
  CU_ASSERT_STRING_EQUAL(json_a, json_b);
  CU_ASSERT_EQUAL(memcmp(&first, &second, kind == CONFIG_SYSTEM ? sizeof first.s : sizeof first.w),
                  0);
  free(json_a);
  free(json_b);
  config_doc_free(a);
  config_doc_free(b);
}

static void test_canonical_json_loads_back_to_the_same_config(void) {
  const char *systems[] = {"ascend-910b", "ascend-910a", "ascend-910c-cm384", "a100-dgx",
                           "h100-dgx"};
  for (size_t i = 0; i < sizeof systems / sizeof systems[0]; i++) {
    char text[128];
    snprintf(text, sizeof text, "{\"extends\": \"%s.json\"}", systems[i]);
    assert_round_trip(CONFIG_SYSTEM, SYSTEMS_DIR, text);
  }
  assert_round_trip(CONFIG_SYSTEM, SYSTEMS_DIR,
                    BASE910B ", \"chip\": {\"freq_GHz\": 1.23456789012345, \"hbm\": "
                             "{\"efficiency\": 0.1}}}");
  assert_round_trip(CONFIG_WORKLOAD, WORKLOADS_DIR, "{\"extends\": \"llama2-70b.json\"}");
}

CU_TestInfo config_tests[] = {
    {"shipped systems and workloads all load", test_shipped_systems_and_workloads_all_load},
    {"units are converted once into base units", test_units_are_converted_once_into_base_units},
    {"defaults fill missing keys", test_defaults_fill_missing_keys},
    {"unknown key is named with a suggestion", test_unknown_key_is_named_with_a_suggestion},
    {"wrong type and range are reported", test_wrong_type_and_range_are_reported},
    {"missing required key is named", test_missing_required_key_is_named},
    {"syntax errors give line and column", test_syntax_errors_give_line_and_column},
    {"missing file is reported", test_missing_file_is_reported},
    {"oversized config is refused quickly", test_oversized_config_is_refused_quickly},
    {"extends chain merges with child winning", test_extends_chain_merges_with_child_winning},
    {"extends cycles and bad targets are errors", test_extends_cycles_and_bad_targets_are_errors},
    {"--set overrides are typed and recorded", test_set_overrides_are_typed_and_recorded},
    {"--set rejects unknown paths and bad values", test_set_rejects_unknown_paths_and_bad_values},
    {"--set paths route to their config", test_set_paths_route_to_their_config},
    {"source notes must be strings on known keys", test_source_notes_must_be_strings_on_known_keys},
    {"canonical json loads back to the same config",
     test_canonical_json_loads_back_to_the_same_config},
    CU_TEST_INFO_NULL,
};
