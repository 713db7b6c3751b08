// Decode attention over the paged cache (see attn_decode.h): the host planner, the combine pass and the
// launch. The decode kernel is in attn_decode_kernel.cuh, instantiated per KV format in
// attn_decode_<format>.cu.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_decode.h"
#include "attn_decode_kernel.cuh"
#include "tensor_map_encode.h"

using namespace km_attn_detail;

namespace {

// Combine: one CTA per (sequence, KV head, row) of a split sequence. Its warps take the chunks in turn
// (warp w: w, w + COMBINE_WARPS, ...), four at a time with their loads issued together, each keeping a
// running (max, weight sum, weighted output) over its chunks with lanes over head dims; the warps' states
// merge through shared memory.
constexpr int COMBINE_WARPS = 8;

// PL: 1 for a programmatic dependent launch (the shape's pdl): the next grid may start at once, and the partials
// are read once the decode kernel before has completed.
template <int D, int PL = 0>
__global__ void __launch_bounds__(COMBINE_WARPS * 32) combine_kernel(const Params p, int batch) {
  constexpr int PER = D / 32, U = 4;
  if constexpr (PL) grid_launch_next();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long w = blockIdx.x;
  const int r = (int)(w % p.rows), kvh = (int)(w / p.rows % p.kv_heads), seq = (int)(w / p.rows / p.kv_heads);
  const int n = __ldg(p.seq_chunks + seq);
  if (n <= 1) return;
  if constexpr (PL) grid_wait();
  const int c0 = __ldg(p.seq_chunk0 + seq);
  static_assert(PER <= KM_ATTN_MERGE_DIMS, "a lane's output dims in one running merge");
  km_attn_merge mg = km_attn_merge_start();
  for (int k0 = warp; k0 < n; k0 += COMBINE_WARPS * U) {
    float lse[U], po[U][PER];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = k0 + u * COMBINE_WARPS;
      const size_t slot = ((size_t)(c0 + (k < n ? k : 0)) * p.kv_heads + kvh) * p.rows + r;
      lse[u] = k < n ? p.part_lse[slot] : -INFINITY;
      const float *src = p.part_o + slot * D + lane * PER;
#pragma unroll
      for (int e = 0; e < PER; ++e) po[u][e] = src[e];
    }
    km_attn_merge_block(&mg, lse, &po[0][0], U, PER);  // kernels/attn_merge.h
  }
  __shared__ float sm[COMBINE_WARPS], ss[COMBINE_WARPS], so[COMBINE_WARPS][D];
  if (lane == 0) {
    sm[warp] = mg.m;
    ss[warp] = mg.sum;
  }
#pragma unroll
  for (int e = 0; e < PER; ++e) so[warp][lane * PER + e] = mg.acc[e];
  __syncthreads();
  if (warp) return;
  float mx = -INFINITY;
#pragma unroll
  for (int k = 0; k < COMBINE_WARPS; ++k) mx = fmaxf(mx, sm[k]);
  const float m_use = mx == -INFINITY ? 0.f : mx;
  float tot = 0.f, out[PER];
#pragma unroll
  for (int e = 0; e < PER; ++e) out[e] = 0.f;
#pragma unroll
  for (int k = 0; k < COMBINE_WARPS; ++k) {
    const float f = sm[k] == -INFINITY ? 0.f : exp2f(sm[k] - m_use);
    tot += f * ss[k];
#pragma unroll
    for (int e = 0; e < PER; ++e) out[e] += f * so[k][lane * PER + e];
  }
  const float inv = tot > 0.f ? 1.f / tot : 0.f;
  const int qi = r / p.group, head = kvh * p.group + r % p.group;
  uint16_t *orow = p.out + ((size_t)(seq * p.q_len + qi) * p.heads + head) * D + lane * PER;
#pragma unroll
  for (int e = 0; e < PER; e += 2)
    *reinterpret_cast<uint32_t *>(orow + e) = pack_f32x2(out[e] * inv, out[e + 1] * inv, false);
}

Kern kernel_for_format(const km_attn_shape &s, int mt) {
  switch (s.kv) {
    case KM_ATTN_BF16: return kernels_bf16(s, mt);
    case KM_ATTN_FP8_E4M3: return kernels_e4m3(s, mt);
    case KM_ATTN_FP8_E5M2: return kernels_e5m2(s, mt);
    case KM_ATTN_U3: return kernels_u3(s, mt);
    case KM_ATTN_TQ3: return kernels_tq3(s, mt);
    default: return Kern{nullptr, 0};
  }
}

int rows_of(const km_attn_shape *s) { return s->q_len * (s->num_heads / s->num_kv_heads); }
int mtiles_of(const km_attn_shape *s) { return rows_of(s) <= 8 ? 0 : (rows_of(s) + 15) / 16; }

