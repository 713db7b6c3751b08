/* The case table each micro file exports, and the list of all of them (micro/registry.c). */
#ifndef KM_MICRO_TABLES_H
#define KM_MICRO_TABLES_H

#include "registry.h"

extern const km_case_table km_roofline_table; /* micro/roofline.c */
extern const km_case_table km_attn_table;     /* micro/attn.c */
extern const km_case_table km_attn_mla_table; /* micro/attn_mla.c */
extern const km_case_table km_paged_table;    /* micro/paged.c */
extern const km_case_table km_quant_table;    /* micro/quant.c */
extern const km_case_table km_sparse_table;   /* micro/sparse.c */
extern const km_case_table km_offload_table;  /* micro/offload.c */
extern const km_case_table km_p2p_table;      /* micro/p2p.c */
extern const km_case_table km_mamba_table;    /* micro/mamba.c */
extern const km_case_table km_evict_table;    /* micro/evict.c */
extern const km_case_table km_compress_table; /* micro/compress.c */
extern const km_case_table km_prefix_table;   /* micro/prefix.c */

extern const km_case_table *const km_all_tables[];
extern const size_t km_all_table_count;

/* Commands that run instead of the suite (micro/registry.c). */
extern const km_command km_prefix_sim_command; /* micro/prefix_sim_cli.c: --prefix-sim */
extern const km_command *const km_all_commands[];
extern const size_t km_all_command_count;

#endif
