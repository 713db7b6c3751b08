/* Capacity from the byte table: build it, find the prefix_reuse row, read its capacity_tokens cell. */
#include "prefix_capacity.h"

#include <stdio.h>
#include <string.h>

static long long column_of(const km_table *t, const char *key) {
  for (size_t c = 0; c < t->ncols; c++)
    if (strcmp(t->cols[c].key, key) == 0) return (long long)c;
  return -1;
}

static const km_cell *cell(const km_table *t, size_t row, long long col) {
  return &t->cells[row * t->ncols + (size_t)col];
}

/* The simulator replays one full-attention KV cache group; windowed and state layers are other groups
 * with other eviction rules in vLLM. */
static int full_attention_only(const km_model *m, char *err, size_t errlen) {
  for (int l = 0; l < m->num_layers && l < KM_MODEL_MAX_LAYERS; l++)
    if (m->layer_kind[l] != KM_LAYER_GLOBAL && m->layer_kind[l] != KM_LAYER_MLP) {
      snprintf(err, errlen, "--model %s: layer %d is %s; the prefix-cache simulator models full-attention layers only",
               m->name, l, m->layer_kind[l] == KM_LAYER_LOCAL ? "sliding-window attention" : "a Mamba layer");
      return -1;
    }
  return 0;
}

int km_prefix_pool(const km_model *m, const km_bytes_params *p, long long *tokens, long long *blocks, char *err,
                   size_t errlen) {
  if (full_attention_only(m, err, errlen)) return -1;
  km_table *t = NULL;
  if (km_bytes_table_build(m, p, &t, err, errlen)) return -1;
  long long tech = column_of(t, "technique"), cap = column_of(t, "capacity_tokens");
  int found = 0;
  for (size_t r = 0; tech >= 0 && cap >= 0 && r < t->nrows && !found; r++) {
    const km_cell *name = cell(t, r, tech), *c = cell(t, r, cap);
    if (name->kind != KM_CELL_TEXT || strcmp(name->text, "prefix_reuse") != 0 || c->kind == KM_CELL_EMPTY) continue;
    *tokens = (long long)c->number;
    found = 1;
  }
  km_table_free(t);
  if (!found) {
    snprintf(err, errlen, "the byte table has no prefix_reuse capacity for --model %s", m->name);
    return -1;
  }
  *blocks = *tokens / p->block_size;
  if (*blocks < 2) {
    snprintf(err, errlen, "--kv-budget: %lld blocks of %lld tokens, and vLLM keeps block 0 as its null block: need at "
             "least 2", *blocks, p->block_size);
    return -1;
  }
  return 0;
}
