/* micro --prefix-sim PRESET: the prefix-cache simulator's command line. Its workload flags are parsed
 * here (one line naming the flag on a bad value, exit 2, nothing written); the byte-table flags
 * (--model, --kv-budget, --max-model-len, --block-size, --kv-dtype) and --format / --json go through the
 * harness's own parser, so they mean and check what they mean everywhere else. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "context.h"
#include "micro_tables.h"
#include "output_file.h"
#include "prefix_capacity.h"
#include "prefix_sim.h"

/* The shared-prefix preset's lengths when --shared-prefix is not given: 0 (the control) to the source
 * article's 16K of 16.6K. */
static const long long shared_sweep[] = {0, 1024, 2048, 4096, 8192, 16384};
/* --sweep: working set from SWEEP_LO to SWEEP_HI times the capacity, in steps of SWEEP_STEP. */
#define SWEEP_LO 0.50
#define SWEEP_HI 2.00
#define SWEEP_STEP 0.05

typedef struct sim_preset {
  const char *name, *summary;
  km_sim_workload w;
  int shared_rows; /* 1: one run per shared_sweep length unless --shared-prefix is given */
} sim_preset;

static const sim_preset presets[] = {
    {"shared-prefix",
     "32 requests sharing a prefix of 0..16K tokens, 256 unique suffix tokens and 64 output tokens each",
     {32, 0, 0, 256, 64, 1, 32}, 1},
    {"cliff",
     "64 distinct 8,192-token documents with 256-token suffixes (540,672 tokens), two passes in the same order",
     {64, 0, 8192, 256, 64, 2, 64}, 0},
    {"custom", "the workload flags alone (from 1 request of 256 prompt and 64 output tokens)",
     {1, 0, 0, 256, 64, 1, 1}, 0},
};
enum { PRESET_COUNT = sizeof presets / sizeof presets[0] };

static const char usage_text[] =
    "usage: micro --prefix-sim PRESET [workload flags] [--model ... --kv-budget ... --block-size ...]\n"
    "                                 [--format F] [--json PATH]\n"
    "Replays a workload through vLLM v1's prefix cache, block for block, with no GPU: a pool of the byte table's\n"
    "capacity for --model and --kv-budget (block 0 is vLLM's null block), block hashes chained as vLLM keys them,\n"
    "reference counts, and vLLM's free queue (least recently freed first; a freed request's blocks go back tail\n"
    "first, so a chain's tail is evicted before its head). Requests are admitted in order while their whole\n"
    "footprint (prompt + output - 1 tokens) fits beside the running ones (no preemption); each pass starts when\n"
    "the one before has finished. Reported per pass: blocks hit, hit rate (hit tokens / prompt tokens, as vLLM\n"
    "logs it), prefill tokens computed.\n"
    "\n"
    "presets\n"
    "  shared-prefix   32 requests, a shared prefix of 0, 1K, 2K, 4K, 8K and 16K tokens (one run each), 256 unique\n"
    "                  suffix tokens, 64 output tokens, all 32 submitted at once\n"
    "  cliff           64 distinct 8,192-token documents + 256-token suffixes (540,672 tokens, 1.35x the default\n"
    "                  cache), two passes in the same order, all 64 submitted at once\n"
    "  custom          the flags below alone (1 request, 256 suffix and 64 output tokens unless given)\n"
    "\n"
    "workload flags (override the preset)\n"
    "  --requests N          distinct requests per pass\n"
    "  --shared-prefix T     tokens every request starts with (0 allowed)\n"
    "  --document-tokens T   tokens of a document each request reads alone, after the shared prefix (0 allowed)\n"
    "  --suffix-tokens T     tokens each request asks alone, last in the prompt (0 allowed)\n"
    "  --output-tokens N     tokens generated per request (>= 1)\n"
    "  --passes N            times the same requests are sent, in the same order (1..1000)\n"
    "  --concurrency N       requests running at once\n"
    "  --policy lru|mru      lru: vLLM's free queue; mru: never-cached blocks first, then the most recently freed\n"
    "                        chain, tail first (a loop over a working set larger than the cache keeps what fitted)\n"
    "  --hash ALGO           sha256 (vLLM's default), sha256_cbor, xxhash, xxhash_cbor\n"
    "  --sweep               also the working set from 0.5x to 2x the capacity (more or fewer requests of this\n"
    "                        shape), the last pass's hit rate under both policies: the cliff\n"
    "\n"
    "also: --model, --kv-budget, --max-model-len, --block-size, --kv-dtype (as for --table bytes), --format,\n"
    "      --json PATH\n";

