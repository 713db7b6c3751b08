/* MLA decode (DeepSeek-V2/V3, absorbed form) over a paged latent cache (family attn/mla): one query token
 * per sequence, `num_heads` query heads that all read the one latent row per token.
 *
 * Layouts:
 *   q      bf16 [batch][num_heads][576]  (the absorbed query: 512 latent dims, then 64 rope dims)
 *   cache  [num_blocks][block_size][576], bf16, or fp8 e4m3 with one fp32 scale for the whole tensor
 *   block_table int32 [batch][max_blocks_per_seq]; context_lens int32 [batch] (>= 1)
 *   out    bf16 [batch][num_heads][512]
 * For each sequence: S = Q C^T x sm_scale (C: its ctx latent rows), P = softmax(S) over the tokens,
 * O = P C[:, :512]. Softmax in fp32 (running max and sum, base 2); both products on tensor cores
 * (bf16 operands, fp32 accumulators: mma.sync m16n8k16, or wgmma on SM 9.0, below). fp8 codes are converted to bf16 exactly in shared
 * memory; the tensor scale multiplies the scores and the output.
 *
 * Work: a CTA takes `rows` (16, 32 or 64) query heads of one chunk of one sequence; a chunk is a run of
 * 64-token tiles (one tile = one page of block size 64). Split-KV: when batch x head groups does not fill
 * the SMs, the host planner cuts each sequence into chunks; a sequence with one chunk is written directly,
 * else each chunk writes an fp32 partial (normalised output and log2-sum-exp) that a combine pass merges
 * (one CTA per (sequence, head), the chunks spread over 1, 2 or 4 groups of 128 threads so that a batch-1
 * step split into 64-128 chunks keeps many partial rows in flight).
 *
 * The mma.sync CTA (8 warps, 256 threads), for rows = 64 (the compute-bound case, 128 heads = two CTAs per chunk):
 *   shared memory  Q tile 64 x 576 bf16 (72 KiB, loaded once), two latent stages 64 x 576 bf16 (2 x 72 KiB,
 *                  cp.async, XOR-swizzled 16-byte chunks so ldmatrix is conflict-free), P 64 x 64 bf16
 *                  (8 KiB), row maxima / sums (1.5 KiB): 225.5 KiB of the H100/H200's 227 KiB, one CTA per
 *                  SM. fp8: one raw stage 64 x 576 B (36 KiB) converted into one bf16 tile (72 KiB): 188 KiB.
 *                  A device with less (A100: 163 KiB) runs one bf16 stage, or 32-row CTAs for fp8.
 *   S = Q C^T      warp w: rows 32 (w % 2) .. +32, tokens 16 (w / 2) .. +16: 2 x 2 m16n8 accumulators
 *                  (16 registers), 36 k-steps of ldmatrix.x4 A (Q) and B (latent) fragments: 144 mma.
 *   softmax        row maxima of the 4 token groups meet in shared memory; every thread recomputes the new
 *                  max of the rows it needs (no second exchange); P goes to shared memory as bf16.
 *   O += P V       warp w: all 64 rows, output dims 64 w .. +64: 4 x 8 m16n8 accumulators = 128 fp32
 *                  registers per thread (the whole 64 x 512 O lives in the CTA's registers, 128 KiB);
 *                  A = P (ldmatrix), B = latent dims (ldmatrix.trans): 128 mma.
 *   registers      ~128 (O) + 16 (S) + ~12 fragments + ~30 softmax/addressing: under the 255 cap of
 *                  __launch_bounds__(256, 1).
 * Per tile and CTA: 2176 mma (8.9 MFLOP) against 1120 ldmatrix.x4 (573 KiB of shared-memory reads, ~4,500
 * cycles at 128 B/clock): shared-memory bandwidth, not the tensor cores, bounds this mma.sync design; it
 * measured 229 TFLOP/s at 128 heads, batch 64, context 8K (636.7 us on an H200).
 * On an SM 9.0 device with sm_90a code in the build the 64-row CTAs run kernels/attn_mla_wgmma.cu instead:
 * wgmma with both operands read from shared memory by descriptor (Q and the tiles in 128-byte-swizzled
 * blocks of 64 dims), S and the softmax by one warpgroup, P V split over both: 361.4 us (404 TFLOP/s) at
 * the same point; its header says what bounds it. At 16 heads (30 FLOP per byte) the step is memory-bound
 * and runs the mma.sync kernel with 16-row CTAs. Those keep Q in registers (every warp needs the same 16 rows:
 * 36 k-steps x 4 = 144 registers, instead of 147 KiB of ldmatrix reads of Q per tile by the 8 warps), and the
 * 18 KiB so freed makes room for a third latent stage (3 x 72 KiB + P + maxima = 219.5 KiB): two 72 KiB tiles
 * in flight per SM during compute instead of one. */
