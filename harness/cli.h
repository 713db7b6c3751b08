/* Command-line options of ./micro. Parsing never exits: it returns a status and one line. */
#ifndef KM_CLI_H
#define KM_CLI_H

#include <stddef.h>

#include "bytes_table.h"
#include "table.h"

enum {
  KM_EXIT_OK = 0,
  KM_EXIT_FAILED = 1,    /* a verification or CUDA error in some case */
  KM_EXIT_USAGE = 2,     /* bad input: one line on stderr, no output file */
  KM_EXIT_NO_DEVICE = 3, /* benchmarks asked for, no CUDA device */
};

typedef enum km_table_sel {
  KM_TABLES_DEFAULT = 0,
  KM_TABLES_BYTES,
  KM_TABLES_LATENCY,
  KM_TABLES_TECHNIQUES,
  KM_TABLES_ALL
} km_table_sel;

typedef struct km_options {
  const char *filter;      /* regex, leading '-' negates; NULL: everything */
  int list;                /* --list */
  int help;                /* --help */
  int version;             /* --version */
  int quick;               /* --quick */
  int smoke;               /* --smoke: one verified launch per case on small buffers, no figures */
  int repetitions;         /* --repetitions N (>= 1) */
  double min_time;         /* --min-time S (0: fixed sample count) */
  int device;              /* --device N */
  int verify;              /* 0 under --no-verify */
  km_table_sel tables;     /* --table bytes|latency|techniques|all */
  km_format format;        /* --format */
  const char *json_path;   /* --json PATH */
  const char *params_path; /* --params PATH */
  const char *model_path;  /* --model PRESET|PATH */
  double kv_budget;        /* --kv-budget BYTES */
  long long max_model_len; /* --max-model-len N (0: what vLLM derives from the model's config) */
  int allow_long_max_model_len; /* --allow-long-max-model-len */
  long long max_num_batched_tokens; /* --max-num-batched-tokens N */
  long long block_size;    /* --block-size N */
  double host_budget;      /* --host-budget BYTES (0: none) */
  km_kv_dtype kv_dtype;    /* --kv-dtype NAME (vLLM's --kv-cache-dtype) */
  km_ssm_dtype mamba_ssm_dtype; /* --mamba-ssm-dtype NAME (vLLM's --mamba-ssm-cache-dtype) */
  int gb_argc;             /* flags after "--", passed to Google Benchmark */
  char **gb_argv;
} km_options;

void km_options_default(km_options *o);
/* 0: parsed; KM_EXIT_USAGE with a one-line message in err. argv is not modified. */
int km_options_parse(int argc, char **argv, km_options *o, char *err, size_t errlen);
void km_options_usage(FILE *out);
/* The byte table's inputs from the command line (the rest at their defaults). */
void km_bytes_params_from_options(const km_options *o, km_bytes_params *p);

/* Sizes: integer or decimal with K/M/G/T (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024),
 * optional trailing B. 0 ok, -1 malformed, -2 zero or negative. */
int km_parse_size(const char *s, double *out);
/* Positive integer (fits long long). 0 ok, -1 malformed, -2 zero or negative. */
int km_parse_positive(const char *s, long long *out);

#endif
