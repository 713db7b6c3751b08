/* libFuzzer target for ./micro's flag parsers (harness/cli.c): the input split at NUL or newline becomes
 * argv for km_options_parse, and each token also goes through km_parse_size and km_parse_positive.
 * Accepted values must satisfy the ranges the rest of the program relies on, and then go through the byte
 * table as main's argument check does (--model only as a preset name: the fuzzer reads no files). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_table.h"
#include "cli.h"

enum { MAX_ARGS = 128 };

/* A size that parses is finite and at least 1 (a decimal of ~300 digits times a unit is malformed, not +inf). */
static void check_token(const char *s) {
  double d = 0;
  long long n = 0;
  int rc = km_parse_size(s, &d);
  if (rc < -2 || rc > 0 || (rc == 0 && !(d >= 1 && isfinite(d)))) abort();
  rc = km_parse_positive(s, &n);
  if (rc < -2 || rc > 0 || (rc == 0 && n <= 0)) abort();
}

/* What a parse that returned 0 promises to the rest of the program. */
static void check_options(const km_options *o, int argc, char **argv) {
  if (o->repetitions < 1 || o->repetitions > 1000) abort();
  if (!(o->min_time >= 0 && o->min_time <= 600)) abort();
  if (o->device < 0 || o->max_model_len < 0 || o->block_size <= 0 || o->max_num_batched_tokens <= 0) abort();
  if (!(o->kv_budget >= 1) || !(o->host_budget >= 0)) abort();
  if (o->kv_dtype < 0 || o->kv_dtype >= KM_KV_DTYPE_COUNT) abort();
  if (o->mamba_ssm_dtype < 0 || o->mamba_ssm_dtype >= KM_SSM_DTYPE_COUNT) abort();
  if (o->gb_argc < 0 || o->gb_argc >= argc || (o->gb_argc > 0 && o->gb_argv + o->gb_argc != argv + argc)) abort();
  /* a smoke run publishes and times nothing and always verifies */
  if (o->smoke && !o->help && !o->list &&
      (o->json_path || o->params_path || o->tables || o->min_time > 0 || o->repetitions > 1 || !o->verify))
    abort();
}

/* The byte table over the parsed sizes, as app.c's check_arguments probes it. */
static void check_bytes_table(const km_options *o) {
  km_model *m = malloc(sizeof *m);
  if (!m) return;
  if (!o->model_path || km_model_preset(o->model_path, m) != 0) km_model_preset("qwen3-8b", m);
  km_bytes_params p;
  km_bytes_params_default(&p);
  p.kv_budget = o->kv_budget;
  p.max_model_len = o->max_model_len;
  p.allow_long_max_model_len = o->allow_long_max_model_len;
  p.max_num_batched_tokens = o->max_num_batched_tokens;
  p.block_size = o->block_size;
  p.host_budget = o->host_budget;
  p.kv_dtype = o->kv_dtype;
  p.mamba_ssm_dtype = o->mamba_ssm_dtype;
  km_table *t = NULL;
  char err[512] = "";
  if (km_bytes_table_build(m, &p, &t, err, sizeof err) == 0) km_table_free(t);
  else if (err[0] == '\0') abort();
  free(m);
}

static void check_error(int rc, const char *err) {
  if (rc != KM_EXIT_USAGE || err[0] == '\0' || strchr(err, '\n') != NULL) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  char **argv = malloc(sizeof(char *) * (MAX_ARGS + 1));
  if (!buf || !argv) goto done;
  memcpy(buf, data, size);
  buf[size] = '\0';
  int argc = 0;
  argv[argc++] = "micro";
  for (size_t i = 0, start = 0; i <= size && argc < MAX_ARGS; i++) {
    if (i == size || buf[i] == '\n' || buf[i] == '\0') {
      buf[i] = '\0';
      argv[argc++] = buf + start;
      start = i + 1;
    }
  }
  argv[argc] = NULL;
  for (int i = 1; i < argc; i++) check_token(argv[i]);
  km_options o;
  char err[512] = "";
  km_options_default(&o);
  int rc = km_options_parse(argc, argv, &o, err, sizeof err);
  if (rc == 0) {
    check_options(&o, argc, argv);
    check_bytes_table(&o);
  }
  else check_error(rc, err);
done:
  free(argv);
  free(buf);
  return 0;
}
