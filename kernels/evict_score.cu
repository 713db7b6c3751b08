// SnapKV scoring (see evict.h for what is computed). The logits are the window's G x W query rows against
// every key of a (sequence, KV head): a matrix product on the tensor cores (mma.sync m16n8k16 bf16 -> fp32,
// sm_80 and sm_90), compute-bound at 2 x M x context x head_dim FLOPs per row and pass. Two passes over K:
//  1. per query row, the softmax max and sum of exponentials over each key chunk (online, per thread over
//     its own columns, combined across the quad at the end);
//  2. the chunks' statistics combined, then every probability recomputed and summed over the rows into
//     one unpooled sum per key (a reduce-scatter across the warp, then the warps in a fixed order: no atomics,
//     so the sums are reproducible);
// then a small kernel averages over the window, sums the row blocks and pools. A CTA owns one (sequence,
// KV head, row block, key chunk): its warps hold 32 query rows each (16 at head_dim 256) as A fragments in
// registers for the whole chunk, and stream 32-key tiles of K through a cp.async ring in shared memory,
// rows padded by 16 bytes so the ldmatrix reads of 8 keys fall on distinct banks.
#include "evict.h"

#include <math.h>

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kNT = 32;       // keys per tile: 4 n8 tiles
// Warps per CTA at most, and CTAs per SM the registers are budgeted for: the 64 registers of Q fragments,
// 32 of accumulators and the softmax state take ~160, so 4 warps x 3 CTAs (<= 170 registers, no spills;
// 8 warps x 2 CTAs spilled 16-150 bytes) keep 12 warps per SM.
constexpr int kMaxWarps = 4;
constexpr int kMinBlocks = 3;

template <int D>
struct Cfg {
  static constexpr int MT = D == 256 ? 1 : 2;  // m16 tiles per warp: the Q fragments are D / 2 (D) registers
  static constexpr int KS = D / 16;            // k16 steps over head_dim
  static constexpr int RowBytes = D * 2 + 16;  // padded: 8 consecutive rows start 4 banks apart
  static constexpr int Stages = D == 256 ? 2 : 3;
  static constexpr int ChunksPerRow = D / 8;   // 16-byte pieces per key row
  static constexpr int SmemBytes = Stages * kNT * RowBytes;
};

struct ScoreArgs {
  const uint16_t *q, *k;
  const int32_t *table;
  float2 *stats;  // [rows][nchunks][M]: (max of the logits x log2(e)/sqrt(d), sum of 2^(l - max)) per chunk
  float *raw;     // [rows][row_blocks][P]: unpooled sums of probabilities per key
  int context, P, window, group, q_heads, kv_heads, block_size, bps;
  int M, R, row_blocks, chunk_keys, nchunks;
  float scale2;  // log2(e) / sqrt(head_dim): logits in base 2
};

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// 16 bytes global -> shared, bypassing L1; src_bytes 0 fills zeros (the source is then not read).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 b16 matrices; lane l gives the row address of matrix l / 8, row l % 8, and gets element pair
// (row l / 4, columns 2 (l % 4), +1) of each: for K rows as matrix rows that is an mma B fragment.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D (16x8 fp32) += A (16x16 bf16, row) x B (16x8 bf16, col).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// (m, l) of two partial softmax sums merged; m = -inf marks an empty one.
__device__ __forceinline__ void merge_stats(float &m, float &l, float mo, float lo) {
  const float mn = fmaxf(m, mo);
  if (mn == -INFINITY) return;  // both empty
  l = (m == -INFINITY ? 0.0f : l * ex2(m - mn)) + (mo == -INFINITY ? 0.0f : lo * ex2(mo - mn));
  m = mn;
}

// Query row r of (b, h): window query i = r / group of query head h * group + r % group.
__device__ __forceinline__ const uint16_t *query_row(const ScoreArgs &a, int b, int h, int r, int d) {
  return a.q + (((size_t)b * a.window + r / a.group) * a.q_heads + (size_t)h * a.group + r % a.group) * d;
}

__device__ __forceinline__ uint32_t ld32(const uint16_t *p) { return __ldg(reinterpret_cast<const unsigned int *>(p)); }

