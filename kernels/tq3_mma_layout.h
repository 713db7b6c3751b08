/* Where the tensor-core TurboQuant quantize (kernels/quant_tq3_mma.cu) keeps what, for the kernel and for
 * its CPU test (tests/cpu_tq3_mma_layout.c), which checks these maps against the reference rotation and
 * packing with a model of the mma fragments. A warp tile is 16 rows; lane (g, c) = (lane / 4, lane % 4).
 *   - column n (0..7) of n-half h of group j's mma holds element km_tq3_mma_column_element(h, n) of the
 *     group: B_j's columns are permuted so that C's columns 2c, 2c + 1 of both halves are elements
 *     4c .. 4c + 3, i.e. lane (g, c) holds those four of every group of rows g and g + 8.
 *   - code k (0..7) of a lane's word for group pair p is element km_tq3_mma_code_element(p, k, c) of the row.
 *   - lane c of a quad writes bytes [12c, 12c + 12) of each of its two rows from the four words its quad
 *     addressed to it (km_tq3_mma_assemble).
 *   - row r's sum of squares is on the Gram diagonal at lane km_tq3_mma_gram_lane(r). */
#ifndef KM_KERNELS_TQ3_MMA_LAYOUT_H
#define KM_KERNELS_TQ3_MMA_LAYOUT_H

#include <stdint.h>

#ifdef __CUDACC__
#define KM_TQ3L_HD __host__ __device__ __forceinline__
#else
#define KM_TQ3L_HD static inline
#endif

/* The element of its group that column n (0..7) of n-half h holds; B_j's entry (k, that column) is
 * sign(16 j + k) x H16[k][element], H16[a][b] = (-1)^popcount(a & b). */
KM_TQ3L_HD int km_tq3_mma_column_element(int h, int n) { return 4 * (n >> 1) + 2 * h + (n & 1); }

KM_TQ3L_HD int km_tq3_mma_code_element(int p, int k, int c) { return 16 * (2 * p + (k >> 2)) + 4 * c + (k & 3); }

/* q[s]: the 24-bit word lane s of the quad addressed to this lane c (codes of elements 4s .. 4s + 3 of groups
 * 2c and 2c + 1); w: the row's bytes [12c, 12c + 12) as three little-endian words. */
KM_TQ3L_HD void km_tq3_mma_assemble(uint32_t q0, uint32_t q1, uint32_t q2, uint32_t q3, uint32_t *w0, uint32_t *w1,
                                    uint32_t *w2) {
  *w0 = (q0 & 0xfffu) | (q1 & 0xfffu) << 12 | q2 << 24;
  *w1 = (q2 & 0xfffu) >> 8 | (q3 & 0xfffu) << 4 | (q0 >> 12) << 16 | q1 >> 12 << 28;
  *w2 = q1 >> 16 | (q2 >> 12) << 8 | (q3 >> 12) << 20;
}

/* The lane whose Gram accumulators hold row r's diagonal entry (G_lo's for r < 8, G_hi's otherwise). */
KM_TQ3L_HD int km_tq3_mma_gram_lane(int r) { return 4 * (r & 7) + ((r & 7) >> 1); }

#endif