#ifndef KM_KERNELS_ATTN_MLA_H
#define KM_KERNELS_ATTN_MLA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "split_chunks.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KM_MLA_DIM 576   /* latent width: kv_lora_rank 512 + rope 64 */
#define KM_MLA_VDIM 512  /* V = the first 512 latent dims */
#define KM_MLA_TILE 64   /* tokens per tile (and the block size the cache must be a multiple of) */

typedef enum km_mla_kv {
  KM_MLA_BF16 = 0,
  KM_MLA_FP8_E4M3, /* one fp32 scale for the tensor */
  KM_MLA_KV_COUNT
} km_mla_kv;

typedef struct km_mla_shape {
  int num_heads;  /* a multiple of 16 */
  int block_size; /* a multiple of 64 */
  km_mla_kv kv;
} km_mla_shape;

/* How a CTA is laid out on this device: query heads per CTA and latent stages, from its shared memory. */
typedef struct km_mla_config {
  int rows;       /* 16, 32 or 64 query heads per CTA */
  int stages;     /* bf16: 3 (16 rows: two tiles in flight during this one), 2 (the next tile) or 1; fp8: 1 raw stage */
  int smem_bytes; /* dynamic shared memory per CTA */
  int ctas;       /* CTAs resident at once on the device (SMs x CTAs per SM) */
  int wgmma;      /* 0: mma.sync; 1-12: the warpgroup-MMA kernel (sm_90a, 64 rows) in variant KM_MLA_WG_SPLIT_S,
                     _ONE_S, _ONE_S_N256, _SPLIT_K, _L2_AHEAD1, _L2_AHEAD2, _LEAN_LOAD, _LEAN_L2,
                     _LEAN_DESC (kernels/attn_mla_wgmma.cu), _SEESAW, _SEESAW_LEAN (attn_mla_seesaw.cu) or
                     _QREG (attn_mla_qreg.cu) */
} km_mla_config;

/* The wgmma kernel's variants. SPLIT_S: both warpgroups compute S for 32 tokens each (Q read from shared
 * memory twice) and exchange row maxima; ONE_S: warpgroup 0 computes S for all 64 tokens and the softmax
 * while warpgroup 1 issues the next tile's loads; ONE_S_N256: the same, P V as one m64n256k16 per k-step;
 * SPLIT_K: as ONE_S_N256, but both warpgroups compute S over half of the dims each and warpgroup 1 hands
 * its fp32 partial to warpgroup 0 through shared memory. SEESAW (kernels/attn_mla_seesaw.cu, bf16 latents only):
 * two tiles per step, each warpgroup the S and softmax of one of them and half of O, so one warpgroup's softmax
 * runs beside the other's MMAs; each warpgroup refills the half tiles it read last, in halves through mbarriers.
 * L2_AHEAD1 / L2_AHEAD2: ONE_S_N256, with the tile 1 or 2 past the one being loaded into shared memory
 * requested into L2 by one bulk prefetch (cp.async.bulk.prefetch.L2), each CTA of a sequence's head groups
 * its share of the tile's bytes, so that the refill of a stage waits on L2 rather than on HBM.
 * LEAN_LOAD: ONE_S_N256 with the loading warpgroup's copies at fixed offsets from two per-thread bases (no
 * division or swizzle arithmetic per 16-byte chunk; fp8: the raw tile's plain copy) and each tile's block-table entry
 * read a tile earlier than its copies need it; LEAN_L2 adds the next tile but one requested into L2 (as
 * L2_AHEAD1, from the entry read ahead). LEAN_DESC (the default): LEAN_LOAD with every wgmma descriptor one add from a per-tile
 * base (desc_at) instead of built per k-step. SEESAW_LEAN (bf16 only): SEESAW with each half tile's copies at
 * fixed offsets (load_blocks_lean), the next pair's block-table entries read at the start of the pair, and the
 * descriptors of LEAN_DESC. QREG (kernels/attn_mla_qreg.cu, bf16 only): three warpgroups, one with Q in registers
 * as S's A operand and the softmax, two with half of O each and the copies, over three tile stages (Q's shared
 * memory freed), so S of the next tile runs beside P V of this one. */
