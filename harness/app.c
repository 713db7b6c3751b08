/* The driver: every argument is checked (flags, regex, model file, byte-table inputs, output paths,
 * Google Benchmark's own flags) before the GPU is touched; then context, ceilings, run, outputs. A
 * SIGINT during the run writes what finished, marked incomplete (harness/interrupt.h). */
#include "app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bytes_table.h"
#include "ceiling.h"
#include "cli.h"
#include "context.h"
#include "gbench_shim.h"
#include "interrupt.h"
#include "nvml.h"
#include "output_file.h"
#include "params.h"
#include "results.h"
#include "run_ctx.h"
#include "techniques.h"
#include "topo.h"
#include "version.h"

typedef struct km_app {
  const km_case_table *const *tables;
  size_t ntables;
  km_options opts;
  km_filter *filter;
  km_model model;
  km_bytes_params bytes_params;
  km_selection sel;
  km_gpu_info gpu;
  km_run_ctx ctx;
  km_results results;
  int console; /* GB_CONSOLE_PLAIN or GB_CONSOLE_COLOR, from Google Benchmark's colour flag */
  char err[1024];
} km_app;

/* One line, always: a newline or other control character inside an argument or a config value is
 * printed as '?'. */
static int usage_error(const char *msg) {
  fputs("micro: ", stderr);
  for (const unsigned char *c = (const unsigned char *)msg; *c; c++) fputc(*c < 0x20 || *c == 0x7f ? '?' : *c, stderr);
  fputc('\n', stderr);
  return KM_EXIT_USAGE;
}

/* Everything that can be wrong with the input, checked with no GPU. */
static int check_arguments(km_app *a, int argc, char **argv) {
  km_options_default(&a->opts);
  if (km_options_parse(argc, argv, &a->opts, a->err, sizeof a->err)) return usage_error(a->err);
  if (a->opts.help || a->opts.version) return 0;
  if (a->opts.filter && km_filter_compile(a->opts.filter, &a->filter, a->err, sizeof a->err))
    return usage_error(a->err);
  const char *model = a->opts.model_path ? a->opts.model_path : "qwen3-8b";
  if (km_model_resolve(model, &a->model, a->err, sizeof a->err)) return usage_error(a->err);
  km_bytes_params_from_options(&a->opts, &a->bytes_params);
  km_table *probe = NULL;
  if (km_bytes_table_build(&a->model, &a->bytes_params, &probe, a->err, sizeof a->err)) return usage_error(a->err);
  km_table_free(probe);
  if (a->opts.tables != KM_TABLES_BYTES && !a->opts.list && a->model.num_kv_heads <= 0) {
    /* the measured cases size their buffers from the model's KV heads */
    snprintf(a->err, sizeof a->err, "--model %s has no attention layers: the measured cases need a KV shape (use "
             "--table bytes)", model);
    return usage_error(a->err);
  }
  if (a->opts.json_path && km_output_check_writable(a->opts.json_path, "--json", a->err, sizeof a->err))
    return usage_error(a->err);
  if (a->opts.params_path && km_output_check_writable(a->opts.params_path, "--params", a->err, sizeof a->err))
    return usage_error(a->err);
  /* Google Benchmark's own flags: argv[0] plus what followed "--" */
  /* colour codes only on a terminal; a flag after "--" still overrides it */
  static char no_color[] = "--benchmark_color=false";
  int plain = !isatty(STDOUT_FILENO);
  int gb_argc = a->opts.gb_argc + 1 + plain;
  char **gb_argv = calloc((size_t)gb_argc + 1, sizeof *gb_argv);
  if (!gb_argv) return usage_error("out of memory");
  gb_argv[0] = argv[0];
  if (plain) gb_argv[1] = no_color;
  for (int i = 0; i < a->opts.gb_argc; i++) gb_argv[i + 1 + plain] = a->opts.gb_argv[i];
  a->console = gb_color_wanted(gb_argc, gb_argv) ? GB_CONSOLE_COLOR : GB_CONSOLE_PLAIN;
  int rc = gb_init(gb_argc, gb_argv, a->err, sizeof a->err);
  free(gb_argv); /* Google Benchmark keeps copies of what it parsed */
  if (rc) return usage_error(a->err);
  if (km_select(a->tables, a->ntables, a->filter, a->opts.quick, &a->sel)) return usage_error("out of memory");
  return 0;
}