// Pass 1 (SUMS false) or 2 (SUMS true). Grid (row_blocks, nchunks, rows): the row blocks of a chunk run
// side by side, so the second reads the chunk's keys from L2. blockDim: R / (16 MT) warps.
template <int D, bool SUMS>
__global__ __launch_bounds__(kMaxWarps * 32, kMinBlocks) void score_pass(ScoreArgs a) {
  using C = Cfg<D>;
  constexpr int MT = C::MT;
  __shared__ __align__(128) unsigned char ring[C::SmemBytes];
  __shared__ float red[SUMS ? 2 : 1][kMaxWarps][kNT];
  __shared__ float row_neg[SUMS ? kMaxWarps * 16 * MT : 1];  // -(max + log2 sum) per row of the CTA
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  const int warps = blockDim.x >> 5;
  const int rb = blockIdx.x, chunk = blockIdx.y, bh = blockIdx.z;
  const int b = bh / a.kv_heads, h = bh - b * a.kv_heads;
  const int key_lo = chunk * a.chunk_keys;
  const int key_hi = min(key_lo + a.chunk_keys, SUMS ? a.P : a.context);
  if (key_lo >= key_hi) return;  // pass 2: a chunk of window tokens only (CTA-uniform)
  const int ntiles = (key_hi - key_lo + kNT - 1) / kNT;
  // Keys below clean_end need no mask: every row sees them (pass 1: the whole prefix and the first window key).
  const int clean_end = SUMS ? key_hi : min(key_hi, a.P + 1);
  const uint32_t ring0 = smem_u32(ring);

  auto issue = [&](int t) {  // tile t into stage t % Stages; one commit group per call, empty or not
    if (t < ntiles) {
      const int base = key_lo + t * kNT;
      const uint32_t stage = ring0 + (t % C::Stages) * kNT * C::RowBytes;
      for (int c = threadIdx.x; c < kNT * C::ChunksPerRow; c += blockDim.x) {
        const int kk = c / C::ChunksPerRow, part = c - kk * C::ChunksPerRow, j = base + kk;
        const void *src = a.k;
        if (j < key_hi) {
          const int blk = __ldg(a.table + (size_t)b * a.bps + j / a.block_size);
          src = a.k + (((size_t)blk * a.block_size + j % a.block_size) * a.kv_heads + h) * D + part * 8;
        }
        cp_async16(stage + kk * C::RowBytes + part * 16, src, j < key_hi ? 16 : 0);
      }
    }
    cp_async_commit();
  };
#pragma unroll
  for (int t = 0; t < C::Stages - 1; ++t) issue(t);

  // This warp's rows (within the (b, h) block of M): rows[mt][half] = first + mt * 16 + half * 8 + gid.
  const int local0 = warp * 16 * MT, row0 = rb * a.R + local0;
  uint32_t qa[MT][C::KS][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const uint16_t *q0 = query_row(a, b, h, row0 + mt * 16 + gid, D), *q1 = query_row(a, b, h, row0 + mt * 16 + 8 + gid, D);
#pragma unroll
    for (int ks = 0; ks < C::KS; ++ks) {
      qa[mt][ks][0] = ld32(q0 + ks * 16 + 2 * tig);
      qa[mt][ks][1] = ld32(q1 + ks * 16 + 2 * tig);
      qa[mt][ks][2] = ld32(q0 + ks * 16 + 8 + 2 * tig);
      qa[mt][ks][3] = ld32(q1 + ks * 16 + 8 + 2 * tig);
    }
  }

  // Pass 1 state: running max (raw logit units) and sum per row over this thread's columns. Pass 2:
  // -(max + log2 sum) per row.
  float mraw[MT][2], lsum[MT][2], neg[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      mraw[mt][hf] = -INFINITY;
      lsum[mt][hf] = 0.0f;
      neg[mt][hf] = 0.0f;
    }
  if (SUMS) {
    for (int r = threadIdx.x; r < warps * 16 * MT; r += blockDim.x) {
      const float2 *st = a.stats + (size_t)bh * a.nchunks * a.M + rb * a.R + r;
      float m = -INFINITY, l = 0.0f;
      for (int c = 0; c < a.nchunks; ++c) {
        const float2 x = st[(size_t)c * a.M];
        merge_stats(m, l, x.x, x.y);
      }
      row_neg[r] = -(m + __log2f(l));
    }
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) neg[mt][hf] = row_neg[local0 + mt * 16 + hf * 8 + gid];
  }

  // Warp 0 sums tile t's per-warp column sums in warp order and stores them (coalesced, 32 keys).
  auto flush = [&](int t) {
    float s = 0.0f;
    for (int w = 0; w < warps; ++w) s += red[SUMS ? (t & 1) : 0][w][lane];
    const int j = key_lo + t * kNT + lane;
    if (j < key_hi) a.raw[((size_t)bh * a.row_blocks + rb) * a.P + j] = s;
  };

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait<C::Stages - 2>();
    __syncthreads();  // tile t in shared memory for all; everyone done with tile t - 1 (its stage is free)
    issue(t + C::Stages - 1);
    if (SUMS && t > 0 && warp == 0) flush(t - 1);

    const uint32_t stage = ring0 + (t % C::Stages) * kNT * C::RowBytes;
    float acc[MT][4][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < C::KS; ks += 2) {
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        uint32_t bf[4];  // b0, b1 of k-step ks, then of ks + 1, for keys nt * 8 .. + 7
        ldsm_x4(bf, stage + (nt * 8 + (lane & 7)) * C::RowBytes + (ks * 2 + (lane >> 3)) * 16);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_bf16(acc[mt][nt], qa[mt][ks], bf[0], bf[1]);
          mma_bf16(acc[mt][nt], qa[mt][ks + 1], bf[2], bf[3]);
        }
      }
    }

    // acc[mt][nt][hf * 2 + e]: row (mt, hf, gid), key base + nt * 8 + 2 tig + e.
    const int base = key_lo + t * kNT;
    const bool masked = base + kNT > clean_end;
    if (!SUMS) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          float v[8];
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) v[nt * 2 + e] = acc[mt][nt][hf * 2 + e];
          if (masked) {  // window query i sees tokens < P + 1 + i; the chunk's zero-filled tail nobody
            const int lim = min(key_hi, a.P + 1 + (row0 + mt * 16 + hf * 8 + gid) / a.group);
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
              for (int e = 0; e < 2; ++e)
                if (base + nt * 8 + 2 * tig + e >= lim) v[nt * 2 + e] = -INFINITY;
          }
          float tmax = v[0];
