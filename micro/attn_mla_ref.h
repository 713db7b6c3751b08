/* CPU reference for MLA decode (attn/mla), written independently of the kernels: one step of one sequence
 * in double precision from its latent rows in token order. */
#ifndef KM_MICRO_ATTN_MLA_REF_H
#define KM_MICRO_ATTN_MLA_REF_H

#include <stddef.h>
#include <stdint.h>

enum { KM_MLA_REF_DIM = 576, KM_MLA_REF_VDIM = 512 };

typedef struct km_mla_ref_shape {
  int heads;
  int fp8;        /* 0: bf16 rows; 1: e4m3 codes times `scale` */
  float scale;    /* fp8: the tensor's scale */
  float sm_scale; /* scores are q.c x sm_scale */
} km_mla_ref_shape;

/* rows: the sequence's ctx latent rows [ctx][576] (bf16 bits or e4m3 codes); q bf16 [heads][576].
 * out[h][512] = sum_t softmax_t(q_h . c_t x sm_scale) c_t[0..512), for the heads in `heads_list` (NULL:
 * every head; else n_list head indices), the other rows untouched. */
void km_mla_ref_step(const km_mla_ref_shape *s, int ctx, const uint16_t *q, const void *rows, const int *heads_list,
                     int n_list, float *out);

/* Decoded value of latent element i. */
double km_mla_ref_elem(const km_mla_ref_shape *s, const void *rows, size_t i);

#endif
