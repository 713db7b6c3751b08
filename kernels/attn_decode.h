/* Decode attention over the paged KV cache (family attn/): one step of q_len (1..4) query tokens per
 * sequence against that sequence's cached K and V, read through its block table in vLLM's layout.
 *
 * Layouts:
 *   q          bf16 [batch][q_len][num_heads][head_dim]; query head j serves KV head j / group
 *   k, v cache [num_blocks][block_size][num_kv_heads][head_dim], bf16 or fp8 (e4m3 / e5m2); uniform 3-bit:
 *              [num_blocks][block_size][num_kv_heads][head_dim / 32] records of 16 bytes (the quant family's
 *              format, kernels/quant_3bit.h: 32 codes packed 3 bits each LSB first in bytes 0..11, fp16 scale
 *              at 12, fp16 zero at 14; x = code x scale + zero), head_dim 128, dequantized in registers;
 *              TurboQuant 3-bit: [num_blocks][block_size][num_kv_heads][3 head_dim / 8] codes of the rotated
 *              vector (kernels/quant_3bit.h) and k_side / v_side fp16 norms ([..][num_kv_heads], V [..][2]),
 *              head_dim 128: q is rotated once per row (q' = H S q), scores are (norm / d) q'.level, P V
 *              accumulates in the rotated domain and the output is rotated back once (o = S H o')
 *   k_scale, v_scale  fp8 only: per tensor one fp32 each; per token-head fp32 [num_blocks][block_size][num_kv_heads]
 *   block_table int32 [batch][max_blocks_per_seq]; context_lens int32 [batch] (>= q_len: the q_len new tokens
 *              are the last ones of the context, already in the cache)
 *   out        bf16 [batch][q_len][num_heads][head_dim]
 * Query token i of a step sits at position ctx - q_len + i and sees the positions <= its own (causal), and
 * with a window W only the last W of them (positions > pos - W). Softmax in fp32 with a running max and sum
 * (scores scaled by `sm_scale`); the products run on tensor cores (mma.sync m16n8k16) with fp32 accumulators:
 * bf16 operands for a bf16 cache, fp16 for fp8 (every fp8 value is exact in fp16; q is rounded to fp16).
 * Every K and V element is read once per step for all the query heads of its group.
 *
 * Work is split on the host (km_attn_plan): each (sequence, KV head) range of 16-token tiles is cut into
 * chunks so that the GPU fills (split-KV, FlashDecoding style); a chunk's warp writes the output directly
 * when its sequence has one chunk, else an fp32 partial (normalised output and log-sum-exp) that a combine
 * pass merges, or (km_attn_plan.cta_merge) the CTA's four partials merge in shared memory and the last CTA of
 * the (sequence, KV head) merges the CTAs' partials. Sparse steps (Quest) pass a list of selected 16-token pages per (sequence, KV head). */
#ifndef KM_KERNELS_ATTN_DECODE_H
#define KM_KERNELS_ATTN_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "split_chunks.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KM_ATTN_TILE 16    /* tokens per tile: one mma k-step of P.V */
#define KM_ATTN_MAX_ROWS 32 /* q_len x group rows one warp carries (two m16 tiles) */
#define KM_ATTN_U3_RECORD 16 /* bytes of one 3-bit group record (32 values) */
#ifndef KM_ATTN_U3_PF
#define KM_ATTN_U3_PF 1 /* 3-bit tiles in flight per warp (register pipeline; H200, b16 x 32K: 1 377.8 us,
                           2 386.6, 4 417.7) */
#endif

typedef enum km_attn_kv {
  KM_ATTN_BF16 = 0,
  KM_ATTN_FP8_E4M3,
  KM_ATTN_FP8_E5M2,
  KM_ATTN_U3, /* uniform asymmetric 3-bit, group 32, fp16 scale and zero */
  KM_ATTN_TQ3, /* TurboQuant 3-bit (turboquant_3bit_nc slots), attended in the rotated domain */
  KM_ATTN_KV_COUNT
} km_attn_kv;