#pragma unroll
          for (int i = 1; i < 8; ++i) tmax = fmaxf(tmax, v[i]);
          if (tmax > mraw[mt][hf]) {
            lsum[mt][hf] *= ex2((mraw[mt][hf] - tmax) * a.scale2);
            mraw[mt][hf] = tmax;
          }
          if (mraw[mt][hf] != -INFINITY) {
            const float n2 = -mraw[mt][hf] * a.scale2;
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < 8; ++i) s += ex2(fmaf(v[i], a.scale2, n2));
            lsum[mt][hf] += s;
          }
        }
    } else {
      float col[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) col[i] = 0.0f;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) col[nt * 2 + e] += ex2(fmaf(acc[mt][nt][hf * 2 + e], a.scale2, neg[mt][hf]));
      if (masked) {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (base + nt * 8 + 2 * tig + e >= key_hi) col[nt * 2 + e] = 0.0f;
      }
      // Reduce-scatter over the 8 lanes of a column (lane bits 4, 3, 2 = gid): each step a lane keeps the
      // half its bit selects and adds its partner's copy of it; 7 shuffles leave lane (gid, tig) holding
      // column gid of its quad: key (gid >> 1) * 8 + 2 tig + (gid & 1).
      const bool b4 = lane & 16, b3 = lane & 8, b2 = lane & 4;
      float w4[4], w2[2];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float send = b4 ? col[j] : col[j + 4], keep = b4 ? col[j + 4] : col[j];
        w4[j] = keep + __shfl_xor_sync(kFull, send, 16);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const float send = b3 ? w4[j] : w4[j + 2], keep = b3 ? w4[j + 2] : w4[j];
        w2[j] = keep + __shfl_xor_sync(kFull, send, 8);
      }
      const float send = b2 ? w2[0] : w2[1], keep = b2 ? w2[1] : w2[0];
      const float mine = keep + __shfl_xor_sync(kFull, send, 4);
      red[t & 1][warp][(gid >> 1) * 8 + 2 * tig + (gid & 1)] = mine;
    }
  }

  if (SUMS) {
    __syncthreads();
    if (warp == 0) flush(ntiles - 1);
  } else {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        float m = mraw[mt][hf] == -INFINITY ? -INFINITY : mraw[mt][hf] * a.scale2, l = lsum[mt][hf];
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
          const float mo = __shfl_xor_sync(kFull, m, off), lo = __shfl_xor_sync(kFull, l, off);
          merge_stats(m, l, mo, lo);
        }
        if (tig == 0)
          a.stats[((size_t)bh * a.nchunks + chunk) * a.M + row0 + mt * 16 + hf * 8 + gid] = make_float2(m, l);
      }
  }
}

// scores[row][t] for t < P: the pooled window average of the unpooled sums (row blocks added in order);
// scores[row][P] = 0, the entry the top-k forces.
__global__ void pool_kernel(const float *raw, float *scores, int rows, int P, int row_blocks, int kernel, int use_max,
                            float inv_window) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * (P + 1)) return;
  const int row = (int)(i / (P + 1)), t = (int)(i - (long long)row * (P + 1));
  float out = 0.0f;
  if (t < P) {
    const float *r = raw + (size_t)row * row_blocks * P;
    float acc = use_max ? -INFINITY : 0.0f;
    for (int o = -(kernel / 2); o <= kernel / 2; ++o) {
      const int j = t + o;
      if (j < 0 || j >= P) continue;
      float s = 0.0f;
      for (int q = 0; q < row_blocks; ++q) s += r[(size_t)q * P + j];
      s *= inv_window;
      acc = use_max ? fmaxf(acc, s) : acc + s;
    }
    out = use_max ? acc : acc / (float)kernel;
  }
  scores[i] = out;
}