#define KM_MLA_WG_IS_SEESAW(v) ((v) == KM_MLA_WG_SEESAW || (v) == KM_MLA_WG_SEESAW_LEAN)
enum {
  KM_MLA_WG_SPLIT_S = 1,
  KM_MLA_WG_ONE_S = 2,
  KM_MLA_WG_ONE_S_N256 = 3,
  KM_MLA_WG_SPLIT_K = 4,
  KM_MLA_WG_SEESAW = 5,
  KM_MLA_WG_L2_AHEAD1 = 6,
  KM_MLA_WG_L2_AHEAD2 = 7,
  KM_MLA_WG_LEAN_LOAD = 8,
  KM_MLA_WG_LEAN_L2 = 9,
  KM_MLA_WG_LEAN_DESC = 10,
  KM_MLA_WG_SEESAW_LEAN = 11,
  KM_MLA_WG_QREG = 12
};
/* The variants that take bf16 latents only. */
#define KM_MLA_WG_BF16_ONLY(v) (KM_MLA_WG_IS_SEESAW(v) || (v) == KM_MLA_WG_QREG)
#define KM_MLA_WG_DEFAULT KM_MLA_WG_LEAN_DESC

/* Which kernel km_mla_pick_config_kernel may take. AUTO: the wgmma kernel where the device is SM 9.0, this
 * build holds its sm_90a code and the heads come in groups of 64; else the mma.sync kernel. */
typedef enum km_mla_kernel {
  KM_MLA_KERNEL_AUTO = 0,
  KM_MLA_KERNEL_MMA,   /* mma.sync on every SM 8.0+ device */
  KM_MLA_KERNEL_WGMMA, /* its default variant; cudaErrorNotSupported where it cannot run */
  KM_MLA_KERNEL_WGMMA_SPLIT_S, /* one variant each (KM_MLA_WG_*), for the comparison rows */
  KM_MLA_KERNEL_WGMMA_ONE_S,
  KM_MLA_KERNEL_WGMMA_ONE_S_N256,
  KM_MLA_KERNEL_WGMMA_SPLIT_K,
  KM_MLA_KERNEL_WGMMA_SEESAW, /* bf16 latents only (cudaErrorNotSupported for fp8) */
  KM_MLA_KERNEL_WGMMA_L2_AHEAD1,
  KM_MLA_KERNEL_WGMMA_L2_AHEAD2,
  KM_MLA_KERNEL_WGMMA_LEAN_LOAD,
  KM_MLA_KERNEL_WGMMA_LEAN_L2,
  KM_MLA_KERNEL_WGMMA_LEAN_DESC,
  KM_MLA_KERNEL_WGMMA_SEESAW_LEAN, /* bf16 latents only */
  KM_MLA_KERNEL_WGMMA_QREG,        /* bf16 latents only */
} km_mla_kernel;

/* 0 when the shape is supported, else a static reason. */
const char *km_mla_shape_error(const km_mla_shape *s);
/* Shared memory a CTA of `rows` heads and `stages` stages of the mma.sync kernel needs. */
int km_mla_smem_bytes(km_mla_kv kv, int rows, int stages);
/* 1 when the mma.sync kernel's CTAs of `rows` heads hold Q in registers (16 rows: no Q region in shared
 * memory, so bf16 runs up to three latent stages), else 0. */
int km_mla_q_in_registers(int rows);
/* Shared memory a CTA of the wgmma kernel needs (64 rows; bf16 two stages, fp8 one), 1 KiB of alignment
 * slack included. */
int km_mla_wgmma_smem_bytes(km_mla_kv kv);
/* Shared memory a CTA of the seesaw variant needs (bf16: Q, two tiles, P, maxima, mbarriers; 1 KiB slack). */
int km_mla_seesaw_smem_bytes(void);
/* The configuration for `device` (its opt-in shared memory and SMs). cudaErrorInvalidValue for a bad shape
 * or a device whose shared memory holds no configuration. */
