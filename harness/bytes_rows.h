/* Inside the byte table: the context every technique row is built from, and how a row is emitted.
 * Private to bytes_table.c (assembly, columns, JSON) and bytes_rows.c (the twelve techniques). */
#ifndef KM_BYTES_ROWS_H
#define KM_BYTES_ROWS_H

#include "bytes_table.h"
#include "kv_layout.h"
#include "vllm_kv.h"

typedef struct bt_ctx {
  const km_model *m;
  const km_bytes_params *p;
  km_table *t;
  long long max_model_len;  /* what the rows size for (the flag, or the model's own) */
  km_kv_config cfg;         /* vLLM's inputs for the model as configured */
  double elem;              /* KV element bytes under --kv-dtype (fp8: 1) */
  int scales;               /* --kv-dtype carries per-token-head scales */
  km_state_sizes st;        /* the model's state layers under the state dtypes */
  km_kv_plan base;          /* the model as configured */
  km_layout *configured;    /* its layers */
  km_layout *scratch;       /* one layout reused by every row (a layout is ~100 KiB) */
} bt_ctx;

/* The mechanisms, each a group heading. */
extern const char *const KM_MECH_STORE, *const KM_MECH_COMPUTE, *const KM_MECH_READ, *const KM_MECH_MOVE;

enum { KM_TQ_BOUNDARY = 2 }; /* TurboQuant keeps this many first and last KV layers in the model dtype */

/* turboquant_3bit_nc's slot per head per token for head_dim d: K codes + fp16 norm, V codes + fp16 scale
 * and zero, rounded to even (vLLM TQFullAttentionSpec: block x heads x tq_slot_size). */
double km_bt_tq_slot(int d);

/* KV bytes per token of one attention layer with `heads` KV heads under --kv-dtype (an MLA model's latent
 * when heads is 0). kv_index / kv_count place the layer among the attention layers, for the turboquant
 * boundary layers. */
double km_bt_token_bytes(const bt_ctx *x, int heads, int kv_index, int kv_count);
/* The model's layers with km_bt_token_bytes(heads) on every attention layer. */
void km_bt_layout(const bt_ctx *x, km_layout *o, int heads);

/* A row sized by vLLM's rules over o's layers; note explains it. */
void km_bt_emit(bt_ctx *x, const char *tech, const char *mech, const char *variant, const km_layout *o,
                const char *note);
/* A row whose figures are given (the no-paging and offload variants); cap describes what a request holds. */
void km_bt_emit_figures(bt_ctx *x, const char *tech, const char *mech, const char *variant, const km_layout *o,
                        const km_kv_plan *plan, const char *note);
/* Replace the last row's bytes read per step per context token (a sparse read is not the dense one). */
void km_bt_set_read(bt_ctx *x, double read_per_step);
/* A technique this shape makes meaningless: the row is there, its numbers are not. */
void km_bt_emit_na(bt_ctx *x, const char *tech, const char *mech, const char *variant, const char *note);

void km_bt_plan(const bt_ctx *x, const km_layout *o, double budget, km_kv_plan *plan);

/* "1.50 GiB", "97.4 MiB", "12.0 KiB", "512 B"; "1,234,567". */
void km_bt_fmt_bytes(double v, char *buf, size_t len);
void km_bt_fmt_count(double v, char *buf, size_t len);

/* Every technique's rows, in mechanism order. */
void km_bt_rows(bt_ctx *x);

#endif