/* The byte table, with the measured host-to-device rate for the reload cost when the run has one. */
static km_table *bytes_table(km_app *a) {
  km_table *t = NULL;
  double h2d = 0;
  for (size_t i = 0; i < a->results.count; i++) {
    const km_result *r = &a->results.rows[i];
    double v = km_result_counter(r, "reload_gbps");
    if (!r->error && !r->skipped && v > h2d) h2d = v;
  }
  a->bytes_params.h2d_gbps = h2d;
  if (km_bytes_table_build(&a->model, &a->bytes_params, &t, a->err, sizeof a->err)) return NULL;
  return t;
}

/* The byte table as its JSON object (NULL with a.err set when it cannot be built). */
static cJSON *bytes_json(km_app *a) {
  km_table *bt = bytes_table(a);
  if (!bt) return NULL;
  cJSON *o = km_bytes_table_json(&a->model, &a->bytes_params, bt);
  km_table_free(bt);
  return o;
}

static cJSON *tables_json(km_app *a, int with_latency) {
  cJSON *tables = cJSON_CreateObject();
  cJSON *bytes = bytes_json(a);
  if (bytes) cJSON_AddItemToObject(tables, "bytes", bytes);
  if (with_latency) {
    km_table *lt = km_latency_table(&a->results);
    if (lt) {
      cJSON_AddItemToObject(tables, "latency", km_table_rows_json(lt));
      km_table_free(lt);
    }
    km_table *tt = km_techniques_table(bytes, &a->results, a->tables, a->ntables);
    if (tt) {
      cJSON_AddItemToObject(tables, "techniques", km_table_rows_json(tt));
      km_table_free(tt);
    }
  }
  return tables;
}

static void print_techniques_table(km_app *a, FILE *out) {
  cJSON *bytes = bytes_json(a);
  km_table *tt = km_techniques_table(bytes, &a->results, a->tables, a->ntables);
  if (tt) km_table_print(tt, a->opts.format, out);
  km_table_free(tt);
  cJSON_Delete(bytes);
}

/* Google Benchmark's context fields, so its tools read the file, plus gpu, host and build. */
static cJSON *context_json(km_app *a, int with_gpu) {
  cJSON *c = cJSON_CreateObject();
  char date[64], host[256] = "unknown";
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", localtime(&now));
  gethostname(host, sizeof host);
  cJSON_AddStringToObject(c, "date", date);
  cJSON_AddStringToObject(c, "host_name", host);
  cJSON_AddStringToObject(c, "executable", "micro");
  cJSON_AddNumberToObject(c, "num_cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
  cJSON_AddStringToObject(c, "library_build_type", "release");
  cJSON_AddStringToObject(c, "library_version", gb_library_version());
  if (with_gpu) {
    cJSON_AddBoolToObject(c, "incomplete", a->ctx.not_run > 0);
    if (a->ctx.not_run > 0) {
      char why[160];
      snprintf(why, sizeof why, "interrupted by SIGINT: %d case(s) not measured, left out of benchmarks", a->ctx.not_run);
      cJSON_AddStringToObject(c, "incomplete_reason", why);
    }
    cJSON_AddItemToObject(c, "gpu", km_context_gpu_json(&a->gpu, a->ctx.nvml, a->opts.smoke ? NULL : &a->ctx.ceilings));
    cJSON_AddItemToObject(c, "host", km_context_host_json(a->ctx.topo, &a->ctx.cpu));
  }
  cJSON_AddItemToObject(c, "build", km_context_build_json());
  cJSON_AddItemToObject(c, "model", km_model_json(&a->model));
  return c;
}

static int write_json_file(km_app *a, int with_gpu) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddItemToObject(doc, "context", context_json(a, with_gpu));
  cJSON_AddItemToObject(doc, "benchmarks", km_results_benchmarks_json(&a->results));
  cJSON_AddItemToObject(doc, "tables", tables_json(a, with_gpu));
  int rc = km_output_write_json(a->opts.json_path, doc, a->err, sizeof a->err);
  cJSON_Delete(doc);
  if (rc) fprintf(stderr, "micro: %s\n", a->err);
  return rc;
}

static int write_params_file(km_app *a, int with_gpu) {
  cJSON *gpu = km_context_gpu_json(&a->gpu, a->ctx.nvml, a->opts.smoke || !with_gpu ? NULL : &a->ctx.ceilings);
  int rc = km_params_write(a->opts.params_path, &a->results, &a->model, &a->bytes_params, gpu, a->err, sizeof a->err);
  cJSON_Delete(gpu);
  if (rc) fprintf(stderr, "micro: %s\n", a->err);
  return rc;
}

