/* The prefix-cache simulator's pool size, taken from the byte table: the one place that knows where the
 * table keeps the capacity, so the simulator follows whatever rules size the table (vLLM's). */
#ifndef KM_PREFIX_CAPACITY_H
#define KM_PREFIX_CAPACITY_H

#include <stddef.h>

#include "bytes_table.h"

/* vLLM's num_gpu_blocks for the model and budget, and its GPU KV cache size in tokens: the byte table's
 * plan of the model as configured (prefix reuse changes no byte; km_bytes_vllm_plan).
 * 0 ok; -1 with one line in err (a model the simulator cannot model, a budget under one block). */
int km_prefix_pool(const km_model *m, const km_bytes_params *p, long long *tokens, long long *blocks, char *err,
                   size_t errlen);

#endif
