/* Every family's case table, in the byte table's technique order, and the families' commands. Adding a
 * family is one line here. */
#include "micro_tables.h"

const km_case_table *const km_all_tables[] = {
    &km_roofline_table,
    &km_attn_table,
    &km_attn_mla_table,
    &km_paged_table,
    &km_quant_table,
    &km_prefix_table,
    &km_sparse_table,
    &km_offload_table,
    &km_p2p_table,
    &km_mamba_table,
    &km_evict_table,
    &km_compress_table,
};
const size_t km_all_table_count = sizeof km_all_tables / sizeof km_all_tables[0];

const km_command *const km_all_commands[] = {
    &km_prefix_sim_command,
};
const size_t km_all_command_count = sizeof km_all_commands / sizeof km_all_commands[0];
