// Mamba-2 selective state update (see mamba_state.h for the arithmetic). A streaming kernel: each state
// row (dstate values of one (sequence, head, p)) is whole 16-byte vectors spread over LPR lanes, so one
// warp instruction covers RPI = 32 / LPR rows; a warp task is U such instructions (8 vectors per lane in
// flight, all loaded before any is used), and B * dt and C for the lane's columns are loaded once per task.
// The row sum y is a butterfly over the LPR lanes of the row.
// Measured on the H200 (revision dcb523a) and removed: a persistent variant (resident CTAs only, each warp
// loading its next task's state before updating the current one, 16 warps per SM at 128 registers) ran
// slower than this kernel's 24 warps of one task each: mamba2-2.7b fp32 b64 93.2 vs 89.1 us, b256 352.8 vs
// 341.2, Nemotron-H-8B b64 143.9 vs 140.8.
#include "mamba_state.h"

#include <cuda_bf16.h>

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kVecsInFlight = 8;  // 16-byte state vectors per lane per task: 128 B, ~4 tasks/SM cover HBM latency

__device__ __forceinline__ float bf16_bits_to_float(uint32_t bits16) { return __uint_as_float(bits16 << 16); }

__device__ __forceinline__ uint16_t float_to_bf16_bits(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

// Storage of the state: fp32 (4 per vector) or bf16 (8 per vector), unpacked to fp32 and packed back.
template <typename S>
struct StateIO;

template <>
struct StateIO<float> {
  static constexpr int kPerVec = 4;
  __device__ static void unpack(const uint4 &v, float (&f)[4]) {
    f[0] = __uint_as_float(v.x), f[1] = __uint_as_float(v.y), f[2] = __uint_as_float(v.z), f[3] = __uint_as_float(v.w);
  }
  __device__ static uint4 pack(const float (&f)[4]) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
  }
};

template <>
struct StateIO<__nv_bfloat16> {
  static constexpr int kPerVec = 8;
  __device__ static void unpack(const uint4 &v, float (&f)[8]) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = bf16_bits_to_float(w[i] & 0xffffu);
      f[2 * i + 1] = bf16_bits_to_float(w[i] >> 16);
    }
  }
  __device__ static uint4 pack(const float (&f)[8]) {
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = (uint32_t)float_to_bf16_bits(f[2 * i]) | ((uint32_t)float_to_bf16_bits(f[2 * i + 1]) << 16);
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
};

// kPerVec consecutive bf16 of B or C (8 or 16 bytes) as fp32.
template <int N>
__device__ __forceinline__ void load_bf16(const uint16_t *p, float (&f)[N]) {
  static_assert(N == 4 || N == 8, "4 or 8 values");
  uint32_t w[N / 2];
  if constexpr (N == 4) {
    const uint2 v = __ldg(reinterpret_cast<const uint2 *>(p));
    w[0] = v.x, w[1] = v.y;
  } else {
    const uint4 v = __ldg(reinterpret_cast<const uint4 *>(p));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  }
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    f[2 * i] = bf16_bits_to_float(w[i] & 0xffffu);
    f[2 * i + 1] = bf16_bits_to_float(w[i] >> 16);
  }
}

__device__ __forceinline__ float load_bf16_scalar(const uint16_t *p) { return bf16_bits_to_float(__ldg(p)); }

template <typename S, int DSTATE>
struct Layout {
  // CTAs per SM the register budget is set for: fp32 fits 3 (<= 85 registers, 24 warps, 96 KiB of state
  // loads in flight per SM) without spilling; bf16 holds twice the B and C values per lane and takes 2.
  static constexpr int kMinBlocks = sizeof(S) == 4 ? 3 : 2;
  static constexpr int kPerVec = StateIO<S>::kPerVec;
  static constexpr int kRowVecs = DSTATE / kPerVec;                 // 16-byte vectors per state row
  static constexpr int kLanesPerRow = kRowVecs < 32 ? kRowVecs : 32;
  static constexpr int kVecsPerLane = kRowVecs / kLanesPerRow;      // 1 or 2
  static constexpr int kRowsPerInstr = 32 / kLanesPerRow;           // 1, 2 or 4
  static constexpr int kInstrs = kVecsInFlight / kVecsPerLane;      // row instructions per task
  static constexpr int kRowsPerTask = kInstrs * kRowsPerInstr;
  static_assert(kRowVecs % kLanesPerRow == 0 && kVecsPerLane <= 2, "dstate 64/128/256");
};