static int cmd_main(int argc, char **argv);

const km_command km_prefix_sim_command = {
    "--prefix-sim",
    "  --prefix-sim PRESET prefix-cache simulator (shared-prefix, cliff, custom): vLLM's block pool sized by the\n"
    "                      byte table for --model and --kv-budget, hit rates per pass and the capacity cliff\n"
    "                      (--sweep); workload flags in micro --prefix-sim --help\n",
    cmd_main,
};

/* ---- parsing */
typedef struct sim_cli {
  const sim_preset *preset;
  km_sim_workload w;
  int shared_given, sweep;
  km_sim_policy policy;
  km_hash_algo algo;
  km_options opts;
  km_model model;
  km_bytes_params bp;
  long long cap_tokens, blocks;
} sim_cli;

static int bad(char *err, size_t errlen, const char *flag, const char *value, const char *want) {
  if (value) snprintf(err, errlen, "%s '%s': %s", flag, value, want);
  else snprintf(err, errlen, "%s needs a value: %s", flag, want);
  return -1;
}

/* A count flag: 0 allowed only for token counts; at most max. */
static int count_value(const char *flag, const char *v, int zero_ok, long long max, long long *out, char *err,
                       size_t errlen) {
  char want[96];
  snprintf(want, sizeof want, "expected an integer from %d to %lld", zero_ok ? 0 : 1, max);
  if (zero_ok && v && strcmp(v, "0") == 0) {
    *out = 0;
    return 0;
  }
  long long n = 0;
  if (!v || km_parse_positive(v, &n) != 0 || n > max) return bad(err, errlen, flag, v, want);
  *out = n;
  return 0;
}

typedef struct count_flag {
  const char *flag;
  size_t offset; /* into km_sim_workload */
  int zero_ok;
  long long max;
} count_flag;

/* a million requests or tokens is past anything the article's rig could hold; --passes repeats them */
static const count_flag count_flags[] = {
    {"--requests", offsetof(km_sim_workload, requests), 0, 1000000},
    {"--shared-prefix", offsetof(km_sim_workload, shared_prefix), 1, 1LL << 30},
    {"--document-tokens", offsetof(km_sim_workload, document), 1, 1LL << 30},
    {"--suffix-tokens", offsetof(km_sim_workload, suffix), 1, 1LL << 30},
    {"--output-tokens", offsetof(km_sim_workload, output), 0, 1LL << 30},
    {"--passes", offsetof(km_sim_workload, passes), 0, 1000},
    {"--concurrency", offsetof(km_sim_workload, concurrency), 0, 1000000},
};
enum { COUNT_FLAGS = sizeof count_flags / sizeof count_flags[0] };