// The step's kernel: the format's, or with stamps, a wider merge or work stealing one of bf16's other
// instantiations.
Kern decode_for(const km_attn_shape *s, bool stamps = false, bool poll = false) {
  if (stamps || s->merge_inflight == 32 || s->steal || s->pdl || poll)
    return kernel_bf16_extra(*s, mtiles_of(s), stamps, poll);
  return kernel_for_format(*s, mtiles_of(s));
}

const void *combine_for(int d, bool pdl) {
  if (pdl) return d == 128 ? reinterpret_cast<const void *>(&combine_kernel<128, 1>) : nullptr;
  switch (d) {
    case 64: return reinterpret_cast<const void *>(&combine_kernel<64>);
    case 128: return reinterpret_cast<const void *>(&combine_kernel<128>);
    case 256: return reinterpret_cast<const void *>(&combine_kernel<256>);
    default: return nullptr;
  }
}

// A launch of fn, with pdl as a programmatic dependent launch (the kernel waits for the grid before it itself).
cudaError_t launch(const void *fn, unsigned grid, unsigned threads, void **args, size_t smem, cudaStream_t stream,
                   bool pdl) {
  if (!pdl) return cudaLaunchKernel(fn, dim3(grid), dim3(threads), args, smem, stream);
  cudaLaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelExC(&cfg, fn, args);
}

int tiles_of(const km_attn_shape *s, int ctx) {
  // tiles holding a position some query of the step may see
  int lo = 0;
  if (s->window > 0) lo = ctx - s->q_len - s->window + 1;
  if (lo < 0) lo = 0;
  return (ctx + KM_ATTN_TILE - 1) / KM_ATTN_TILE - lo / KM_ATTN_TILE;
}

int first_tile_of(const km_attn_shape *s, int ctx) {
  int lo = s->window > 0 ? ctx - s->q_len - s->window + 1 : 0;
  return (lo < 0 ? 0 : lo) / KM_ATTN_TILE;
}

int seq_tiles(const km_attn_shape *s, int ctx, int sparse_pages) { return sparse_pages > 0 ? sparse_pages : tiles_of(s, ctx); }

// Chunks of a sequence of n tiles at chunk length ct; with `quad` (the CTA merge) rounded up to a multiple of
// WARPS, or 0 where that is impossible (fewer than WARPS chunks, or more chunks than tiles).
int chunk_count(int n, int ct, bool quad) {
  const int nc = (n + ct - 1) / ct;
  if (!quad) return nc;
  const int up = (nc + WARPS - 1) / WARPS * WARPS;
  return nc >= WARPS && up <= n ? up : 0;
}

// Chunk length (tiles) for a step: the resident warps run the items in waves, and a wave lasts as long as
// its longest chunk plus a fixed start (the first loads' latency, the partial's write: ~STARTUP tiles), so
// the estimated time of a choice is waves x (longest chunk + STARTUP), or the whole work spread evenly when
// lengths differ. Candidates from 4 tiles (64 tokens; 2 for a sparse step) to the longest sequence; the
// cheapest wins, ties to the longer chunk (fewer partials to combine). With `quad`, each sequence's chunk count
// is rounded up as the CTA merge needs and a candidate that cannot be rounded is skipped. Returns 0 when no
// candidate is left; *cost: the winner's estimate.
int pick_chunk_tiles(const km_attn_shape *s, int batch, const int32_t *ctx, int sparse_pages, int target_warps,
                     bool quad, double *cost_out) {
  constexpr double STARTUP = 4.0;
  const double W = target_warps > 0 ? target_warps : 1;
  int longest = 1;
  for (int b = 0; b < batch; ++b) {
    const int n = seq_tiles(s, ctx[b], sparse_pages);
    longest = n > longest ? n : longest;
  }
  int best = quad ? 0 : longest;
  double best_cost = 1e300;
  // the floor: the recorded runs of 547ef6a and b2a5297 measured Quest b1 x 32K at 21.87 / 21.74 us in chunks of 2
  // tiles against 23.83 / 23.56 in the planner's 4 (and 23.92 / 23.68 in 1), while dense b1 x 4K lost in chunks of 2
  // (14.41 / 14.01 against 12.82 / 12.70): shorter chunks pay where a (sequence, KV head) then has more than 16 CTA
  // partials for the last CTA to merge (two rounds), which Quest's 128 selected tiles in chunks of 2 do not reach
  const int floor_tiles = sparse_pages > 0 ? 2 : 4;
  for (int ct = longest; ct >= floor_tiles; ct = ct > 64 ? ct - (ct >> 6) : ct - 1) {
    double items = 0, work = 0;
    int maxlen = 0;
    bool ok = true;
    for (int b = 0; b < batch; ++b) {
      const int n = seq_tiles(s, ctx[b], sparse_pages), nc = chunk_count(n, ct, quad);
      ok = nc > 0;
      if (!ok) break;
      const int len = (n + nc - 1) / nc;
      items += nc;
      work += n + nc * STARTUP;
      maxlen = len > maxlen ? len : maxlen;
    }
    if (!ok) continue;
    items *= s->num_kv_heads;
    work *= s->num_kv_heads;
    const double waves = ceil(items / W);
    double cost = waves * (maxlen + STARTUP);
    if (cost < work / W) cost = work / W;
    if (cost < best_cost * (1 - 1e-9)) {
      best_cost = cost;
      best = ct;
    }
  }
  *cost_out = best_cost;
  return best;
}