// One warp task: rows row0 .. row0 + kRowsPerTask - 1 of head (b, h). FULL tasks (all but a head's last
// when headdim is not a multiple of kRowsPerTask) carry no row checks, so the state loads issue unpredicated.
template <typename S, int DSTATE, bool FULL>
__device__ __forceinline__ void ssm_task(const km_mamba_ssm_shape &s, const km_mamba_ssm_args &a, long long bh, int row0) {
  using L = Layout<S, DSTATE>;
  using IO = StateIO<S>;
  constexpr int PV = L::kPerVec, LPR = L::kLanesPerRow, VPL = L::kVecsPerLane, RPI = L::kRowsPerInstr;
  const int lane = threadIdx.x & 31;
  const int b = (int)(bh / s.nheads), h = (int)(bh - (long long)b * s.nheads);
  const int g = h / (s.nheads / s.ngroups);
  const int cv = lane % LPR, ro = lane / LPR;  // this lane's first column vector and row within an instruction

  // Rows first: their loads are the ones that have to be in flight.
  S *state = reinterpret_cast<S *>(a.state) + (size_t)bh * s.headdim * DSTATE;
  uint4 v[L::kInstrs][VPL];
#pragma unroll
  for (int k = 0; k < L::kInstrs; ++k) {
    const int p = row0 + k * RPI + ro;
    if (FULL || row0 + k * RPI < s.headdim) {  // headdim % RPI == 0: a whole instruction is in or out
#pragma unroll
      for (int j = 0; j < VPL; ++j)
        v[k][j] = *reinterpret_cast<const uint4 *>(state + (size_t)p * DSTATE + (cv + j * LPR) * PV);
    }
  }

  float dt = load_bf16_scalar(a.dt + (size_t)b * s.dt_stride + h) + __ldg(a.dt_bias + h);
  if (s.dt_softplus && dt <= 20.0f) dt = log1pf(expf(dt));
  const float dA = expf(__ldg(a.A + h) * dt);
  const float Dh = s.has_d ? __ldg(a.D + h) : 0.0f;
  float dB[VPL][PV], Cv[VPL][PV];
  const size_t bc = (size_t)b * s.bc_stride + (size_t)g * DSTATE;
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    load_bf16<PV>(a.B + bc + (cv + j * LPR) * PV, dB[j]);
    load_bf16<PV>(a.C + bc + (cv + j * LPR) * PV, Cv[j]);
#pragma unroll
    for (int e = 0; e < PV; ++e) dB[j][e] *= dt;
  }

  // x of every row before the first store: the stores may alias it as far as the compiler knows, so loads
  // left inside the row loop would each wait for the previous row's stores, one latency per row (z, gated
  // rows only, stays in the loop: preloading it too spills at the fp32 register cap)
  const size_t xrow = (size_t)b * s.x_stride + (size_t)h * s.headdim;
  const size_t zrow = (size_t)b * s.z_stride + (size_t)h * s.headdim;
  float xs[L::kInstrs];
#pragma unroll
  for (int k = 0; k < L::kInstrs; ++k) {
    const int p = row0 + k * RPI + ro;
    const bool in = FULL || row0 + k * RPI < s.headdim;
    xs[k] = in ? load_bf16_scalar(a.x + xrow + p) : 0.0f;
  }
  uint16_t *out = a.out + (size_t)bh * s.headdim;