static int flag_is(const char *arg, const char *flag) {
  size_t n = strlen(flag);
  return strncmp(arg, flag, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static const char *value_of(int argc, char **argv, int *i, const char *flag) {
  size_t n = strlen(flag);
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  return *i + 1 < argc ? argv[++*i] : NULL;
}

/* One simulator flag at argv[*i]: 1 consumed, 0 not one of ours, -1 bad value. The preset is applied
 * before any flag (main scans for it first), so flags override it in any order. */
static int parse_sim_flag(sim_cli *s, int argc, char **argv, int *i, char *err, size_t errlen) {
  const char *a = argv[*i];
  if (flag_is(a, "--prefix-sim")) {
    value_of(argc, argv, i, "--prefix-sim");
    return 1;
  }
  for (int f = 0; f < COUNT_FLAGS; f++)
    if (flag_is(a, count_flags[f].flag)) {
      long long *dst = (long long *)((char *)&s->w + count_flags[f].offset);
      if (count_value(count_flags[f].flag, value_of(argc, argv, i, count_flags[f].flag), count_flags[f].zero_ok,
                      count_flags[f].max, dst, err, errlen))
        return -1;
      if (strcmp(count_flags[f].flag, "--shared-prefix") == 0) s->shared_given = 1;
      return 1;
    }
  if (flag_is(a, "--policy")) {
    const char *v = value_of(argc, argv, i, "--policy");
    if (km_sim_policy_parse(v, &s->policy)) return bad(err, errlen, "--policy", v, "expected lru or mru");
    return 1;
  }
  if (flag_is(a, "--hash")) {
    const char *v = value_of(argc, argv, i, "--hash");
    if (km_hash_algo_parse(v, &s->algo))
      return bad(err, errlen, "--hash", v, "expected sha256, sha256_cbor, xxhash or xxhash_cbor");
    return 1;
  }
  if (strcmp(a, "--sweep") == 0) {
    s->sweep = 1;
    return 1;
  }
  return 0;
}

static int find_preset(sim_cli *s, int argc, char **argv, char *err, size_t errlen) {
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (!flag_is(argv[i], "--prefix-sim")) continue;
    const char *v = value_of(argc, argv, &i, "--prefix-sim");
    for (int p = 0; v && p < PRESET_COUNT; p++)
      if (strcmp(v, presets[p].name) == 0) s->preset = &presets[p];
    if (!s->preset) return bad(err, errlen, "--prefix-sim", v, "expected shared-prefix, cliff or custom");
    return 0;
  }
  return bad(err, errlen, "--prefix-sim", NULL, "expected shared-prefix, cliff or custom");
}

/* What the harness parsed must be the byte-table inputs and the output flags only. */
static int harness_flags_fit(const km_options *o, char *err, size_t errlen) {
  const char *with = o->filter ? "--filter" : o->list ? "--list" : o->quick ? "--quick" : o->smoke ? "--smoke"
                     : o->repetitions != 1 ? "--repetitions" : o->min_time > 0 ? "--min-time"
                     : o->device ? "--device" : !o->verify ? "--no-verify" : o->tables ? "--table"
                     : o->params_path ? "--params" : o->host_budget > 0 ? "--host-budget"
                     : o->gb_argc ? "--" : NULL;
  if (!with) return 0;
  snprintf(err, errlen, "%s does not go with --prefix-sim: the simulator runs no case and prints its own tables", with);
  return -1;
}

static int parse(sim_cli *s, int argc, char **argv, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->policy = KM_SIM_LRU;
  s->algo = KM_HASH_SHA256;
  if (find_preset(s, argc, argv, err, errlen)) return -1;
  s->w = s->preset->w;
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  if (!rest) return bad(err, errlen, "--prefix-sim", NULL, "out of memory");
  int nrest = 0, rc = 0;
  rest[nrest++] = argv[0];
  for (int i = 1; i < argc && rc == 0; i++) {
    if (strcmp(argv[i], "--") == 0) {
      while (i < argc) rest[nrest++] = argv[i++];
      break;
    }
    int r = parse_sim_flag(s, argc, argv, &i, err, errlen);
    if (r < 0) rc = -1;
    else if (r == 0) rest[nrest++] = argv[i];
  }
  km_options_default(&s->opts);
  if (rc == 0 && km_options_parse(nrest, rest, &s->opts, err, errlen)) rc = -1;
  free(rest);
  if (rc == 0) rc = harness_flags_fit(&s->opts, err, errlen);
  if (rc == 0 && s->opts.json_path && km_output_check_writable(s->opts.json_path, "--json", err, errlen)) rc = -1;
  if (rc == 0 && km_model_resolve(s->opts.model_path ? s->opts.model_path : "qwen3-8b", &s->model, err, errlen))
    rc = -1;
  if (rc) return -1;
  km_bytes_params_from_options(&s->opts, &s->bp);
  const long long len = km_bytes_max_model_len(&s->model, &s->bp, err, errlen); /* 0 given: the config's */
  if (len < 0) return -1;
  s->bp.max_model_len = len;
  return km_prefix_pool(&s->model, &s->bp, &s->cap_tokens, &s->blocks, err, errlen);
}

/* ---- running and tables */
static km_sim_config config_of(const sim_cli *s, km_sim_policy policy) {
  km_sim_config c = {s->blocks, s->bp.block_size, s->bp.max_model_len, policy, s->algo};
  return c;
}

enum { R_WORKLOAD, R_PASS, R_REQUESTS, R_PROMPT, R_LOOKED_UP, R_HIT, R_RATE, R_COMPUTED, R_SAVED, R_EVICTED, R_COUNT };
static const km_column run_cols[R_COUNT] = {
    {"workload", "workload", 0},
    {"pass", "pass", 1},
    {"requests", "requests", 1},
    {"prompt_tokens", "prompt tokens", 1},
    {"prompt_blocks", "prompt blocks", 1},
    {"blocks_hit", "blocks hit", 1},
    {"hit_rate_pct", "hit %", 1},
    {"prefill_tokens_computed", "tokens computed", 1},
    {"prompt_over_computed", "prompt/computed", 1},
    {"evictions", "evictions", 1},
};

static void add_pass_row(km_table *t, const char *workload, int pass, const km_sim_pass *p) {
  size_t r = km_table_add_row(t, NULL);
  km_table_set_text(t, r, R_WORKLOAD, workload);
  km_table_set_integer(t, r, R_PASS, pass);
  km_table_set_integer(t, r, R_REQUESTS, (double)p->requests);
  km_table_set_integer(t, r, R_PROMPT, (double)p->prompt_tokens);
  km_table_set_integer(t, r, R_LOOKED_UP, (double)p->prompt_blocks);
  km_table_set_integer(t, r, R_HIT, (double)p->blocks_hit);
  km_table_set_number(t, r, R_RATE, 100.0 * p->hit_rate, 2);
  km_table_set_integer(t, r, R_COMPUTED, (double)p->tokens_computed);
  km_table_set_number(t, r, R_SAVED, (double)p->prompt_tokens / (double)p->tokens_computed, 2);
  km_table_set_integer(t, r, R_EVICTED, (double)p->evictions);
}

static int run_one(const sim_cli *s, const km_sim_workload *w, km_sim_policy policy, km_sim_pass **out, char *err,
                   size_t errlen) {
  km_sim_config c = config_of(s, policy);
  *out = calloc((size_t)w->passes, sizeof **out);
  if (!*out) return bad(err, errlen, "--passes", NULL, "out of memory");
  if (km_sim_run(w, &c, *out, err, errlen) == 0) return 0;
  free(*out);
  *out = NULL;
  return -1;
}

/* The runs of the table: one per shared-prefix length for that preset, else the workload as given. */
static int run_rows(const sim_cli *s) {
  return s->preset->shared_rows && !s->shared_given ? (int)(sizeof shared_sweep / sizeof shared_sweep[0]) : 1;
}

static km_sim_workload row_workload(const sim_cli *s, int row) {
  km_sim_workload w = s->w;
  if (run_rows(s) > 1) w.shared_prefix = shared_sweep[row];
  return w;
}

static int add_runs(const sim_cli *s, km_table *t, char *err, size_t errlen) {
  for (int i = 0; i < run_rows(s); i++) {
    km_sim_workload w = row_workload(s, i);
    km_sim_pass *passes = NULL;
    if (run_one(s, &w, s->policy, &passes, err, errlen)) return -1;
    char name[96];
    if (w.shared_prefix > 0) snprintf(name, sizeof name, "%s, shared %lld", s->preset->name, w.shared_prefix);
    else snprintf(name, sizeof name, "%s", s->preset->name);
    for (long long p = 0; p < w.passes; p++) add_pass_row(t, name, (int)p + 1, &passes[p]);
    free(passes);
  }
  return 0;
}

enum { S_RATIO, S_REQUESTS, S_TOKENS, S_LRU, S_MRU, S_LRU_COMPUTED, S_MRU_COMPUTED, S_COUNT };
static const km_column sweep_cols[S_COUNT] = {
    {"working_set_x", "working set x cache", 1},
    {"requests", "requests", 1},
    {"working_set_tokens", "working set tokens", 1},
    {"lru_hit_rate_pct", "lru: hit % last pass", 1},
    {"mru_hit_rate_pct", "mru: hit % last pass", 1},
    {"lru_tokens_computed", "lru: computed", 1},
    {"mru_tokens_computed", "mru: computed", 1},
};

/* The sweep's workload at f times the capacity: as many requests of this shape as make that working set. */
static km_sim_workload sweep_workload(const sim_cli *s, double f) {
  km_sim_workload w = s->w;
  w.requests = llround((f * (double)s->cap_tokens - (double)w.shared_prefix) / (double)(w.document + w.suffix));
  if (w.requests < 1) w.requests = 1;
  return w;
}

static int add_sweep(const sim_cli *s, km_table *t, char *err, size_t errlen) {
  long long last = -1;
  for (double f = SWEEP_LO; f <= SWEEP_HI + 1e-9; f += SWEEP_STEP) {
    km_sim_workload w = sweep_workload(s, f);
    if (w.requests == last) continue;
    last = w.requests;
    km_sim_pass *lru = NULL, *mru = NULL;
    if (run_one(s, &w, KM_SIM_LRU, &lru, err, errlen) || run_one(s, &w, KM_SIM_MRU, &mru, err, errlen)) {
      free(lru);
      return -1;
    }
    const km_sim_pass *a = &lru[w.passes - 1], *b = &mru[w.passes - 1];
    size_t r = km_table_add_row(t, NULL);
    km_table_set_number(t, r, S_RATIO, (double)km_sim_working_set_tokens(&w) / (double)s->cap_tokens, 3);
    km_table_set_integer(t, r, S_REQUESTS, (double)w.requests);
    km_table_set_integer(t, r, S_TOKENS, (double)km_sim_working_set_tokens(&w));
    km_table_set_number(t, r, S_LRU, 100.0 * a->hit_rate, 2);
    km_table_set_number(t, r, S_MRU, 100.0 * b->hit_rate, 2);
    km_table_set_integer(t, r, S_LRU_COMPUTED, (double)a->tokens_computed);
    km_table_set_integer(t, r, S_MRU_COMPUTED, (double)b->tokens_computed);
    free(lru);
    free(mru);
  }
  return 0;
}

/* Every workload the command will replay, checked before any runs: a bad one is exit 2, nothing printed. */
static int check_all(const sim_cli *s, char *err, size_t errlen) {
  km_sim_config c = config_of(s, s->policy);
  for (int i = 0; i < run_rows(s); i++) {
    km_sim_workload w = row_workload(s, i);
    if (km_sim_check(&w, &c, err, errlen)) return -1;
  }
  if (!s->sweep) return 0;
  if (s->w.document + s->w.suffix == 0)
    return bad(err, errlen, "--sweep", NULL,
               "the requests share every token: give --document-tokens or --suffix-tokens");
  if (s->w.passes < 2) return bad(err, errlen, "--sweep", NULL, "needs --passes >= 2: the cliff is in the repeat pass");
  km_sim_workload largest = sweep_workload(s, SWEEP_HI);
  return km_sim_check(&largest, &c, err, errlen);
}

static cJSON *config_json(const sim_cli *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "preset", s->preset->name);
  cJSON_AddStringToObject(o, "revision", km_build_revision());
  cJSON_AddStringToObject(o, "model", s->model.name);
  cJSON_AddNumberToObject(o, "kv_budget_bytes", s->bp.kv_budget);
  cJSON_AddNumberToObject(o, "capacity_tokens", (double)s->cap_tokens);
  cJSON_AddNumberToObject(o, "num_gpu_blocks", (double)s->blocks);
  cJSON_AddNumberToObject(o, "block_size", (double)s->bp.block_size);
  cJSON_AddNumberToObject(o, "max_model_len", (double)s->bp.max_model_len);
  cJSON_AddStringToObject(o, "policy", km_sim_policy_name(s->policy));
  cJSON_AddStringToObject(o, "hash", km_hash_algo_name(s->algo));
  cJSON *w = cJSON_AddObjectToObject(o, "workload");
  cJSON_AddNumberToObject(w, "requests", (double)s->w.requests);
  cJSON_AddNumberToObject(w, "shared_prefix", (double)s->w.shared_prefix);
  cJSON_AddNumberToObject(w, "document_tokens", (double)s->w.document);
  cJSON_AddNumberToObject(w, "suffix_tokens", (double)s->w.suffix);
  cJSON_AddNumberToObject(w, "output_tokens", (double)s->w.output);
  cJSON_AddNumberToObject(w, "passes", (double)s->w.passes);
  cJSON_AddNumberToObject(w, "concurrency", (double)s->w.concurrency);
  return o;
}