typedef enum km_attn_scale {
  KM_ATTN_SCALE_TENSOR = 0,   /* one fp32 scale for K and one for V */
  KM_ATTN_SCALE_TOKEN_HEAD,   /* one fp32 scale per (token, KV head), for K and for V */
} km_attn_scale;

/* How K/V tiles reach the tensor cores (both verified alike; the rows time them side by side). */
typedef enum km_attn_pipe {
  KM_ATTN_PIPE_REGISTERS = 0, /* global -> fragment registers, 1 (bf16) or 2 (fp8) tiles ahead per warp; the
                                 default, under which fp8's kernel at head_dim 128 with <= 8 query rows per KV
                                 head is the TMA pipeline's (below, its default ring) where sm_90 code runs, and
                                 its register kernel the listed variant (prefetch 1, O^T, scale_load 1 with
                                 per-token-head scales); at head_dim 256 with <= 8 rows both take O^T and one
                                 tile ahead (bf16 in halves of its tokens, fp8 with scale_load 1: kernel_d256) */
  KM_ATTN_PIPE_SMEM_RING,     /* global -> shared-memory ring (cp.async), NS - 1 tiles ahead per warp */
  KM_ATTN_PIPE_TMA,           /* global -> shared-memory ring by the tensor memory accelerator (sm_90): one bulk
                                 tensor copy per K and per V tile, tma_slots - 1 tiles ahead per warp; fp8,
                                 head_dim 128, <= 8 query rows per KV head, no variant */
} km_attn_pipe;

