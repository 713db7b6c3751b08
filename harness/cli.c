/* ./micro's flags. Every bad input is one line naming the flag and what would be right; nothing
 * here exits or touches the GPU, so argument errors come before anything else is tried. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void km_options_default(km_options *o) {
  memset(o, 0, sizeof *o);
  o->repetitions = 1;
  o->verify = 1;
  o->format = KM_FORMAT_TEXT;
  o->kv_budget = 58987118592.0; /* the source rig's KV memory: 400,032 tokens x 147,456 B */
  o->max_model_len = 0;         /* the model's own, as vLLM derives it (40,960 for qwen3-8b) */
  o->max_num_batched_tokens = 8192; /* vllm serve's default with chunked prefill */
  o->block_size = 16;
}

int km_parse_positive(const char *s, long long *out) {
  if (!s || !*s) return -1;
  errno = 0;
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || end == s) return -1;
  if (v <= 0) return -2;
  *out = v;
  return 0;
}

int km_parse_size(const char *s, double *out) {
  static const struct {
    const char *suffix;
    double mult;
  } units[] = {{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
               {"K", 1e3},      {"M", 1e6},         {"G", 1e9},            {"T", 1e12},
               {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
               {"B", 1.0},      {"", 1.0}};
  if (!s || !*s || isspace((unsigned char)s[0])) return -1;
  errno = 0;
  char *end = NULL;
  double v = strtod(s, &end);
  if (errno || end == s || !isfinite(v)) return -1;
  /* strtod accepts hex and exponents; allow only plain decimals */
  for (const char *p = s; p < end; p++)
    if (!isdigit((unsigned char)*p) && *p != '.' && *p != '-' && *p != '+') return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(end, units[i].suffix) == 0) {
      if (v <= 0) return -2;
      *out = floor(v * units[i].mult);
      if (!isfinite(*out)) return -1;
      if (*out < 1) return -2;
      return 0;
    }
  return -1;
}

void km_options_usage(FILE *out) {
  fputs(
      "usage: micro [options] [-- google-benchmark flags]\n"
      "Measures the primitives behind KV-cache reduction (paged gather, fp8/3-bit quantization,\n"
      "sparse top-k read, host<->device copies) and prints the per-token byte table.\n"
      "\n"
      "selection and timing\n"
      "  --filter REGEX      run cases whose name matches REGEX (POSIX ERE; leading '-' negates)\n"
      "  --list              print the selected case names, one per line, and exit (no GPU needed)\n"
      "  --quick             smallest sweep points and fewer samples\n"
      "  --repetitions N     repeat each case N times (Google Benchmark aggregates: mean, median, stddev, cv)\n"
      "  --min-time S        time each case for at least S seconds instead of a fixed sample count\n"
      "  --device N          CUDA device ordinal (default 0)\n"
      "  --no-verify         skip the CPU reference checks (results are then marked unverified)\n"
      "  --smoke             correctness pass for compute-sanitizer and new builds: each case verified,\n"
      "                      then one warm-up and one timed launch, working sets cut to 16 MiB where a case\n"
      "                      sizes them from L2; prints no figures or tables\n"
      "\n"
      "tables and outputs\n"
      "  --table bytes|latency|techniques|all  which tables to print (bytes runs no benchmark; default: latency\n"
      "                           after a run; techniques: the twelve side by side, capacity and measured rows)\n"
      "  --format text|markdown|csv|json  table format (default text)\n"
      "  --json PATH         write all results (Google Benchmark JSON plus context and tables) to PATH\n"
      "  --params PATH       write the simulator parameters (kvmicro-params/1) to PATH\n"
      "\n"
      "model shape and the byte table\n"
      "  --model NAME|PATH   embedded preset (default qwen3-8b) or a Hugging Face config.json\n"
      "  --kv-budget BYTES   KV cache bytes (default 58987118592; K/M/G/T or KiB/MiB/GiB/TiB)\n"
      "  --max-model-len N   tokens per request (default: what vLLM derives from the config; 40960 for\n"
      "                      qwen3-8b); above the model's own it is refused unless\n"
      "  --allow-long-max-model-len  accepts it (as VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 does)\n"
      "  --max-num-batched-tokens N  tokens per scheduler step (default 8192): a sliding-window layer\n"
      "                      reserves window - 1 + N tokens per request\n"
      "  --block-size N      tokens per KV block (default 16; hybrid models get vLLM's larger block)\n"
      "  --host-budget BYTES host memory for offloading (default 0)\n"
      "  --kv-dtype NAME     vLLM's --kv-cache-dtype: auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2,\n"
      "                      fp8_per_token_head or turboquant_3bit_nc (default auto)\n"
      "  --mamba-ssm-dtype NAME  vLLM's --mamba-ssm-cache-dtype: auto, float32, bfloat16 or float16\n"
      "                      (default auto: the model's vLLM default, float32 for Nemotron-H)\n"
      "\n"
      "  --help              this text\n"
      "  --version           revision, build type, CUDA architectures and Google Benchmark version\n"
      "  --                  pass the remaining flags to Google Benchmark (e.g. --benchmark_out=...)\n"
      "\n"
      "exit status: 0 ok, 1 a case failed its check or a CUDA call failed, 2 bad input, 3 no CUDA device,\n"
      "             130 interrupted (Ctrl-C: what finished is written, marked incomplete; a second Ctrl-C stops at once)\n",
      out);
}

/* Flags that take a value: the value is the next argument or follows '='. */
static const char *value_of(int argc, char **argv, int *i, const char *flag, const char *arg) {
  size_t n = strlen(flag);
  if (strncmp(arg, flag, n) == 0 && arg[n] == '=') return arg + n + 1;
  if (*i + 1 < argc) return argv[++*i];
  return NULL;
}

static int flag_is(const char *arg, const char *flag) {
  size_t n = strlen(flag);
  return strncmp(arg, flag, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int bad(char *err, size_t errlen, const char *flag, const char *value, const char *want) {
  if (value)
    snprintf(err, errlen, "%s '%s': %s", flag, value, want);
  else
    snprintf(err, errlen, "%s needs a value: %s", flag, want);
  return KM_EXIT_USAGE;
}

static int parse_size_flag(const char *flag, const char *v, double *out, int allow_zero, char *err, size_t errlen) {
  if (allow_zero && v && strcmp(v, "0") == 0) {
    *out = 0;
    return 0;
  }
  int rc = v ? km_parse_size(v, out) : -1;
  if (rc == -2) return bad(err, errlen, flag, v, "must be positive");
  if (rc != 0) return bad(err, errlen, flag, v, "expected a size in bytes such as 58987118592, 64GiB or 55G");
  return 0;
}

static int parse_count_flag(const char *flag, const char *v, long long *out, char *err, size_t errlen) {
  /* token counts beyond 2^40 are not real, and the byte table's block rounding must not overflow */
  const long long max_count = 1LL << 40;
  int rc = v ? km_parse_positive(v, out) : -1;
  if (rc == -2) return bad(err, errlen, flag, v, "must be a positive integer");
  if (rc != 0) return bad(err, errlen, flag, v, "expected a positive integer");
  if (*out > max_count) return bad(err, errlen, flag, v, "must be at most 1099511627776 (2^40)");
  return 0;
}

static int parse_one(int argc, char **argv, int *i, km_options *o, char *err, size_t errlen) {
  const char *a = argv[*i];
  const char *v;
  long long n;
  if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return o->help = 1, 0;
  if (strcmp(a, "--version") == 0) return o->version = 1, 0;
  if (strcmp(a, "--list") == 0) return o->list = 1, 0;
  if (strcmp(a, "--quick") == 0) return o->quick = 1, 0;
  if (strcmp(a, "--no-verify") == 0) return o->verify = 0, 0;
  if (strcmp(a, "--smoke") == 0) return o->smoke = 1, 0;
  if (strcmp(a, "--allow-long-max-model-len") == 0) return o->allow_long_max_model_len = 1, 0;
  if (flag_is(a, "--filter")) {
    v = value_of(argc, argv, i, "--filter", a);
    if (!v || !*v) return bad(err, errlen, "--filter", v, "expected a regular expression");
    o->filter = v;
    return 0;
  }
  if (flag_is(a, "--repetitions")) {
    v = value_of(argc, argv, i, "--repetitions", a);
    if (parse_count_flag("--repetitions", v, &n, err, errlen)) return KM_EXIT_USAGE;
    if (n > 1000) return bad(err, errlen, "--repetitions", v, "at most 1000");
    o->repetitions = (int)n;
    return 0;
  }
  if (flag_is(a, "--min-time")) {
    v = value_of(argc, argv, i, "--min-time", a);
    char *end = NULL;
    double s = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || !isfinite(s)) return bad(err, errlen, "--min-time", v, "expected seconds, e.g. 0.5");
    if (s <= 0 || s > 600) return bad(err, errlen, "--min-time", v, "must be in (0, 600] seconds");
    o->min_time = s;
    return 0;
  }
  if (flag_is(a, "--device")) {
    v = value_of(argc, argv, i, "--device", a);
    char *end = NULL;
    long d = v ? strtol(v, &end, 10) : -1;
    if (!v || end == v || *end || d < 0 || d > 1024) return bad(err, errlen, "--device", v, "expected a device ordinal >= 0");
    o->device = (int)d;
    return 0;
  }
  if (flag_is(a, "--table")) {
    v = value_of(argc, argv, i, "--table", a);
    if (v && strcmp(v, "bytes") == 0) o->tables = KM_TABLES_BYTES;
    else if (v && strcmp(v, "latency") == 0) o->tables = KM_TABLES_LATENCY;
    else if (v && strcmp(v, "techniques") == 0) o->tables = KM_TABLES_TECHNIQUES;
    else if (v && strcmp(v, "all") == 0) o->tables = KM_TABLES_ALL;
    else return bad(err, errlen, "--table", v, "expected bytes, latency, techniques or all");
    return 0;
  }
  if (flag_is(a, "--format")) {
    v = value_of(argc, argv, i, "--format", a);
    if (!v || km_format_parse(v, &o->format) != 0) return bad(err, errlen, "--format", v, "expected text, markdown, csv or json");
    return 0;
  }
  if (flag_is(a, "--json") || flag_is(a, "--params") || flag_is(a, "--model")) {
    const char *flag = flag_is(a, "--json") ? "--json" : flag_is(a, "--params") ? "--params" : "--model";
    v = value_of(argc, argv, i, flag, a);
    if (!v || !*v) return bad(err, errlen, flag, v, strcmp(flag, "--model") ? "expected a file path" : "expected a preset name or a config.json path");
    if (strcmp(flag, "--json") == 0) o->json_path = v;
    else if (strcmp(flag, "--params") == 0) o->params_path = v;
    else o->model_path = v;
    return 0;
  }
  if (flag_is(a, "--kv-budget")) return parse_size_flag("--kv-budget", value_of(argc, argv, i, "--kv-budget", a), &o->kv_budget, 0, err, errlen);
  if (flag_is(a, "--host-budget")) return parse_size_flag("--host-budget", value_of(argc, argv, i, "--host-budget", a), &o->host_budget, 1, err, errlen);
  if (flag_is(a, "--max-model-len")) return parse_count_flag("--max-model-len", value_of(argc, argv, i, "--max-model-len", a), &o->max_model_len, err, errlen);
  if (flag_is(a, "--block-size")) return parse_count_flag("--block-size", value_of(argc, argv, i, "--block-size", a), &o->block_size, err, errlen);
  if (flag_is(a, "--max-num-batched-tokens"))
    return parse_count_flag("--max-num-batched-tokens", value_of(argc, argv, i, "--max-num-batched-tokens", a),
                            &o->max_num_batched_tokens, err, errlen);
  if (flag_is(a, "--kv-dtype")) {
    v = value_of(argc, argv, i, "--kv-dtype", a);
    if (!v || km_kv_dtype_parse(v, &o->kv_dtype) != 0)
      return bad(err, errlen, "--kv-dtype", v, "expected auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, "
                 "fp8_per_token_head or turboquant_3bit_nc");
    return 0;
  }
  if (flag_is(a, "--mamba-ssm-dtype")) {
    v = value_of(argc, argv, i, "--mamba-ssm-dtype", a);
    if (!v || km_ssm_dtype_parse(v, &o->mamba_ssm_dtype) != 0)
      return bad(err, errlen, "--mamba-ssm-dtype", v, "expected auto, float32, bfloat16 or float16");
    return 0;
  }
  snprintf(err, errlen, "unknown flag '%s' (see --help)", a);
  return KM_EXIT_USAGE;
}

/* --smoke rows are not measurements (one launch, working sets inside L2), so nothing that would
 * publish or time them goes with it; and it exists to run the checks, so not with --no-verify. */
static int smoke_conflicts(const km_options *o, char *err, size_t errlen) {
  const char *with = o->json_path          ? "--json"
                     : o->params_path      ? "--params"
                     : o->tables           ? "--table"
                     : o->min_time > 0     ? "--min-time"
                     : o->repetitions > 1  ? "--repetitions"
                     : !o->verify          ? "--no-verify"
                                           : NULL;
  if (!with) return 0;
  snprintf(err, errlen, "--smoke cannot go with %s: a smoke run verifies each case once and reports no figures", with);
  return KM_EXIT_USAGE;
}

int km_options_parse(int argc, char **argv, km_options *o, char *err, size_t errlen) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) {
      o->gb_argc = argc - i - 1;
      o->gb_argv = argv + i + 1;
      break;
    }
    if (argv[i][0] != '-') {
      snprintf(err, errlen, "unexpected argument '%s' (flags start with --; see --help)", argv[i]);
      return KM_EXIT_USAGE;
    }
    int rc = parse_one(argc, argv, &i, o, err, errlen);
    if (rc) return rc;
  }
  return o->smoke && !o->help && !o->version && !o->list ? smoke_conflicts(o, err, errlen) : 0;
}

void km_bytes_params_from_options(const km_options *o, km_bytes_params *p) {
  km_bytes_params_default(p);
  p->kv_budget = o->kv_budget;
  p->max_model_len = o->max_model_len;
  p->allow_long_max_model_len = o->allow_long_max_model_len;
  p->max_num_batched_tokens = o->max_num_batched_tokens;
  p->block_size = o->block_size;
  p->host_budget = o->host_budget;
  p->kv_dtype = o->kv_dtype;
  p->mamba_ssm_dtype = o->mamba_ssm_dtype;
}