// How a shape is cut into CTAs: rows per CTA (R, whole warps of 16 MT rows, at most 4 warps, dividing M)
// and keys per chunk (1,024, halved down to 128 while there would be fewer than ~8 x 132 CTAs). Depends on
// the shape alone, so km_evict_scratch_bytes and the launch agree.
struct Plan {
  int M, R, warps, row_blocks, chunk_keys, nchunks;
};

Plan make_plan(const km_evict_shape *s) {
  Plan p;
  const int unit = s->head_dim == 256 ? 16 : 32, group = s->q_heads / s->kv_heads;
  p.M = s->window * group;
  const int units = p.M / unit;
  p.warps = 1;
  for (int w = kMaxWarps; w >= 1; --w)
    if (units % w == 0) {
      p.warps = w;
      break;
    }
  p.R = p.warps * unit;
  p.row_blocks = p.M / p.R;
  const long long ctas_per_chunk = (long long)s->batch * s->kv_heads * p.row_blocks;
  p.chunk_keys = 1024;
  while (p.chunk_keys > 128 && ctas_per_chunk * ((s->context + p.chunk_keys - 1) / p.chunk_keys) < 8 * 132)
    p.chunk_keys /= 2;
  p.nchunks = (s->context + p.chunk_keys - 1) / p.chunk_keys;
  return p;
}

size_t stats_bytes(const km_evict_shape *s, const Plan &p) {
  return (size_t)km_evict_rows(s) * p.nchunks * p.M * sizeof(float2);
}

template <int D>
cudaError_t launch_passes(const ScoreArgs &a, const Plan &p, int rows, cudaStream_t stream) {
  const dim3 grid(p.row_blocks, p.nchunks, rows);
  score_pass<D, false><<<grid, p.warps * 32, 0, stream>>>(a);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  score_pass<D, true><<<grid, p.warps * 32, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace

extern "C" size_t km_evict_scratch_bytes(const km_evict_shape *s) {
  if (!s || km_evict_shape_error(s)) return 0;
  const Plan p = make_plan(s);
  return stats_bytes(s, p) + (size_t)km_evict_rows(s) * p.row_blocks * (s->context - s->window) * sizeof(float);
}

extern "C" cudaError_t km_evict_score(const km_evict_shape *s, const uint16_t *q_window, const uint16_t *k_pool,
                                      const int32_t *table, void *scratch, float *scores, cudaStream_t stream) {
  if (!s || km_evict_shape_error(s) || !q_window || !k_pool || !table || !scratch || !scores) return cudaErrorInvalidValue;
  if (((uintptr_t)k_pool & 15u) || ((uintptr_t)q_window & 3u) || ((uintptr_t)scratch & 7u)) return cudaErrorInvalidValue;
  const Plan p = make_plan(s);
  ScoreArgs a;
  a.q = q_window;
  a.k = k_pool;
  a.table = table;
  a.stats = static_cast<float2 *>(scratch);
  a.raw = reinterpret_cast<float *>(static_cast<unsigned char *>(scratch) + stats_bytes(s, p));
  a.context = s->context;
  a.P = s->context - s->window;
  a.window = s->window;
  a.group = s->q_heads / s->kv_heads;
  a.q_heads = s->q_heads;
  a.kv_heads = s->kv_heads;
  a.block_size = s->block_size;
  a.bps = s->blocks_per_seq;
  a.M = p.M;
  a.R = p.R;
  a.row_blocks = p.row_blocks;
  a.chunk_keys = p.chunk_keys;
  a.nchunks = p.nchunks;
  a.scale2 = (float)(1.4426950408889634 / sqrt((double)s->head_dim));
  const int rows = km_evict_rows(s);
  cudaError_t e;
  switch (s->head_dim) {
    case 64: e = launch_passes<64>(a, p, rows, stream); break;
    case 128: e = launch_passes<128>(a, p, rows, stream); break;
    default: e = launch_passes<256>(a, p, rows, stream); break;
  }
  if (e != cudaSuccess) return e;
  const long long n = (long long)rows * (a.P + 1);
  const int threads = 256;
  pool_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0, stream>>>(
      a.raw, scores, rows, a.P, p.row_blocks, s->kernel, s->pool == KM_EVICT_POOL_MAX, 1.0f / (float)s->window);
  return cudaGetLastError();
}