cudaError_t km_mla_pick_config(const km_mla_shape *s, int device, km_mla_config *out);
/* The same, limited to one kernel (AUTO: km_mla_pick_config). */
cudaError_t km_mla_pick_config_kernel(const km_mla_shape *s, int device, km_mla_kernel kind, km_mla_config *out);
/* 1 when `device` can run the wgmma kernel from this build (SM 9.0 and sm_90a code present). */
int km_mla_wgmma_usable(int device);
/* Make a configuration launchable on the current device (raises the kernel's shared-memory limit to
 * cfg->smem_bytes; km_mla_pick_config does it for its choice): for a configuration chosen by hand. */
cudaError_t km_mla_config_prepare(const km_mla_config *cfg, km_mla_kv kv);

typedef struct km_mla_plan {
  km_mla_shape shape;
  km_mla_config cfg;
  int batch;
  int max_blocks_per_seq;
  int chunk_tiles; /* tiles per chunk (at most) */
  int num_chunks;  /* over all sequences; CTAs = num_chunks x num_heads / rows */
  int split;       /* 1 if any sequence has more than one chunk (then the combine pass runs, or the merge) */
  int combine_groups; /* the combine pass's chunk groups per CTA (1, 2 or 4, from the most chunks of a sequence) */
  int merge;       /* 1: the split sequences' last chunk CTAs merge the partials inside the decode kernel instead of
                      the combine pass; 0 from km_mla_plan_make (the pass: measured faster, reports/attn-notes.md),
                      a caller may set it where km_mla_plan_can_merge, between km_mla_plan_make and
                      km_mla_plan_upload */
  unsigned *d_merge_count; /* merge: per (sequence, head group) arrival counts, zeroed by km_mla_plan_upload; each
                              step leaves them zero (so one plan's steps run one at a time, as they share the
                              workspace anyway) */
  km_split_chunks ch; /* the chunks and their device copy (km_mla_plan_upload) */
} km_mla_plan;

/* The most chunks a sequence may have for the in-kernel merge (the last CTA reads them all at once); more take the
 * combine pass, whose CTAs spread one sequence's many partials (a batch-1 step splits into ~one chunk per SM). */
#define KM_MLA_MERGE_CHUNKS 4

/* Plan one step for configuration cfg (km_mla_pick_config, or any with rows and ctas set). context_lens on
 * the host. chunk_tiles 0: chosen so the CTAs fill the device (cfg.ctas at once), else as given. Returns 0,
 * or -1 with a reason in err. */
int km_mla_plan_make(km_mla_plan *p, const km_mla_shape *s, const km_mla_config *cfg, int batch,
                     const int32_t *context_lens, int max_blocks_per_seq, int chunk_tiles, char *err, size_t errlen);
/* 1 where the in-kernel merge applies: a split plan on the mma.sync kernel with at most KM_MLA_MERGE_CHUNKS chunks a
 * sequence. */
int km_mla_plan_can_merge(const km_mla_plan *p);
/* cudaMalloc + copy (+ the merge's zeroed counts); synchronized; cudaErrorInvalidValue for merge where the plan
 * cannot */
cudaError_t km_mla_plan_upload(km_mla_plan *p, cudaStream_t stream);
void km_mla_plan_free(km_mla_plan *p);

/* fp32 workspace of the split path (0 when the plan does not split). */
size_t km_mla_workspace_bytes(const km_mla_plan *p);
/* Bytes the step reads from the cache: each context token's latent row once (the rows of a partial last
 * tile past the context are not fetched). Head groups re-read rows from L2, which is not counted. */
double km_mla_cache_bytes_read(const km_mla_plan *p, const int32_t *context_lens);
/* Bytes of the partials, written by the chunks and read by the combine pass (each once). */
double km_mla_partial_bytes(const km_mla_plan *p);
/* Floating-point operations of the step: 2 x heads x context x (576 + 512) per sequence. */
double km_mla_flops(const km_mla_shape *s, int batch, const int32_t *context_lens);

typedef struct km_mla_args {
  const uint16_t *q;
  const void *cache;
  const float *scale; /* fp8: the tensor's scale (device, one fp32) */
  const int32_t *block_table;
  const int32_t *context_lens; /* device */
  float sm_scale;
  uint16_t *out;
  void *workspace;
} km_mla_args;

/* The step: the decode kernel, then the combine pass when the plan splits and does not merge in the kernel. */
cudaError_t km_mla_decode(const km_mla_plan *p, const km_mla_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