static int print_bytes_table(km_app *a, FILE *out) {
  km_table *t = bytes_table(a);
  if (!t) return usage_error(a->err);
  if (a->opts.format == KM_FORMAT_JSON) {
    cJSON *o = km_bytes_table_json(&a->model, &a->bytes_params, t);
    char *s = cJSON_Print(o);
    if (s) fprintf(out, "%s\n", s);
    free(s);
    cJSON_Delete(o);
  } else {
    km_table_print(t, a->opts.format, out);
  }
  km_table_free(t);
  return 0;
}

/* The byte table alone: no GPU, no benchmark. */
static int run_bytes_only(km_app *a) {
  int rc = print_bytes_table(a, stdout);
  if (rc == 0 && a->opts.json_path) rc = write_json_file(a, 0) ? KM_EXIT_FAILED : 0;
  return rc;
}

/* 1 when there is no usable device, with the reason in why. */
static int no_device(int *count, const char **why) {
  cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess || *count == 0) {
    *count = 0;
    *why = e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports none";
    return 1;
  }
  return 0;
}

/* Every selected case is CPU work (KM_CASE_HOST_ONLY): the run needs no device. */
static int selection_host_only(const km_selection *s) {
  for (size_t i = 0; i < s->count; i++)
    if (!(s->cases[i]->flags & KM_CASE_HOST_ONLY)) return 0;
  return s->count > 0;
}

/* Bind this thread to the GPU's nearest cpuset, so first-touch host memory lands on its NUMA node. */
static void bind_near_gpu(km_app *a) {
  if (!a->ctx.topo) return;
  hwloc_const_cpuset_t cs = km_topo_gpu_cpuset(a->ctx.topo);
  if (cs && hwloc_set_cpubind(km_topo_hwloc(a->ctx.topo), cs, HWLOC_CPUBIND_THREAD) != 0)
    fprintf(stderr, "note: could not bind to the GPU's cpuset; host buffers may sit on another NUMA node\n");
}

/* What every run needs, with a device or without one (host-only cases): the options, the model, the
 * sample count and the seeds. */
static void setup_run(km_app *a) {
  km_run_ctx *c = &a->ctx;
  c->opts = &a->opts;
  c->model = &a->model;
  c->samples = a->opts.smoke ? 1 : a->opts.quick ? KM_SAMPLES_QUICK : KM_SAMPLES_DEFAULT;
  c->seed_base = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
}

static int setup_device(km_app *a) {
  km_run_ctx *c = &a->ctx;
  setup_run(a);
  c->device = a->opts.device;
  cudaError_t e = cudaSetDevice(c->device);
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&c->prop, c->device);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    fprintf(stderr, "micro: device %d: %s\n", c->device, cudaGetErrorString(e));
    return KM_EXIT_FAILED;
  }
  if (km_gpu_info_query(c->device, &a->gpu, a->err, sizeof a->err)) {
    fprintf(stderr, "micro: %s\n", a->err);
    return KM_EXIT_FAILED;
  }
  c->topo = km_topo_load(a->gpu.pci_bus_id, a->err, sizeof a->err);
  if (!c->topo) fprintf(stderr, "note: %s; host rows will say so\n", a->err);
  c->link_gbps = c->topo ? km_topo_link_gbps(c->topo) : 0.0;
  bind_near_gpu(a);
  size_t free_b = 0, total_b = 0;
  e = cudaMemGetInfo(&free_b, &total_b);
  if (e != cudaSuccess) {
    fprintf(stderr, "micro: cudaMemGetInfo: %s\n", cudaGetErrorString(e));
    return KM_EXIT_FAILED;
  }
  c->ceiling_bytes = a->opts.smoke ? KM_SMOKE_BYTES : km_ceiling_bytes((size_t)c->prop.l2CacheSize, free_b);
  c->nvml = km_nvml_open(NULL, a->gpu.pci_bus_id);
  if (!c->nvml) {
    fprintf(stderr, "micro: out of memory\n");
    return KM_EXIT_FAILED;
  }
  const km_ceiling_set *sets[64];
  size_t nsets = 0;
  for (size_t i = 0; i < a->ntables && nsets < sizeof sets / sizeof sets[0]; i++)
    if (a->tables[i]->ceilings) sets[nsets++] = a->tables[i]->ceilings;
  km_ceiling_plan plan = {c->stream, c->ceiling_bytes, c->prop.multiProcessorCount, c->samples,
                          a->opts.smoke ? 0.0 : KM_MIN_SAMPLE_SECONDS, c->seed_base, sets, nsets,
                          !a->opts.smoke, c->link_gbps, a->gpu.theoretical_gbps};
  if (km_ceilings_measure(&plan, &c->ceilings, a->err, sizeof a->err)) {
    fprintf(stderr, "micro: %s\n", a->err);
    return KM_EXIT_FAILED;
  }
  c->ceiling_gbps = c->ceilings.c.copy_gbps;
  c->shares = !a->opts.smoke;
  a->gpu.ceiling_gbps = a->opts.smoke ? 0.0 : c->ceiling_gbps; /* a 16 MiB copy is L2's figure: not shown */
  return 0;
}