size_t row_bytes(const km_attn_shape *s) { return (size_t)s->num_kv_heads * km_attn_head_bytes(s->kv, s->head_dim); }

}  // namespace

extern "C" size_t km_attn_head_bytes(km_attn_kv kv, int head_dim) {
  const size_t d = (size_t)head_dim;
  switch (kv) {
    case KM_ATTN_BF16: return 2 * d;
    case KM_ATTN_U3: return d / 32 * KM_ATTN_U3_RECORD;
    case KM_ATTN_TQ3: return 3 * d / 8;
    default: return d;
  }
}

extern "C" const char *km_attn_shape_error(const km_attn_shape *s) {
  if (s->num_heads < 1 || s->num_kv_heads < 1 || s->num_heads % s->num_kv_heads)
    return "query heads must be a positive multiple of KV heads";
  if (s->head_dim != 64 && s->head_dim != 128 && s->head_dim != 256) return "head_dim must be 64, 128 or 256";
  if (s->block_size < KM_ATTN_TILE || s->block_size % KM_ATTN_TILE) return "block size must be a multiple of 16";
  if (s->q_len < 1 || s->q_len > 4) return "q_len must be 1..4";
  if (s->window < 0) return "window must be >= 0";
  if (s->kv < 0 || s->kv >= KM_ATTN_KV_COUNT) return "unknown KV format";
  if (s->pipe != KM_ATTN_PIPE_REGISTERS && s->pipe != KM_ATTN_PIPE_SMEM_RING && s->pipe != KM_ATTN_PIPE_TMA)
    return "unknown tile pipeline";
  if (s->combine != 0 && s->combine != 1) return "combine must be 0 (merge in the kernel where possible) or 1";
  if ((s->kv == KM_ATTN_U3 || s->kv == KM_ATTN_TQ3) && (s->head_dim != 128 || s->pipe != KM_ATTN_PIPE_REGISTERS))
    return "3-bit KV: head_dim 128, register pipeline";
  // the variants and the paired tiles exist for one kernel shape only (kernel_variant, kernel_paired)
  const bool variant_shape = s->head_dim == 128 && rows_of(s) <= 8 && s->pipe == KM_ATTN_PIPE_REGISTERS &&
                             s->kv != KM_ATTN_FP8_E5M2;
  if (s->scale_load && (s->scale_load != 1 ||
                        !((s->kv == KM_ATTN_FP8_E4M3 && s->scale == KM_ATTN_SCALE_TOKEN_HEAD) || s->kv == KM_ATTN_TQ3)))
    return "scale_load 1 (a tile's per-token scales loaded once, one per lane): fp8 e4m3 with per-token-head "
           "scales, or TurboQuant's norms, only";
  if (is_variant(*s)) {
    bool listed = false;
#define KM_ATTN_VARIANT_LISTED(pf, o, ct, uw, sl) \
  listed = listed || (s->prefetch == pf && s->otrans == o && s->ctas == ct && s->unpack == uw && s->scale_load == sl);
    KM_ATTN_VARIANTS(KM_ATTN_VARIANT_LISTED)
#undef KM_ATTN_VARIANT_LISTED
    const bool unpack_ok = km_attn_unpack_exists(s->kv, s->unpack, s->scale_load);
    if (!listed || !variant_shape || s->pair || !unpack_ok)
      return "variants (prefetch 1, 2 or 4; O^T; 3 or 4 CTAs per SM; window unpacking 1 or 2 for uniform 3-bit, 1 or 3 "
             "for TurboQuant with its norms loaded once; one "
             "scale load per lane for fp8 e4m3 per token-head and TurboQuant): a combination KM_ATTN_VARIANTS lists, head_dim "
             "128, <= 8 query rows per KV head, register pipeline, not e5m2, not paired";
  }
  // the options of each format's default kernel (kernel_default_option) exist at the variants' shape only
  const bool default_option_shape = variant_shape && !is_variant(*s) && !s->pair && s->merge_inflight != 32;
  if (s->l2_ahead != 0 && s->l2_ahead != 2 && s->l2_ahead != 4) return "l2_ahead must be 0, 2 or 4";
  if (s->l2_ahead && !default_option_shape)
    return "l2_ahead (tiles prefetched into L2): each format's default kernel only (head_dim 128, <= 8 query rows "
           "per KV head, register pipeline, not e5m2, no variant, not paired, no merge_inflight 32)";
  if (s->lazy_rescale != 0 && s->lazy_rescale != 1) return "lazy_rescale must be 0 or 1";
  if (s->lazy_rescale && (!default_option_shape || s->l2_ahead))
    return "lazy_rescale: each format's default kernel only (head_dim 128, <= 8 query rows per KV head, register "
           "pipeline, not e5m2, no variant, not paired, no merge_inflight 32, not with l2_ahead)";
  if (s->merge_inflight != 0 && s->merge_inflight != 16 && s->merge_inflight != 32)
    return "merge_inflight must be 0, 16 or 32";
  if (s->merge_inflight == 32 && (!bf16_default_shape(*s, mtiles_of(s)) || s->combine))
    return "merge_inflight 32: bf16, head_dim 128, <= 8 query rows per KV head, register pipeline, no variant, "
           "combine 0";
  if (s->steal != 0 && s->steal != 8 && s->steal != 16) return "steal must be 0, 8 or 16";
  if (s->steal && (!bf16_default_shape(*s, mtiles_of(s)) || s->combine || s->merge_heads || s->merge_inflight == 32))
    return "steal: bf16, head_dim 128, <= 8 query rows per KV head, register pipeline, no variant, combine 0, "
           "merge_heads 0, merge_inflight 0 or 16";
  if (s->pdl != 0 && s->pdl != 1 && s->pdl != 4) return "pdl must be 0, 1 or 4";
  if (s->pdl && (!bf16_default_shape(*s, mtiles_of(s)) || s->steal || s->merge_inflight == 32))
    return "pdl: bf16, head_dim 128, <= 8 query rows per KV head, register pipeline, no variant, no steal, "
           "merge_inflight 0 or 16";
  if (s->merge_poll != 0 && s->merge_poll != 1) return "merge_poll must be 0 or 1";
  if (s->merge_poll && (!bf16_default_shape(*s, mtiles_of(s)) || s->combine || s->merge_heads ||
                        s->merge_inflight == 32 || s->steal || s->pdl))
    return "merge_poll: bf16, head_dim 128, <= 8 query rows per KV head, register pipeline, no variant, combine 0, "
           "merge_heads 0, merge_inflight 0 or 16, no steal, no pdl";
  if (s->q_smem != 0 && s->q_smem != KM_ATTN_Q_SMEM && s->q_smem != KM_ATTN_Q_REGS)
    return "q_smem must be 0, 1 (shared memory) or 2 (registers)";
  if (s->q_smem && (s->head_dim != 256 || rows_of(s) > 8 || s->pipe != KM_ATTN_PIPE_REGISTERS ||
                    (s->kv != KM_ATTN_BF16 && s->kv != KM_ATTN_FP8_E4M3 && s->kv != KM_ATTN_FP8_E5M2)))
    return "q_smem: head_dim 256, <= 8 query rows per KV head, register pipeline, bf16 or fp8";
  if (s->merge_heads != 0 && s->merge_heads != 1) return "merge_heads must be 0 or 1";
  if (s->merge_heads && (s->num_kv_heads % WARPS != 0 || s->combine || s->merge_inflight == 32))
    return "merge_heads 1: num_kv_heads a multiple of 4, combine 0, merge_inflight 0 or 16";
  if (s->pair && (s->pair != 1 || !variant_shape))
    return "paired tiles: head_dim 128, <= 8 query rows per KV head, register pipeline, default depth, not e5m2";
  if (s->tma_slots && s->pipe != KM_ATTN_PIPE_TMA) return "tma_slots: the TMA pipeline only";
  if (s->tma_promo != 0 && s->tma_promo != -1 && s->tma_promo != 64 && s->tma_promo != 128 && s->tma_promo != 256)
    return "tma_promo must be 0 (the default), -1 (none), 64, 128 or 256";
  if (s->tma_promo && s->pipe != KM_ATTN_PIPE_TMA) return "tma_promo: the TMA pipeline only";
  if (s->tma_scales < 0 || s->tma_scales > 3) return "tma_scales must be 0, 1, 2 or 3";
  if (s->tma_scales == 3 && (s->pipe != KM_ATTN_PIPE_TMA || (s->tma_slots != 0 && s->tma_slots != 3)))
    return "tma_scales 3: the TMA pipeline with 3 slots (tma_slots 0 or 3: this variant has 3 whatever the default)";
  if (s->tma_scales == 2 && (s->pipe != KM_ATTN_PIPE_TMA || (s->tma_slots != 0 && s->tma_slots != 4)))
    return "tma_scales 2: the TMA pipeline with 4 slots (tma_slots 0 or 4: this variant has 4 whatever the default)";
  if (s->tma_scales == 1 && (s->pipe != KM_ATTN_PIPE_TMA || s->scale != KM_ATTN_SCALE_TOKEN_HEAD ||
                        (s->tma_slots != 0 && s->tma_slots != 4)))
    return "tma_scales 1: the TMA pipeline with per-token-head scales and 4 slots (tma_slots 0 or 4: this variant has 4 whatever the default)";
  if (s->pipe == KM_ATTN_PIPE_TMA) {
    if (s->tma_slots != 0 && s->tma_slots != 3 && s->tma_slots != 4 && s->tma_slots != 6)
      return "tma_slots must be 0 (the default), 3, 4 or 6";
    if ((s->kv != KM_ATTN_FP8_E4M3 && s->kv != KM_ATTN_FP8_E5M2) || s->head_dim != 128 || rows_of(s) > 8 ||
        is_variant(*s) || s->pair || s->l2_ahead || s->lazy_rescale || s->merge_inflight == 32)
      return "TMA pipeline: fp8 (e4m3 or e5m2), head_dim 128, <= 8 query rows per KV head, no variant, not paired, "
             "no l2_ahead, lazy_rescale or merge_inflight 32";
  }
  if (rows_of(s) > (s->head_dim == 256 ? 16 : KM_ATTN_MAX_ROWS))
    return "q_len x group exceeds the rows one warp carries (32; 16 at head_dim 256)";
  return nullptr;
}

