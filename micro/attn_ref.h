/* CPU reference for the attn/ family, written independently of the kernels: one decode step of one
 * sequence in double precision, from the sequence's cached rows in token order. */
#ifndef KM_MICRO_ATTN_REF_H
#define KM_MICRO_ATTN_REF_H

#include <stddef.h>
#include <stdint.h>

/* (the kernels' km_attn_kv order) */
typedef enum km_attn_ref_kv { KM_REF_KV_BF16 = 0, KM_REF_KV_E4M3, KM_REF_KV_E5M2, KM_REF_KV_U3, KM_REF_KV_TQ3 } km_attn_ref_kv;

typedef struct km_attn_ref_shape {
  int heads, kv_heads, head_dim, q_len, window; /* window 0: full context */
  km_attn_ref_kv kv;
  int per_token;          /* fp8: k_sc / v_sc per (token, KV head), else k_scale / v_scale */
  float k_scale, v_scale; /* fp8 per-tensor */
  float sm_scale;
} km_attn_ref_shape;

/* Rows: K and V of the sequence's ctx tokens, [ctx][kv_heads][head_dim] (bf16 bits, or fp8 codes; 3-bit:
 * [ctx][kv_heads][head_dim / 32] 16-byte group records, micro/quant_ref.h's km_ref_u3_quantize_row;
 * TurboQuant: [ctx][kv_heads][3 head_dim / 8] codes, with each row's norm in k_sc / v_sc),
 * scales [ctx][kv_heads] when per_token. q bf16 [q_len][heads][head_dim]. pages: NULL = every visible
 * token, else per KV head `npages` 16-token page indices (pages[kvh * npages + j]); the positions a query
 * may not see (after its own, or outside the window) are left out either way. Writes out[q_len][heads]
 * [head_dim] for the KV heads kvh < kvh_count only (the others untouched). */
void km_attn_ref_step(const km_attn_ref_shape *s, int ctx, const uint16_t *q, const void *k_rows, const void *v_rows,
                      const float *k_sc, const float *v_sc, const int32_t *pages, int npages, int kvh_count,
                      float *out);

/* Decoded value of element `dim` of head row `hr` (token x kv_heads + KV head) of rows of head_dim d (not
 * TurboQuant, whose elements need the whole row: NAN). */
double km_attn_ref_elem(const void *rows, size_t hr, int dim, int d, km_attn_ref_kv kv);

/* Relative error ||a - b|| / ||b|| and cosine similarity of two vectors of n floats. */
void km_attn_ref_compare(const float *a, const float *b, size_t n, double *rel_err, double *cosine);

#endif
