/* cmd_validate.c - `npusim validate` (resolved configs, with provenance and the
 * figures derived from them) and `npusim schema` (the key reference). */
#include <stdio.h>

#include "commands.h"

static void print_derived_system(FILE *out, const system_cfg_t *s) {
  const chip_cfg_t *c = &s->chip;
  fprintf(out, "\nderived from the system config:\n");
  for (int d = 0; d < CHIP_DTYPE_COUNT; d++) {
    double peak = chip_cube_peak_flops(c, (chip_dtype_t)d);
    if (peak > 0) {
      char what[40];
      snprintf(what, sizeof what, "cube peak %s per die", chip_dtype_name((chip_dtype_t)d));
      fprintf(out, "  %-34s %10.1f T%s/s\n", what, peak / 1e12,
              d == CHIP_DTYPE_INT8 ? "OP" : "FLOP");
    }
  }
  fprintf(out, "  %-34s %10.1f TFLOP/s\n", "vector peak fp16 per die",
          chip_vector_peak_flops(c, CHIP_DTYPE_FP16) / 1e12);
  fprintf(out, "  %-34s %10.1f GB/s\n", "HBM bandwidth x efficiency",
          chip_hbm_effective_bw(c) / 1e9);
  fprintf(out, "  %-34s %10.1f GB/s\n", "scale-up line rate per NPU",
          topology_scale_up_bw_per_npu(&s->node) / 1e9);
  if (topology_links_per_peer(&s->node) > 0)
    fprintf(out, "  %-34s %10d\n", "scale-up links per peer", topology_links_per_peer(&s->node));
  const scale_out_cfg_t *so = &s->cluster.scale_out;
  double nic_Bps = so->nics_per_npu * so->nic.bw_bytes_per_s;
  fprintf(out, "  %-34s %10.1f GB/s\n", "scale-out line rate per NPU", nic_Bps / 1e9);
  if (so->npus_per_pod > 0) /* what each NPU of a full pod gets across the core */
    fprintf(out, "  %-34s %10.1f GB/s\n", "core line rate per NPU of a pod",
            nic_Bps / so->oversubscription / so->pod_oversubscription / 1e9);
}

static void print_derived_workload(FILE *out, const system_cfg_t *s, const workload_cfg_t *w) {
  long world = workload_world_size(w);
  long nodes = s->cluster.nodes > 0 ? s->cluster.nodes
                                    : (world + s->node.npus - 1) / s->node.npus;
  fprintf(out, "\nderived from the workload config:\n");
  fprintf(out, "  %-34s %10ld\n", "NPUs (dp x tp x pp x cp)", world);
  fprintf(out, "  %-34s %10ld\n", "servers", nodes);
  fprintf(out, "  %-34s %10ld\n", "micro-batches per step per pipeline",
          workload_grad_accum_steps(w));
}

int cmd_validate(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  cli_configs_t cfg;
  if (cli_load_configs(opts, &cfg, err))
    return -1;
  /* refused before a byte is written: JSON that would not load back */
  if (opts->format == FORMAT_JSON && config_doc_json_loadable(cfg.sys_doc, err)) {
    cli_free_configs(&cfg);
    return -1;
  }
  switch (opts->format) {
  case FORMAT_JSON:
    if (cfg.wl_doc) {
      fputs("{\n  \"system\": ", out);
      config_doc_print_json(cfg.sys_doc, out, 1);
      fputs(",\n  \"workload\": ", out);
      config_doc_print_json(cfg.wl_doc, out, 1);
      fputs("\n}\n", out);
    } else {
      config_doc_print_json(cfg.sys_doc, out, 0);
      fputc('\n', out);
    }
    break;
  case FORMAT_CSV:
    config_doc_print_rows(cfg.sys_doc, out, true);
    if (cfg.wl_doc)
      config_doc_print_rows(cfg.wl_doc, out, true);
    break;
  default:
    fprintf(out, "system config %s: ok\n\n", opts->system_path);
    config_doc_print_rows(cfg.sys_doc, out, false);
    print_derived_system(out, &cfg.sys);
    if (cfg.wl_doc) {
      fprintf(out, "\nworkload config %s: ok\n\n", opts->workload_path);
      config_doc_print_rows(cfg.wl_doc, out, false);
      print_derived_workload(out, &cfg.sys, &cfg.wl);
    }
    break;
  }
  cli_free_configs(&cfg);
  return 0;
}

int cmd_schema(const cli_opts_t *opts, FILE *out, npu_err_t *err) {
  (void)err; /* the command table allows table and json only */
  if (opts->format == FORMAT_JSON)
    config_schema_print_json(out);
  else
    config_schema_print_markdown(out);
  return 0;
}

const cli_option_t cmd_validate_options[] = {
    CLI_GROUP(cli_options_system), CLI_GROUP(cli_options_workload), CLI_GROUP(cli_options_set),
    CLI_GROUP(cli_options_format), CLI_GROUP(cli_options_output),   CLI_END};

const cli_option_t cmd_schema_options[] = {CLI_GROUP(cli_options_format),
                                           CLI_GROUP(cli_options_output), CLI_END};