typedef struct km_attn_shape {
  int num_heads;    /* query heads */
  int num_kv_heads; /* num_heads % num_kv_heads == 0 */
  int head_dim;     /* 64, 128 or 256 */
  int block_size;   /* a multiple of 16 */
  int q_len;        /* 1..4; q_len * group <= KM_ATTN_MAX_ROWS (<= 16 for head_dim 256) */
  int window;       /* 0: full context */
  km_attn_kv kv;
  km_attn_scale scale; /* fp8 only */
  km_attn_pipe pipe;   /* 0: registers */
  int prefetch;        /* register pipeline's tiles in flight per warp: 0 = the format's default (bf16 1,
                          fp8 2, TurboQuant 2, uniform 3-bit KM_ATTN_U3_PF; at head_dim 128 with <= 8 rows the
                          quantized formats but e5m2 default to their best variant, has_default_variant in
                          attn_decode_kernel.cuh; at head_dim 256 with <= 8 rows fp8 holds 1 too); 1, 2 or 4 for
                          the variant rows (head_dim 128, <= 8 rows) */
  int pair;            /* 1: two tiles per softmax step (one max/sum reduction per 32 tokens; head_dim 128,
                          <= 8 rows, register pipeline; bf16 then holds 2 tiles in flight) */
  int otrans;          /* 1: accumulate O^T = V^T P^T (half the P V products and accumulators when the rows
                          fit 8); a variant, with an explicit prefetch (KM_ATTN_VARIANTS) */
  int ctas;            /* 0: registers capped for KM_ATTN_MIN_BLOCKS CTAs per SM; 3 or 4: for 3 or 4 (12 or 16
                          warps per SM); a variant, with an explicit prefetch (KM_ATTN_VARIANTS) */
  int unpack;          /* uniform 3-bit: 1 unpacks codes two at a time from 16-bit windows (kernels/u3_unpack.h),
                          2 likewise, with V's pairs as 1 + code / 8, dequantized by one fp16 fma each;
                          TurboQuant (with scale_load 1): 1 takes its codes from the same windows, each pair's
                          level-table selector by one add; 3 likewise, with two pairs' levels looked up from one
                          selector (four byte permutes for two pairs instead of six);
                          a variant, with an explicit prefetch (KM_ATTN_VARIANTS) */
  int combine;         /* 0: split sequences merge inside the decode kernel where the plan allows (cta_merge);
                          1: always the separate combine pass (the rows that compare the two) */
  int scale_load;      /* fp8 e4m3 per token-head: 1 loads a tile's 32 scales once (one 4-byte load per lane,
                          shuffled to the lanes that use them) instead of each of a thread's 8 with its own load;
                          TurboQuant: its 32 fp16 norms so, converted when the tile is computed on; a variant,
                          with an explicit prefetch (KM_ATTN_VARIANTS); the default variant of e4m3 per
                          token-head loads them so too */
  int merge_inflight;  /* the CTA merge's last CTA: 0 or 16 CTA partials in flight per thread, 32: all of up to 32
                          at once (one L2 round at b1 x 32K instead of two; bf16, head_dim 128, <= 8 rows,
                          register pipeline, no variant, combine 0) */
  int l2_ahead;        /* 0, or 2 or 4: the register pipeline also prefetches that many tiles past those in
                          flight into L2 (K and V rows, per-token scales or norms), so that a tile's loads wait
                          on L2 rather than HBM; each format's default kernel at head_dim 128 with <= 8 rows
                          (not e5m2), register pipeline, no variant, not paired, no merge_inflight 32 */
  int lazy_rescale;    /* 1: O is rescaled only in a step where some row's running maximum moved (the same values;
                          fewer instructions per tile); the same kernels as l2_ahead, and not with it;
                          TurboQuant's default kernel rescales so anyway */
  int tma_slots;       /* KM_ATTN_PIPE_TMA: ring slots per warp, 0 (the format's default: KM_ATTN_TMA_SLOTS 3,
                          e5m2 4), 3, 4 or 6 (each slot one 4 KiB tile; registers capped for 4, 3 or 2 CTAs per SM
                          so that the rings fit); 0 for the other pipelines */
  int tma_scales;      /* KM_ATTN_PIPE_TMA with per-token-head scales, 4 slots (tma_slots 0 or 4): 1 copies each
                          tile's scales into its slot (one 4-byte cp.async per lane, counted on the slot's mbarrier)
                          instead of one register load per lane; 2 (the TMA pipeline, 4 slots) keeps the register
                          scales and has every lane arrive on the slot's mbarrier (32 arrivals a phase instead of
                          lane 0's one); 3 (the TMA pipeline, 3 slots) keeps the register scales and has every lane
                          arrive through cp.async.mbarrier.arrive.noinc with no copy of its own (33 arrivals a
                          phase); 0 otherwise */
  int merge_heads;     /* 1: split sequences merge inside the decode kernel with each CTA keeping four KV heads of one
                          chunk (the combine pass's layout: the CTA's warps stream the same tokens' rows): every warp
                          writes its partial, and the last CTA of each (sequence, group of four KV heads) merges the
                          sequence's chunks into the output (plan cta_merge 2); num_kv_heads a multiple of 4,
                          combine 0, merge_inflight 0 or 16; 0: the planner's choice (cta_merge 1 or the pass) */
  int tma_promo;       /* KM_ATTN_PIPE_TMA: the tensor maps' L2 promotion, 0 (the default: 128-byte lines), 64, 128 or
                          256 bytes, or -1 for none; 0 for the other pipelines */
  int steal;           /* 0, 8 or 16: with a plan whose CTAs merge in the kernel (cta_merge 1: four chunks of one
                          (sequence, KV head) per CTA), the last `steal` tiles of each warp's chunk may be computed by
                          any warp of its CTA, claimed tile by tile in shared memory, so that a CTA's faster warps
                          take over its slower warps' last tiles (bf16, head_dim 128, <= 8 rows, register pipeline,
                          no variant, combine 0, merge_heads 0, merge_inflight 0 or 16; other plans run without) */
  int pdl;             /* 1 or 4: the step's kernels are programmatic dependent launches (sm_90; elsewhere plain
                          ones): each lets the next grid in the stream start as its CTAs begin, and requests the first
                          1 or 4 tiles of each chunk into L2 (with their block-table entries and the chunk metadata)
                          before it waits for the grid before it, so that the next step's start overlaps this one's
                          tail; Q, the selection, tiles holding the step's own tokens and every write come after the
                          wait (bf16, head_dim 128, <= 8 rows, register pipeline, no variant, no steal,
                          merge_inflight 0 or 16); 0: plain launches */
  int merge_poll;      /* 1: where the plan merges in CTAs (cta_merge 1) and its grid fits on the device at once
                          (the plan's poll), each (sequence, KV head)'s last CTA merges the others' CTA partials as
                          their flags appear, while they still compute, instead of the last CTA to count itself in
                          merging them all after the count (bf16, head_dim 128, <= 8 rows, register pipeline, no
                          variant, combine 0, merge_heads 0, merge_inflight 0 or 16, no steal, no pdl) */
  int q_smem;          /* where the head_dim 256 kernels keep Q's fragments: KM_ATTN_Q_SMEM in shared memory (one
                          8-byte load per k-step and tile) instead of 32 registers a thread, which leaves them room
                          without spilling (bf16 242 registers instead of 255 with 148 bytes of spill stores; fp8
                          206 instead of 255), KM_ATTN_Q_REGS in registers, 0 the format's default (bf16 shared
                          memory, fp8 registers); head_dim 256, <= 8 query rows per KV head, register pipeline,
                          bf16 or fp8 */
} km_attn_shape;