extern "C" int km_attn_tile_pipe(const km_attn_shape *s) {
  const Kern k = decode_for(s);
  return k.fn ? k.pipe : -1;
}

extern "C" int km_attn_target_warps(const km_attn_shape *s, int device) {
  const Kern k = decode_for(s);
  int sms = 0, blocks = 0;
  if (!k.fn || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.fn, WARPS * 32, (size_t)k.smem) != cudaSuccess)
    return 0;
  return sms * blocks * WARPS;
}

extern "C" int km_attn_plan_make(km_attn_plan *p, const km_attn_shape *s, int batch, const int32_t *context_lens,
                                 int max_blocks_per_seq, int sparse_pages, int chunk_tiles, int target_warps,
                                 char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  const char *why = km_attn_shape_error(s);
  if (!why && batch < 1) why = "batch must be >= 1";
  if (why) {
    snprintf(err, errlen, "%s", why);
    return -1;
  }
  long long total_tiles = 0;
  for (int b = 0; b < batch; ++b) {
    const int ctx = context_lens[b];
    if (ctx < s->q_len) {
      snprintf(err, errlen, "sequence %d: context %d is shorter than q_len %d", b, ctx, s->q_len);
      return -1;
    }
    if ((long long)(ctx + s->block_size - 1) / s->block_size > max_blocks_per_seq) {
      snprintf(err, errlen, "sequence %d: context %d needs more than %d blocks of %d", b, ctx, max_blocks_per_seq,
               s->block_size);
      return -1;
    }
    if (sparse_pages > 0 && sparse_pages > (ctx + KM_ATTN_TILE - 1) / KM_ATTN_TILE) {
      snprintf(err, errlen, "sequence %d: %d selected pages but only %d in its context", b, sparse_pages,
               (ctx + KM_ATTN_TILE - 1) / KM_ATTN_TILE);
      return -1;
    }
    total_tiles += sparse_pages > 0 ? sparse_pages : tiles_of(s, ctx);
  }
  total_tiles *= s->num_kv_heads;
  // The CTA merge where the rows fit its shared memory (WARPS x rows x (head_dim + 1) floats, <= 33 KiB) and
  // the shape does not ask for the separate pass. With the planner's chunk length, only where every sequence
  // has >= MERGE_MIN_CHUNKS chunks and the rounded counts cost at most MERGE_SLACK tiles more than the plain
  // ones. H200 (db2a279, GQA 32:8 d128): the merge won at b1 x 32K (128 chunks: 42.8 vs 44.3 us) and b4 x
  // 32K (32: 132.6 vs 134.2), tied for bf16 at b16 x 32K (8: 495.4 vs 496.0) and lost for fp8 per
  // token-head there (12: 376.0 vs 364.2; a CTA's warps then read one KV head's slice of each token's scale
  // sector instead of four). Below ~16 chunks the pass's few L2 rounds cost less than the fence and count.
  // The TMA pipeline's kernel (fp8's default on sm_90) merges from 8 chunks: b16 x 32K in 12 chunks of 171
  // tiles merged in the kernel took 277.5 us against 282.3 for the planner's 185-tile chunks and the pass
  // (H200, 3879f0b, the ct171 row).
  // bf16 merges from 8 chunks where its chunks are short (<= MERGE_SHORT_TILES): the pass's launch and its ~5.5 us
  // (Nsight Compute, b16 x 32K) are then a large part of the step. The recorded run of 3fd60e7, which merged bf16
  // from 8 chunks at every length, against 44c4b22's (another card; rows whose plan did not change: median +0.6%):
  // b16 x 1K (8 tiles a chunk) -8.2%, x 4K (32) -1.1%, the window and the evicted rows (32 and 16) -3.1% and -5.9%,
  // but x 16K (128) +1.6%, x 32K (256) +1.8%, GQA 16:8 d256 x 32K +6.2%: a CTA's four warps are then four chunks of
  // one KV head, which stream from four places, against four KV heads of one chunk (the same tokens' rows).
  // (A chunk length given by the caller merges wherever the counts can be rounded: >= WARPS chunks.)
  constexpr double MERGE_SLACK = 1.0;
  constexpr int MERGE_MIN_CHUNKS = 16, MERGE_MIN_CHUNKS_SHORT = 8, MERGE_SHORT_TILES = 64;
  // merge_heads: the pass's chunks and CTAs (four KV heads of one chunk), merged by the last CTA of each group
  bool merge = s->combine == 0 && !s->merge_heads && rows_of(s) * s->head_dim <= 8 * 256;
  int min_chunks = chunk_tiles > 0                               ? WARPS
                   : km_attn_tile_pipe(s) == KM_ATTN_PIPE_TMA ? MERGE_MIN_CHUNKS_SHORT
                                                                : MERGE_MIN_CHUNKS;
  // the chunk length without the merge: the caller's, or the planner's plain choice, which the step keeps
  // when the merge's counts fall short of min_chunks below
  int plain_tiles = chunk_tiles;
  if (chunk_tiles <= 0) {
    double plain_cost = 0, quad_cost = 0;
    plain_tiles = pick_chunk_tiles(s, batch, context_lens, sparse_pages, target_warps, false, &plain_cost);
    const int quad_tiles = merge ? pick_chunk_tiles(s, batch, context_lens, sparse_pages, target_warps, true, &quad_cost) : 0;
    merge = quad_tiles > 0 && quad_cost <= plain_cost + MERGE_SLACK;
    chunk_tiles = merge ? quad_tiles : plain_tiles;
    if (merge && s->kv == KM_ATTN_BF16 && quad_tiles <= MERGE_SHORT_TILES) min_chunks = MERGE_MIN_CHUNKS_SHORT;
  }
  p->shape = *s;
  p->batch = batch;
  p->max_blocks_per_seq = max_blocks_per_seq;
  p->sparse_pages = sparse_pages;
  int32_t *first = (int32_t *)malloc((size_t)batch * sizeof(int32_t)), *tiles = (int32_t *)malloc((size_t)batch * sizeof(int32_t));
  if (!first || !tiles) {
    free(first), free(tiles);
    snprintf(err, errlen, "no host memory for the plan");
    return -1;
  }
  for (int b = 0; b < batch; ++b) {
    first[b] = sparse_pages > 0 ? 0 : first_tile_of(s, context_lens[b]);
    tiles[b] = sparse_pages > 0 ? sparse_pages : tiles_of(s, context_lens[b]);
  }
  // the merge's chunk counts (each rounded up to a multiple of WARPS), where every sequence has min_chunks
  // (counted only while the merge is still on)
  int32_t *counts = (int32_t *)malloc((size_t)batch * sizeof(int32_t));
  long long chunks = 0;
  for (int b = 0; counts && merge && b < batch; ++b) {
    counts[b] = chunk_count(tiles[b], chunk_tiles, true);
    merge = counts[b] >= min_chunks;
    chunks += counts[b];
  }
  if (!merge) {
    chunk_tiles = plain_tiles;
    chunks = km_split_chunks_count(batch, tiles, chunk_tiles);
  }
  int rc = 0;
  if (!counts) {
    snprintf(err, errlen, "no host memory for the plan");
    rc = -1;
  } else if (chunks * s->num_kv_heads > (1LL << 31) / 2) {
    snprintf(err, errlen, "too many work items (%lld chunks)", chunks);
    rc = -1;
  } else if ((merge ? km_split_chunks_make_counts(&p->ch, batch, first, tiles, counts)
                    : km_split_chunks_make(&p->ch, batch, first, tiles, chunk_tiles)) != 0) {
    snprintf(err, errlen, "no host memory for the plan");
    rc = -1;
  }
  free(first), free(tiles), free(counts);
  if (rc) return rc;
  // the longest chunk: the length asked for (or the merge's candidate) bounds it, even cuts often stay under it
  p->chunk_tiles = 0;
  for (int c = 0; c < p->ch.num_chunks; ++c) {
    const int len = p->ch.chunk_end[c] - p->ch.chunk_begin[c];
    p->chunk_tiles = len > p->chunk_tiles ? len : p->chunk_tiles;
  }
  p->num_chunks = p->ch.num_chunks;
  p->split = p->ch.split;
  p->cta_merge = merge ? 1 : s->merge_heads && p->split ? 2 : 0;
  // merge_poll: the CTA merge by flags only where every CTA of the grid is resident at once (its merging CTAs wait
  // on the others); elsewhere the count
  p->poll = s->merge_poll && p->cta_merge == 1 && (long long)p->num_chunks * s->num_kv_heads <= target_warps;
  return 0;
}