static int emit(const sim_cli *s, km_table *runs, km_table *sweep, char *err, size_t errlen) {
  cJSON *doc = NULL;
  if (s->opts.format == KM_FORMAT_JSON || s->opts.json_path) {
    doc = cJSON_CreateObject();
    cJSON *sim = cJSON_AddObjectToObject(doc, "prefix_sim");
    cJSON_AddItemToObject(sim, "config", config_json(s));
    cJSON_AddItemToObject(sim, "runs", km_table_rows_json(runs));
    if (sweep) cJSON_AddItemToObject(sim, "sweep", km_table_rows_json(sweep));
  }
  if (s->opts.format == KM_FORMAT_JSON) {
    char *text = cJSON_Print(doc);
    if (text) printf("%s\n", text);
    free(text);
  } else {
    km_table_print(runs, s->opts.format, stdout);
    if (sweep) {
      fputc('\n', stdout);
      km_table_print(sweep, s->opts.format, stdout);
    }
  }
  int rc = s->opts.json_path ? km_output_write_json(s->opts.json_path, doc, err, errlen) : 0;
  cJSON_Delete(doc);
  return rc;
}

static int simulate(const sim_cli *s, char *err, size_t errlen) {
  if (check_all(s, err, errlen)) return KM_EXIT_USAGE;
  char title[384];
  snprintf(title, sizeof title,
           "Prefix-cache simulator, %s: %s; %s, %lld blocks x %lld tokens (%lld-token cache), policy %s, hash %s, "
           "%lld at once",
           s->preset->name, s->preset->summary, s->model.name, s->blocks, s->bp.block_size, s->cap_tokens,
           km_sim_policy_name(s->policy), km_hash_algo_name(s->algo), s->w.concurrency);
  km_table *runs = km_table_new(title, run_cols, R_COUNT), *sweep = NULL;
  int rc = runs && add_runs(s, runs, err, errlen) == 0 ? 0 : KM_EXIT_FAILED;
  if (rc == 0 && s->sweep) {
    snprintf(title, sizeof title,
             "The capacity cliff: %lld passes of requests of %lld shared + %lld own prompt tokens, working set "
             "%.2fx..%.2fx the cache", s->w.passes, s->w.shared_prefix, s->w.document + s->w.suffix, SWEEP_LO,
             SWEEP_HI);
    sweep = km_table_new(title, sweep_cols, S_COUNT);
    if (!sweep || add_sweep(s, sweep, err, errlen)) rc = KM_EXIT_FAILED;
  }
  if (rc == 0 && emit(s, runs, sweep, err, errlen)) rc = KM_EXIT_FAILED;
  km_table_free(runs);
  km_table_free(sweep);
  return rc;
}

static int cmd_main(int argc, char **argv) {
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage_text, stdout);
      return KM_EXIT_OK;
    }
  sim_cli *s = malloc(sizeof *s); /* km_model is ~4 KiB and km_options small: kept off the stack anyway */
  char err[512] = "";
  if (!s) return KM_EXIT_FAILED;
  int rc = parse(s, argc, argv, err, sizeof err) ? KM_EXIT_USAGE : simulate(s, err, sizeof err);
  if (rc) {
    fputs("micro: ", stderr);
    for (const char *c = err; *c; c++) fputc((unsigned char)*c < 0x20 ? '?' : *c, stderr);
    fputc('\n', stderr);
  }
  free(s);
  return rc;
}