/* The shape's q_smem (head_dim 256): Q's fragments in shared memory or in registers; 0 is the format's default. */
#define KM_ATTN_Q_SMEM 1
#define KM_ATTN_Q_REGS 2

/* The TMA pipeline's default ring: 3 slots, 2 tiles ahead per warp, 16 warps per SM (4 CTAs, registers capped at
 * 128). 4 slots (3 ahead, 12 warps) was the default until the recorded runs of 3fd60e7 and b2a5297 measured 3 faster
 * at fp8 e4m3 per token-head b16 x 32K (277.9 / 264.3 us against 283.4 / 272.3; H200) and level or faster at b64
 * (1,072.1 / 1,005.1 against 1,074.2 / 1,041.8). */
#define KM_ATTN_TMA_SLOTS 3
/* fp8 e5m2's default ring: 4 slots. Its 3-slot kernel spills 16 bytes at the 128-register cap (e4m3's 4) and
 * measured 320.3 us at b16 x 32K against 271.6 with 4 slots (H200, 7b1312f, same call; the recorded run of 832a6c7:
 * 312.9 with 3, the one before it 273.4 with 4); e4m3 per tensor measured level (262.4 / 262.2). */
#define KM_ATTN_TMA_SLOTS_E5M2 4
/* The ring slots per warp of a TMA-pipeline shape's kernel: tma_scales 1 and 2 have 4, 3 has 3, whatever the
 * default; else tma_slots, or the format's default. */
static inline int km_attn_tma_slots(const km_attn_shape *s) {
  if (s->tma_scales) return s->tma_scales == 3 ? 3 : 4;
  if (s->tma_slots) return s->tma_slots;
  return s->kv == KM_ATTN_FP8_E5M2 ? KM_ATTN_TMA_SLOTS_E5M2 : KM_ATTN_TMA_SLOTS;
}

/* The variant kernels (head_dim 128, <= 8 query rows, register pipeline, every format but e5m2; unpack 1:
 * uniform 3-bit, and TurboQuant with scale_load 1; 2 uniform 3-bit only; 3 TurboQuant with scale_load 1 only; scale_load 1: fp8 e4m3 per token-head and TurboQuant only), as X(prefetch, otrans,
 * ctas, unpack, scale_load); any other combination of the five fields with one of them set has no kernel. */