static void on_run(const gb_run *run, void *user) {
  km_app *a = user;
  /* what a SIGINT stopped did not finish: it is not a result */
  if (run->skipped && run->message && strstr(run->message, KM_INTERRUPTED_MESSAGE)) return;
  const km_case *c = km_find_case(a->tables, a->ntables, run->name);
  if (km_results_add(&a->results, run, c)) fprintf(stderr, "micro: out of memory keeping results\n");
}

static void add_gb_context(km_app *a) {
  char buf[64];
  if (a->gpu.name[0]) gb_add_context("gpu", a->gpu.name); /* not in a host-only run */
  if (a->gpu.ceiling_gbps > 0) { /* not in a smoke run */
    const struct { const char *key; double gbps; } ceilings[] = {{"ceiling_gbps", a->ctx.ceilings.c.copy_gbps},
                                                                 {"ceiling_read_gbps", a->ctx.ceilings.c.read_gbps},
                                                                 {"ceiling_write_gbps", a->ctx.ceilings.c.write_gbps}};
    for (size_t i = 0; i < sizeof ceilings / sizeof ceilings[0]; i++) {
      snprintf(buf, sizeof buf, "%.0f", ceilings[i].gbps);
      gb_add_context(ceilings[i].key, buf);
    }
  }
  km_gpu_identity id;
  if (km_nvml_identity(a->ctx.nvml, &id) == 0) {
    gb_add_context("gpu_uuid", id.uuid);
    gb_add_context("driver_release", id.driver);
  }
  gb_add_context("kvmicro_revision", km_build_revision());
}

static int run_benchmarks(km_app *a, int with_device) {
  int human = a->opts.format == KM_FORMAT_TEXT || a->opts.format == KM_FORMAT_MARKDOWN;
  FILE *info = human ? stdout : stderr;
  if (with_device) {
    int rc = setup_device(a);
    if (rc) return rc;
    km_host_cpu_query(&a->ctx.cpu);
    km_context_print_banner(&a->gpu, a->ctx.nvml, a->opts.smoke ? NULL : &a->ctx.ceilings, a->ctx.topo, &a->ctx.cpu,
                            info);
  } else {
    setup_run(a);
    fprintf(info, "host     no CUDA device: host-only cases, timed with the host clock\n");
  }
  if (a->opts.smoke)
    fprintf(info, "smoke    each case verified, then one warm-up and one timed launch; working sets cut to %zu MiB:\n"
                  "         the times below are not measurements\n",
            KM_SMOKE_BYTES >> 20);
  fflush(info);
  for (size_t i = 0; i < a->sel.count; i++)
    if (km_bench_register(&a->ctx, a->sel.cases[i])) {
      fprintf(stderr, "micro: could not register %s\n", a->sel.cases[i]->name);
      return KM_EXIT_FAILED;
    }
  add_gb_context(a);
  if (km_interrupt_install() != 0) fprintf(stderr, "note: no SIGINT handler: Ctrl-C will lose the results\n");
  if (gb_run_all(on_run, a, human ? a->console : GB_CONSOLE_NONE, a->err, sizeof a->err) < 0) {
    fprintf(stderr, "micro: %s\n", a->err);
    return KM_EXIT_FAILED;
  }
  if (human) fputc('\n', stdout);
  if (a->opts.smoke) {
    fprintf(info, "smoke run: %zu cases, %d failed, %d skipped\n", a->sel.count, a->ctx.errors, a->ctx.skips);
  } else if (a->opts.tables != KM_TABLES_BYTES && a->opts.tables != KM_TABLES_TECHNIQUES) {
    km_table *lt = km_latency_table(&a->results);
    if (lt) km_table_print(lt, a->opts.format, stdout);
    km_table_free(lt);
  }
  if (!a->opts.smoke && (a->opts.tables == KM_TABLES_TECHNIQUES || a->opts.tables == KM_TABLES_ALL)) {
    if (human) fputc('\n', stdout);
    print_techniques_table(a, stdout);
  }
  if (a->opts.tables == KM_TABLES_ALL) {
    if (human) fputc('\n', stdout);
    print_bytes_table(a, stdout);
  }
  if (a->opts.json_path && write_json_file(a, with_device)) return KM_EXIT_FAILED;
  if (a->opts.params_path && write_params_file(a, with_device)) return KM_EXIT_FAILED;
  if (a->ctx.errors) fprintf(stderr, "micro: %d case(s) failed their check or a CUDA call\n", a->ctx.errors);
  if (a->ctx.not_run) {
    fprintf(stderr, "micro: interrupted: %d case(s) not measured; what finished was written, marked incomplete\n",
            a->ctx.not_run);
    return KM_EXIT_INTERRUPTED;
  }
  return a->ctx.errors ? KM_EXIT_FAILED : KM_EXIT_OK;
}