extern "C" cudaError_t km_attn_plan_upload(km_attn_plan *p, cudaStream_t stream) {
  return km_split_chunks_upload(&p->ch, stream);
}

extern "C" void km_attn_plan_free(km_attn_plan *p) {
  km_split_chunks_free(&p->ch);
  memset(p, 0, sizeof *p);
}

namespace {
size_t partial_slot_bytes(const km_attn_plan *p) {
  const size_t slots = (size_t)p->num_chunks * p->shape.num_kv_heads * rows_of(&p->shape);
  return slots * ((size_t)p->shape.head_dim + 1) * sizeof(float);
}
// the counts, one per (sequence, KV head); with poll the flags, one per CTA
size_t arrive_bytes(const km_attn_plan *p) {
  if (p->poll) return (size_t)p->num_chunks * p->shape.num_kv_heads / WARPS * sizeof(int);
  return p->cta_merge ? (size_t)p->batch * p->shape.num_kv_heads * sizeof(int) : 0;
}
}  // namespace

extern "C" size_t km_attn_workspace_bytes(const km_attn_plan *p) {
  return p->split ? partial_slot_bytes(p) + arrive_bytes(p) : 0;
}

extern "C" cudaError_t km_attn_workspace_init(const km_attn_plan *p, void *workspace, cudaStream_t stream) {
  if (!p->split || !p->cta_merge) return cudaSuccess;
  if (!workspace) return cudaErrorInvalidValue;
  return cudaMemsetAsync((char *)workspace + partial_slot_bytes(p), 0, arrive_bytes(p), stream);
}