#define KM_ATTN_VARIANTS(X)                                                                                  \
  X(1, 0, 0, 0, 0) X(2, 0, 0, 0, 0) X(4, 0, 0, 0, 0) X(1, 0, 3, 0, 0) X(1, 1, 0, 0, 0) X(2, 1, 0, 0, 0)         \
  X(1, 1, 3, 0, 0) X(2, 1, 3, 0, 0) X(1, 1, 4, 0, 0) X(1, 1, 0, 1, 0) X(2, 1, 3, 1, 0) X(1, 1, 4, 1, 0)         \
  X(1, 1, 0, 0, 1) X(2, 1, 0, 0, 1) X(2, 1, 3, 0, 1) X(2, 1, 3, 2, 0) X(2, 1, 3, 1, 1) X(2, 1, 3, 3, 1)

/* Whether the window unpacking `unpack` exists for format kv with scale_load as given (unpack 0 always does):
 * uniform 3-bit 1 and 2; TurboQuant 1 and 3, with its norms loaded once per lane. The one rule
 * km_attn_shape_error, the kernels' variant table (at compile time) and gpu_attn's variant loop ask. */
#ifdef __cplusplus
#define KM_ATTN_CONSTEXPR constexpr
#else
#define KM_ATTN_CONSTEXPR
#endif
static inline KM_ATTN_CONSTEXPR int km_attn_unpack_exists(int kv, int unpack, int scale_load) {
  return !unpack || (kv == KM_ATTN_U3 && unpack <= 2) || ((unpack == 1 || unpack == 3) && scale_load && kv == KM_ATTN_TQ3);
}

/* Bytes of one (token, KV head) row of a cache in format kv: bf16 2d, fp8 d, uniform 3-bit d / 2 (16-byte
 * records of 32 values), TurboQuant 3d / 8 (its fp16 norms are apart, in k_side / v_side). */
size_t km_attn_head_bytes(km_attn_kv kv, int head_dim);

/* 0 when the shape is supported, else a static reason. */
const char *km_attn_shape_error(const km_attn_shape *s);

/* Host-built work description (device arrays the caller copies with km_attn_plan_upload). */
typedef struct km_attn_plan {
  km_attn_shape shape;
  int batch;
  int max_blocks_per_seq;
  int chunk_tiles;   /* tiles of the longest chunk (a sequence's chunks differ by at most one tile) */
  int num_chunks;    /* over all sequences (each chunk covers all KV heads: items = num_chunks * kv_heads) */
  int split;         /* 1 if any sequence has more than one chunk (the partials are merged) */
  int cta_merge;     /* 1: every sequence has a multiple of 4 chunks (>= 4) and the rows fit: each CTA's four
                        warps take four consecutive chunks of one (sequence, KV head) and merge them in shared
                        memory into one partial, and the last CTA of each (sequence, KV head) merges those into
                        the output (one launch); 2 (shape merge_heads): each CTA's warps take four KV heads of one
                        chunk, each writes its partial, and the last CTA of each (sequence, four KV heads) merges
                        the sequence's partials into the output (one launch); 0: one partial per chunk and a
                        combine pass */
  int poll;          /* 1 (shape merge_poll, cta_merge 1, the grid's CTAs all resident at once): the CTA partials
                        merge by flags (one per CTA in the workspace) into each (sequence, KV head)'s last CTA */
  int sparse_pages;  /* > 0: Quest, this many selected pages per (sequence, KV head) */
  /* the chunks (tile ranges index the tile list) and their device copy (km_attn_plan_upload) */
  km_split_chunks ch;
} km_attn_plan;

/* Plan one step. context_lens on the host. chunk_tiles 0: chosen so that the chunks fill the device
 * (`target_warps` concurrent warps, see km_attn_target_warps), else as given. sparse_pages > 0: each
 * (sequence, KV head) reads that many selected pages (the tile list is the selection). Returns 0, or -1
 * with a reason in err (bad shape, a context shorter than q_len or longer than the table). */
int km_attn_plan_make(km_attn_plan *p, const km_attn_shape *s, int batch, const int32_t *context_lens,
                      int max_blocks_per_seq, int sparse_pages, int chunk_tiles, int target_warps, char *err,
                      size_t errlen);
/* The tile pipeline (km_attn_pipe) of the kernel this shape's step runs on the current device: the shape's own,
 * or KM_ATTN_PIPE_TMA where fp8's default takes it; -1 where no kernel runs. */