static void app_free(km_app *a) { /* after gb_shutdown: the registrations are Google Benchmark's until then */
  km_bench_registrations_free(&a->ctx);
  km_selection_free(&a->sel);
  km_filter_free(a->filter);
  km_results_free(&a->results);
  if (a->ctx.stream) cudaStreamDestroy(a->ctx.stream);
  km_topo_free(a->ctx.topo);
  km_nvml_close(a->ctx.nvml);
}

/* The command whose flag (alone or as FLAG=VALUE) is on the command line, or NULL. */
static const km_command *command_wanted(int argc, char **argv, const km_command *const *commands, size_t n) {
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    for (size_t c = 0; c < n; c++) {
      size_t len = strlen(commands[c]->flag);
      if (strncmp(argv[i], commands[c]->flag, len) == 0 && (argv[i][len] == '\0' || argv[i][len] == '='))
        return commands[c];
    }
  return NULL;
}

int km_app_main(int argc, char **argv, const km_case_table *const *tables, size_t ntables,
                const km_command *const *commands, size_t ncommands) {
  const km_command *command = command_wanted(argc, argv, commands, ncommands);
  if (command) return command->main(argc, argv);
  km_app *a = calloc(1, sizeof *a);
  if (!a) return usage_error("out of memory");
  a->tables = tables;
  a->ntables = ntables;
  int rc = check_arguments(a, argc, argv);
  if (rc == 0 && a->opts.help) {
    km_options_usage(stdout);
    if (ncommands) fputs("\ncommands (each runs instead of the suite, with no GPU)\n", stdout);
    for (size_t c = 0; c < ncommands; c++) fputs(commands[c]->usage, stdout);
  } else if (rc == 0 && a->opts.version) {
    km_version_print("micro", stdout);
  } else if (rc == 0 && a->opts.list) {
    for (size_t i = 0; i < a->sel.count; i++) printf("%s\n", a->sel.cases[i]->name);
  } else if (rc == 0 && a->opts.tables == KM_TABLES_BYTES) {
    rc = run_bytes_only(a);
  } else if (rc == 0) {
    int count = 0;
    const char *why = NULL;
    if (a->sel.count == 0) {
      rc = usage_error("no case matches --filter (see --list)");
    } else if (no_device(&count, &why) && selection_host_only(&a->sel)) {
      rc = run_benchmarks(a, 0);
    } else if (count == 0) {
      fprintf(stderr, "no CUDA device: %s; --list, --help, --table bytes and a --filter that selects only host-only "
              "cases work without one\n", why);
      rc = KM_EXIT_NO_DEVICE;
    } else if (a->opts.device >= count) {
      snprintf(a->err, sizeof a->err, "--device %d: only %d CUDA device(s) present (0..%d)", a->opts.device, count,
               count - 1);
      rc = usage_error(a->err);
    } else {
      rc = run_benchmarks(a, 1);
    }
  }
  gb_shutdown();
  app_free(a);
  free(a);
  return rc;
}