#pragma unroll
  for (int k = 0; k < L::kInstrs; ++k) {
    if (!FULL && row0 + k * RPI >= s.headdim) break;  // warp-uniform
    const int p = row0 + k * RPI + ro;
    const float x = xs[k];
    float y = 0.0f;
#pragma unroll
    for (int j = 0; j < VPL; ++j) {
      float f[PV];
      IO::unpack(v[k][j], f);
#pragma unroll
      for (int e = 0; e < PV; ++e) {
        f[e] = fmaf(dB[j][e], x, f[e] * dA);
        y = fmaf(f[e], Cv[j][e], y);
      }
      const uint4 packed = IO::pack(f);
      __stcg(reinterpret_cast<uint4 *>(state + (size_t)p * DSTATE + (cv + j * LPR) * PV), packed);
    }
#pragma unroll
    for (int off = LPR / 2; off > 0; off >>= 1) y += __shfl_xor_sync(kFull, y, off);
    if (cv == 0) {
      y = fmaf(Dh, x, y);
      if (s.has_z) {
        const float z = load_bf16_scalar(a.z + zrow + p);
        y *= z / (1.0f + expf(-z));
      }
      out[p] = float_to_bf16_bits(y);
    }
  }
}

// Grid: one warp per task; tasks run (sequence, head, row block) in that order, so a CTA's warps share a head.
template <typename S, int DSTATE>
__global__ __launch_bounds__(kThreads, (Layout<S, DSTATE>::kMinBlocks)) void ssm_update_kernel(
    km_mamba_ssm_shape s, km_mamba_ssm_args a, int tasks_per_head, long long tasks) {
  using L = Layout<S, DSTATE>;
  const long long task = (long long)blockIdx.x * kWarps + (threadIdx.x >> 5);
  if (task >= tasks) return;  // warp-uniform
  const long long bh = task / tasks_per_head;
  const int row0 = (int)(task - bh * tasks_per_head) * L::kRowsPerTask;
  if (row0 + L::kRowsPerTask <= s.headdim)  // warp-uniform
    ssm_task<S, DSTATE, true>(s, a, bh, row0);
  else
    ssm_task<S, DSTATE, false>(s, a, bh, row0);
}

template <typename S, int DSTATE>
cudaError_t launch_ssm(const km_mamba_ssm_shape *s, const km_mamba_ssm_args *a, cudaStream_t stream) {
  using L = Layout<S, DSTATE>;
  const int tasks_per_head = (s->headdim + L::kRowsPerTask - 1) / L::kRowsPerTask;
  const long long tasks = (long long)s->batch * s->nheads * tasks_per_head;
  const long long blocks = (tasks + kWarps - 1) / kWarps;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidValue;
  ssm_update_kernel<S, DSTATE><<<(unsigned)blocks, kThreads, 0, stream>>>(*s, *a, tasks_per_head, tasks);
  return cudaGetLastError();
}

template <typename S>
cudaError_t dispatch_dstate(const km_mamba_ssm_shape *s, const km_mamba_ssm_args *a, cudaStream_t stream) {
  switch (s->dstate) {
    case 64: return launch_ssm<S, 64>(s, a, stream);
    case 128: return launch_ssm<S, 128>(s, a, stream);
    case 256: return launch_ssm<S, 256>(s, a, stream);
    default: return cudaErrorInvalidValue;
  }
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

}  // namespace

extern "C" cudaError_t km_mamba_ssm_update(const km_mamba_ssm_shape *s, const km_mamba_ssm_args *a,
                                           cudaStream_t stream) {
  if (!s || !a || km_mamba_ssm_shape_error(s)) return cudaErrorInvalidValue;
  if (!a->state || !a->x || !a->dt || !a->dt_bias || !a->A || !a->B || !a->C || !a->out ||
      (s->has_d && !a->D) || (s->has_z && !a->z))
    return cudaErrorInvalidValue;
  if (!aligned16(a->state) || !aligned16(a->B) || !aligned16(a->C)) return cudaErrorInvalidValue;
  return s->state_dtype == KM_MAMBA_STATE_F32 ? dispatch_dstate<float>(s, a, stream)
                                              : dispatch_dstate<__nv_bfloat16>(s, a, stream);
}