int km_attn_tile_pipe(const km_attn_shape *s);
/* Resident warps of the decode kernel for this shape on `device` (occupancy x SMs). */
int km_attn_target_warps(const km_attn_shape *s, int device);
cudaError_t km_attn_plan_upload(km_attn_plan *p, cudaStream_t stream); /* cudaMalloc + copy; sync'ed */
void km_attn_plan_free(km_attn_plan *p);

/* Workspace the split path needs (0 when it does not split): fp32 partials, and with cta_merge an int count
 * per (sequence, KV head) that must be zero before the first step (km_attn_workspace_init; each step leaves
 * it zero again). */
size_t km_attn_workspace_bytes(const km_attn_plan *p);
cudaError_t km_attn_workspace_init(const km_attn_plan *p, void *workspace, cudaStream_t stream);
/* Bytes the step reads from K and V (whole tiles, masked tokens included) and of the partials. */
double km_attn_kv_bytes_read(const km_attn_plan *p);
double km_attn_partial_bytes(const km_attn_plan *p);

/* Stamps (km_attn_args.stamps): KM_ATTN_STAMPS 64-bit values per work item (warp), in item order
 * (num_chunks x kv_heads): the SM clock (clock64) at each point of the step, the global timer (ns) at its
 * start and end, the SM and whether the warp's CTA wrote the output, and the chunk's tiles. */
enum {
  KM_ATTN_STAMP_START_NS = 0, /* global timer, ns: the warp starts */
  KM_ATTN_STAMP_START,        /* SM clock: the warp starts */
  KM_ATTN_STAMP_METADATA,     /* its chunk's sequence, tile range and context length have arrived */
  KM_ATTN_STAMP_Q,            /* its query fragments have arrived */
  KM_ATTN_STAMP_FIRST_TILE,   /* the first tile is done (its K and V loaded, scores, softmax, P V) */
  KM_ATTN_STAMP_LOOP,         /* every tile is done */
  KM_ATTN_STAMP_WRITTEN,      /* its partial (or output) is written */
  KM_ATTN_STAMP_COUNTED,      /* its CTA is counted in (the CTA merge's partial, the fence and the count, where the
                                 plan merges in the kernel; else = WRITTEN) */
  KM_ATTN_STAMP_END,          /* SM clock: the warp ends (after the last CTA's merge into the output) */
  KM_ATTN_STAMP_END_NS,       /* global timer, ns: the warp ends */
  KM_ATTN_STAMP_SM,           /* bits 0-15: the SM; bit 16: its CTA wrote the output (the merge's last) */
  KM_ATTN_STAMP_TILES,        /* tiles of its chunk */
  KM_ATTN_STAMP_SPARE,        /* not written by a real step */
  KM_ATTN_STAMPS
};

typedef struct km_attn_args {
  const uint16_t *q;
  const void *k_cache, *v_cache;
  const float *k_scale, *v_scale; /* fp8 */
  const int32_t *block_table;
  const int32_t *context_lens;    /* device */
  const int32_t *selected;        /* sparse: [batch * kv_heads][sparse_pages] logical page indices */
  float sm_scale;
  uint16_t *out;
  void *workspace;
  const uint16_t *k_side, *v_side; /* TurboQuant: the quantizer's fp16 side data (norms) */
  unsigned long long *stamps;      /* NULL, or KM_ATTN_STAMPS values per item: the step runs the stamped kernel
                                      (bf16, head_dim 128, <= 8 rows, register pipeline, no variant; any other
                                      shape is refused with cudaErrorNotSupported), with the shape's
                                      merge_inflight */
  long long cache_blocks;          /* blocks in each of the K and V caches (and their scales): the TMA pipeline's
                                      tensor maps need the extent; 0 refuses that pipeline */
} km_attn_args;

/* The step: the decode kernel, then the combine pass when the plan splits without cta_merge. */
cudaError_t km_attn_decode(const km_attn_plan *p, const km_attn_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