extern "C" double km_attn_kv_bytes_read(const km_attn_plan *p) {
  double tiles = 0;
  for (int k = 0; k < p->num_chunks; ++k) tiles += p->ch.chunk_end[k] - p->ch.chunk_begin[k];
  return 2.0 * tiles * KM_ATTN_TILE * (double)row_bytes(&p->shape);
}

extern "C" double km_attn_partial_bytes(const km_attn_plan *p) {
  if (!p->split) return 0;
  double slots = 0;
  for (int b = 0; b < p->batch; ++b)
    if (p->ch.seq_chunks[b] > 1)  // with cta_merge 1 one partial per CTA (of WARPS chunks), else one per chunk
      slots += (double)p->ch.seq_chunks[b] / (p->cta_merge == 1 ? WARPS : 1) * p->shape.num_kv_heads * rows_of(&p->shape);
  return slots * (p->shape.head_dim + 1) * sizeof(float);
}

// The TMA pipeline's tensor maps (TmaMaps): each pool as [cache_blocks x block_size rows][kv_heads][128 bytes] of
// bytes, a box of 16 rows of one head, stored with the 128-byte swizzle, promoted to L2 in 128-byte lines, a row
// each (the shape's tma_promo: 64 or 256 bytes, or none). 256 was the default until 961c824's rows (H200) measured
// 128 faster: fp8 b64 x 32K 1,065.0 against 1,084.7 us, b16 x 32K 281.5 against 283.4 (reports/attn-notes.md). The
// driver's encoder comes through the runtime's entry-point lookup (kernels/tensor_map_encode.h).
static cudaError_t tma_maps(TmaMaps *m, const km_attn_args *a, const km_attn_shape *s) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = km_tensor_map_encoder();
  const long long rows = a->cache_blocks * s->block_size;
  if (!encode) return cudaErrorNotSupported;
  if (a->cache_blocks < 1 || rows > INT32_MAX) return cudaErrorInvalidValue;
  const size_t rb = km_attn_head_bytes(s->kv, s->head_dim);
  const cuuint64_t dims[3] = {rb, (cuuint64_t)s->num_kv_heads, (cuuint64_t)rows};
  const cuuint64_t strides[2] = {rb, rb * (cuuint64_t)s->num_kv_heads};  // bytes, dims 1 and 2
  const cuuint32_t box[3] = {(cuuint32_t)rb, 1, KM_ATTN_TILE}, unit[3] = {1, 1, 1};
  const CUtensorMapL2promotion promo = s->tma_promo == -1    ? CU_TENSOR_MAP_L2_PROMOTION_NONE
                                       : s->tma_promo == 64  ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                       : s->tma_promo == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                                                             : CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  for (int i = 0; i < 2; ++i) {
    CUtensorMap *map = i ? &m->v : &m->k;
    void *base = const_cast<void *>(i ? a->v_cache : a->k_cache);
    if (encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, base, dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_128B, promo,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
      return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

extern "C" cudaError_t km_attn_decode(const km_attn_plan *pl, const km_attn_args *a, cudaStream_t stream) {
  const km_attn_shape *s = &pl->shape;
  const Kern k = decode_for(s, a->stamps != nullptr, pl->poll != 0);
  if (a->stamps && !k.fn) return cudaErrorNotSupported;
  if (!k.fn || !pl->ch.d_arrays) return cudaErrorInvalidValue;
  const bool fp8 = s->kv == KM_ATTN_FP8_E4M3 || s->kv == KM_ATTN_FP8_E5M2;
  if (fp8 && (!a->k_scale || !a->v_scale)) return cudaErrorInvalidValue;
  if (s->kv == KM_ATTN_TQ3 && (!a->k_side || !a->v_side)) return cudaErrorInvalidValue;
  if (pl->sparse_pages > 0 && !a->selected) return cudaErrorInvalidValue;
  if (pl->split && !a->workspace) return cudaErrorInvalidValue;
  Params p;
  memset(&p, 0, sizeof p);
  p.q = a->q;
  p.k = (const char *)a->k_cache;
  p.v = (const char *)a->v_cache;
  p.k_scale = fp8 ? a->k_scale : nullptr;
  p.v_scale = fp8 ? a->v_scale : nullptr;
  if (s->kv == KM_ATTN_TQ3) {
    p.k_side = a->k_side;
    p.v_side = a->v_side;
    for (uint32_t i = 0; i < 128; ++i) p.sign[i / 32] |= km_tq3_negative(i) << (i % 32);
  }
  p.table = a->block_table;
  p.ctx_lens = a->context_lens;
  p.sel = pl->sparse_pages > 0 ? a->selected : nullptr;
  km_split_chunks_bind(p, &pl->ch);
  p.out = a->out;
  p.heads = s->num_heads;
  p.kv_heads = s->num_kv_heads;
  p.group = s->num_heads / s->num_kv_heads;
  p.rows = rows_of(s);
  p.q_len = s->q_len;
  p.block_size = s->block_size;
  p.window = s->window;
  p.mbps = pl->max_blocks_per_seq;
  p.sparse_pages = pl->sparse_pages;
  p.per_token = (s->kv == KM_ATTN_FP8_E4M3 || s->kv == KM_ATTN_FP8_E5M2) && s->scale == KM_ATTN_SCALE_TOKEN_HEAD;
  p.items = pl->num_chunks * s->num_kv_heads;
  p.scale_log2 = a->sm_scale * LOG2E;
  p.stamps = a->stamps;
  size_t smem = (size_t)k.smem;
  if (pl->split) {
    p.part_o = (float *)a->workspace;
    p.part_lse = p.part_o + (size_t)p.items * p.rows * s->head_dim;
    if (pl->cta_merge) {
      p.cta_merge = pl->cta_merge;
      p.arrive = (int *)((char *)a->workspace + partial_slot_bytes(pl));
      const size_t ms = pl->cta_merge == 1 ? cta_merge_smem(p.rows, s->head_dim) : 0;  // 2: partials in the workspace
      smem = smem > ms ? smem : ms;
    }
  }
  TmaMaps maps;
  memset(&maps, 0, sizeof maps);
  if (k.pipe == KM_ATTN_PIPE_TMA) {
    const cudaError_t me = tma_maps(&maps, a, s);
    if (me != cudaSuccess) return me;
  }
  void *args[] = {&p, &maps};
  const unsigned grid = (unsigned)((p.items + WARPS - 1) / WARPS);
  cudaError_t e = launch(k.fn, grid, WARPS * 32, args, smem, stream, s->pdl != 0);
  if (e != cudaSuccess || !pl->split || pl->cta_merge) return e;
  int batch = pl->batch;
  void *cargs[] = {&p, &batch};
  const long long blocks = (long long)pl->batch * s->num_kv_heads * p.rows;
  return launch(combine_for(s->head_dim, s->pdl != 0), (unsigned)blocks, COMBINE_WARPS * 32, cargs, 0, stream,
                s->pdl != 0);
}
