// Mamba-2 selective state update (see mamba_state.h for the arithmetic). A streaming kernel: each state
// row (dstate values of one (sequence, head, p)) is whole 16-byte vectors spread over LPR lanes, so one
// warp instruction covers RPI = 32 / LPR rows; a warp task is U such instructions (8 vectors per lane in
// flight, all loaded before any is used), and B * dt and C for the lane's columns are loaded once per task.
// The row sum y is a butterfly over the LPR lanes of the row.
//
// Two grids share that split of a row over lanes and its arithmetic (the same functions, so the same fp32
// rounding per element, whatever the rows per task): the default, one task per warp, and a persistent one
// (shape.persistent_ctas > 0): as many CTAs as fit on the device at once, each warp walking tasks with a
// stride and loading its next task's state vectors and inputs into a second register set before computing
// and storing the current one, so two tasks per warp are in flight and no CTA start-up or exit sits between.
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

// kPerVec consecutive bf16 of B or C (8 or 16 bytes) as loaded: the persistent kernel holds its next
// task's values this way (half the registers of fp32) until it computes that task.
template <int N>
struct Bf16Vec {
  static_assert(N == 4 || N == 8, "4 or 8 values");
  uint32_t w[N / 2];
};

template <int N>
__device__ __forceinline__ Bf16Vec<N> load_bf16_vec(const uint16_t *p) {
  Bf16Vec<N> r;
  if constexpr (N == 4) {
    const uint2 v = __ldg(reinterpret_cast<const uint2 *>(p));
    r.w[0] = v.x, r.w[1] = v.y;
  } else {
    const uint4 v = __ldg(reinterpret_cast<const uint4 *>(p));
    r.w[0] = v.x, r.w[1] = v.y, r.w[2] = v.z, r.w[3] = v.w;
  }
  return r;
}

template <int N>
__device__ __forceinline__ void unpack_bf16(const Bf16Vec<N> &r, float (&f)[N]) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    f[2 * i] = bf16_bits_to_float(r.w[i] & 0xffffu);
    f[2 * i + 1] = bf16_bits_to_float(r.w[i] >> 16);
  }
}

template <int N>
__device__ __forceinline__ void load_bf16(const uint16_t *p, float (&f)[N]) {
  unpack_bf16<N>(load_bf16_vec<N>(p), f);
}

__device__ __forceinline__ float load_bf16_scalar(const uint16_t *p) { return bf16_bits_to_float(__ldg(p)); }

// CTAs per SM the default kernel's register budget is set for: fp32 fits 3 (<= 85 registers, 24 warps,
// 96 KiB of state loads in flight per SM) without spilling; bf16 holds twice the B and C values per lane
// and takes 2.
template <typename S>
constexpr int kDefaultMinBlocks = sizeof(S) == 4 ? 3 : 2;

// How a task of VECS 16-byte vectors per lane covers the rows of one head.
template <typename S, int DSTATE, int VECS = kVecsInFlight>
struct Layout {
  static constexpr int kPerVec = StateIO<S>::kPerVec;
  static constexpr int kRowVecs = DSTATE / kPerVec;                 // 16-byte vectors per state row
  static constexpr int kLanesPerRow = kRowVecs < 32 ? kRowVecs : 32;
  static constexpr int kVecsPerLane = kRowVecs / kLanesPerRow;      // 1 or 2
  static constexpr int kRowsPerInstr = 32 / kLanesPerRow;           // 1, 2 or 4
  static constexpr int kInstrs = VECS / kVecsPerLane;               // row instructions per task
  static constexpr int kRowsPerTask = kInstrs * kRowsPerInstr;
  static_assert(kRowVecs % kLanesPerRow == 0 && kVecsPerLane <= 2, "dstate 64/128/256");
};

// ---- the arithmetic, one definition for both grids (the variants agree bit for bit because of it)

// dt' from dt + dt_bias.
__device__ __forceinline__ float step_dt(const km_mamba_ssm_shape &s, float dt) {
  if (s.dt_softplus && dt <= 20.0f) dt = log1pf(expf(dt));
  return dt;
}

// One 16-byte state vector of a row: s' = s dA + (B dt') x stored back (L2 only: it is not read again this
// step), and y plus s' . C over its columns in column order, the order that fixes y's rounding.
template <typename S, int PV>
__device__ __forceinline__ float update_vec(S *dst, const uint4 &v, const float (&dB)[PV], const float (&Cv)[PV],
                                            float dA, float x, float y) {
  using IO = StateIO<S>;
  float f[PV];
  IO::unpack(v, f);
#pragma unroll
  for (int e = 0; e < PV; ++e) {
    f[e] = fmaf(dB[e], x, f[e] * dA);
    y = fmaf(f[e], Cv[e], y);
  }
  __stcg(reinterpret_cast<uint4 *>(dst), IO::pack(f));
  return y;
}

// Row p's output: the butterfly over its LPR lanes, then D x and the z gate, stored by its first lane.
template <int LPR>
__device__ __forceinline__ void store_y(const km_mamba_ssm_shape &s, const km_mamba_ssm_args &a, float y, float x,
                                        float Dh, size_t zrow, uint16_t *out, int p, int cv) {
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

// ---- the default grid: one task per warp

// One warp task: rows row0 .. row0 + kRowsPerTask - 1 of head (b, h). FULL tasks (all but a head's last
// when headdim is not a multiple of kRowsPerTask) carry no row checks, so the state loads issue unpredicated.
template <typename S, int DSTATE, bool FULL>
__device__ __forceinline__ void ssm_task(const km_mamba_ssm_shape &s, const km_mamba_ssm_args &a, long long bh, int row0) {
  using L = Layout<S, DSTATE>;
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

  const float dt = step_dt(s, load_bf16_scalar(a.dt + (size_t)b * s.dt_stride + h) + __ldg(a.dt_bias + h));
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

  const size_t xrow = (size_t)b * s.x_stride + (size_t)h * s.headdim;
  const size_t zrow = (size_t)b * s.z_stride + (size_t)h * s.headdim;
  uint16_t *out = a.out + (size_t)bh * s.headdim;
#pragma unroll
  for (int k = 0; k < L::kInstrs; ++k) {
    if (!FULL && row0 + k * RPI >= s.headdim) break;  // warp-uniform
    const int p = row0 + k * RPI + ro;
    const float x = load_bf16_scalar(a.x + xrow + p);
    float y = 0.0f;
#pragma unroll
    for (int j = 0; j < VPL; ++j)
      y = update_vec<S, PV>(state + (size_t)p * DSTATE + (cv + j * LPR) * PV, v[k][j], dB[j], Cv[j], dA, x, y);
    store_y<LPR>(s, a, y, x, Dh, zrow, out, p, cv);
  }
}

// Grid: one warp per task; tasks run (sequence, head, row block) in that order, so a CTA's warps share a head.
template <typename S, int DSTATE>
__global__ __launch_bounds__(kThreads, kDefaultMinBlocks<S>) void ssm_update_kernel(
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

// ---- the persistent grid: two tasks in flight per warp

// A warp holds two tasks' loads at once, so its register cap is for 2 CTAs per SM (16 warps, each with one
// to two tasks of loads in flight). A task keeps the default's 8 vectors per lane where the lane's B and C
// are 8 values (fp32 state, dstate <= 128); where they are 16 (bf16, or dstate 256) it takes 4, which is
// what fits 128 registers without spilling.
template <typename S, int DSTATE>
struct Persistent {
  static constexpr int kMinBlocks = 2;
  using Default = Layout<S, DSTATE>;
  static constexpr int kVecs = Default::kPerVec * Default::kVecsPerLane == 4 ? kVecsInFlight : kVecsInFlight / 2;
  using L = Layout<S, DSTATE, kVecs>;
};

// One task's loads, issued before the previous task is computed and consumed a task later: the state
// vectors and the task's dt, B, C and x as loaded (bf16 bits), so that nothing waits on them until then.
// A task has at most 32 rows: lane r holds x of the task's row r, and each row's lanes take it by a shuffle
// (one register where a copy per row would take kInstrs; the default's per-row x loads, issued after the
// previous row's stores, wait one after another). dt_bias, A and D, nheads floats each and so in L1, are
// read when the task is computed: three registers per set fewer, and the 128-register cap holds.
template <typename L>
struct TaskLoads {
  static_assert(L::kRowsPerTask <= 32, "one lane per row of a task");
  uint4 v[L::kInstrs][L::kVecsPerLane];
  Bf16Vec<L::kPerVec> B[L::kVecsPerLane], C[L::kVecsPerLane];
  uint32_t x;  // bf16 bits of x[row0 + lane]
  uint16_t dt;
  int b, h, row0;
};

template <typename S, int DSTATE, bool FULL, typename L>
__device__ __forceinline__ void load_task(const km_mamba_ssm_shape &s, const km_mamba_ssm_args &a, long long task,
                                          int tasks_per_head, TaskLoads<L> &t) {
  constexpr int PV = L::kPerVec, LPR = L::kLanesPerRow, VPL = L::kVecsPerLane, RPI = L::kRowsPerInstr;
  const int lane = threadIdx.x & 31, cv = lane % LPR, ro = lane / LPR;
  const long long bh = task / tasks_per_head;
  t.row0 = (int)(task - bh * tasks_per_head) * L::kRowsPerTask;
  t.b = (int)(bh / s.nheads), t.h = (int)(bh - (long long)t.b * s.nheads);
  const S *state = reinterpret_cast<const S *>(a.state) + (size_t)bh * s.headdim * DSTATE;
#pragma unroll
  for (int k = 0; k < L::kInstrs; ++k) {
    const int p = t.row0 + k * RPI + ro;
    if (FULL || t.row0 + k * RPI < s.headdim) {
#pragma unroll
      for (int j = 0; j < VPL; ++j)
        t.v[k][j] = *reinterpret_cast<const uint4 *>(state + (size_t)p * DSTATE + (cv + j * LPR) * PV);
    }
  }
  const int xr = t.row0 + lane;
  if (lane < L::kRowsPerTask && (FULL || xr < s.headdim))
    t.x = __ldg(a.x + (size_t)t.b * s.x_stride + (size_t)t.h * s.headdim + xr);
  t.dt = __ldg(a.dt + (size_t)t.b * s.dt_stride + t.h);
  const size_t bc = (size_t)t.b * s.bc_stride + (size_t)(t.h / (s.nheads / s.ngroups)) * DSTATE;
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    t.B[j] = load_bf16_vec<PV>(a.B + bc + (cv + j * LPR) * PV);
    t.C[j] = load_bf16_vec<PV>(a.C + bc + (cv + j * LPR) * PV);
  }
}

// ssm_task's arithmetic, on loads made a task earlier.
template <typename S, int DSTATE, bool FULL, typename L>
__device__ __forceinline__ void finish_task(const km_mamba_ssm_shape &s, const km_mamba_ssm_args &a,
                                            const TaskLoads<L> &t) {
  constexpr int PV = L::kPerVec, LPR = L::kLanesPerRow, VPL = L::kVecsPerLane, RPI = L::kRowsPerInstr;
  const int lane = threadIdx.x & 31, cv = lane % LPR, ro = lane / LPR;
  const float dt = step_dt(s, bf16_bits_to_float(t.dt) + __ldg(a.dt_bias + t.h));
  const float dA = expf(__ldg(a.A + t.h) * dt);
  const float Dh = s.has_d ? __ldg(a.D + t.h) : 0.0f;
  float dB[VPL][PV], Cv[VPL][PV];
#pragma unroll
  for (int j = 0; j < VPL; ++j) {
    unpack_bf16<PV>(t.B[j], dB[j]);
    unpack_bf16<PV>(t.C[j], Cv[j]);
#pragma unroll
    for (int e = 0; e < PV; ++e) dB[j][e] *= dt;
  }
  const size_t bh = (size_t)t.b * s.nheads + t.h;
  S *state = reinterpret_cast<S *>(a.state) + bh * s.headdim * DSTATE;
  const size_t zrow = (size_t)t.b * s.z_stride + (size_t)t.h * s.headdim;
  uint16_t *out = a.out + bh * s.headdim;
#pragma unroll
  for (int k = 0; k < L::kInstrs; ++k) {
    if (!FULL && t.row0 + k * RPI >= s.headdim) break;  // warp-uniform
    const int p = t.row0 + k * RPI + ro;
    const float x = bf16_bits_to_float(__shfl_sync(kFull, t.x, k * RPI + ro));
    float y = 0.0f;
#pragma unroll
    for (int j = 0; j < VPL; ++j)
      y = update_vec<S, PV>(state + (size_t)p * DSTATE + (cv + j * LPR) * PV, t.v[k][j], dB[j], Cv[j], dA, x, y);
    store_y<LPR>(s, a, y, x, Dh, zrow, out, p, cv);
  }
}

// One pipeline step: start the loads of the warp's next task into `next`, then compute and store `cur`.
// False when there is no next task (`next` is then left as it was).
template <typename S, int DSTATE, bool FULL, typename L>
__device__ __forceinline__ bool pipeline_step(const km_mamba_ssm_shape &s, const km_mamba_ssm_args &a,
                                              int tasks_per_head, long long tasks, long long &task,
                                              const TaskLoads<L> &cur, TaskLoads<L> &next) {
  task += (long long)gridDim.x * kWarps;
  const bool more = task < tasks;  // warp-uniform
  if (more) load_task<S, DSTATE, FULL>(s, a, task, tasks_per_head, next);
  finish_task<S, DSTATE, FULL>(s, a, cur);
  return more;
}

// Grid: the CTAs resident at once (km_mamba_ssm_persistent_ctas). Warp w of CTA c starts at task
// w * gridDim.x + c and strides by every warp of the grid, so the last, partial round of tasks falls on
// every CTA alike rather than on the first few. The two register sets alternate roles (two steps per loop
// trip): a copy from one to the other would wait for the loads it means to keep in flight. FULL: headdim is
// a multiple of the task's rows, so no task checks rows.
template <typename S, int DSTATE, bool FULL>
__global__ __launch_bounds__(kThreads, (Persistent<S, DSTATE>::kMinBlocks)) void ssm_persistent_kernel(
    km_mamba_ssm_shape s, km_mamba_ssm_args a, int tasks_per_head, long long tasks) {
  using L = typename Persistent<S, DSTATE>::L;
  long long task = (long long)(threadIdx.x >> 5) * gridDim.x + blockIdx.x;
  if (task >= tasks) return;  // warp-uniform
  TaskLoads<L> t0, t1;
  load_task<S, DSTATE, FULL>(s, a, task, tasks_per_head, t0);
  while (pipeline_step<S, DSTATE, FULL>(s, a, tasks_per_head, tasks, task, t0, t1) &&
         pipeline_step<S, DSTATE, FULL>(s, a, tasks_per_head, tasks, task, t1, t0)) {
  }
}

using SsmKernel = void (*)(km_mamba_ssm_shape, km_mamba_ssm_args, int, long long);

// The persistent kernel for a shape, and its rows per task: one choice for the launch and the occupancy
// query, so the grid is sized for the kernel that runs.
struct PersistentKernel {
  SsmKernel fn;
  int rows_per_task;
};

template <typename S, int DSTATE>
PersistentKernel persistent_of(const km_mamba_ssm_shape *s) {
  constexpr int rows = Persistent<S, DSTATE>::L::kRowsPerTask;
  return {s->headdim % rows == 0 ? ssm_persistent_kernel<S, DSTATE, true> : ssm_persistent_kernel<S, DSTATE, false>,
          rows};
}

template <typename S>
PersistentKernel persistent_dstate(const km_mamba_ssm_shape *s) {
  switch (s->dstate) {
    case 64: return persistent_of<S, 64>(s);
    case 128: return persistent_of<S, 128>(s);
    case 256: return persistent_of<S, 256>(s);
    default: return {nullptr, 0};
  }
}

PersistentKernel persistent_for(const km_mamba_ssm_shape *s) {
  return s->state_dtype == KM_MAMBA_STATE_F32 ? persistent_dstate<float>(s) : persistent_dstate<__nv_bfloat16>(s);
}

// No more CTAs than tasks for them: a small batch launches what it has, as the default grid would.
cudaError_t launch_persistent(const km_mamba_ssm_shape *s, const km_mamba_ssm_args *a, cudaStream_t stream) {
  const PersistentKernel k = persistent_for(s);
  if (!k.fn) return cudaErrorInvalidValue;
  const int tasks_per_head = (s->headdim + k.rows_per_task - 1) / k.rows_per_task;
  const long long tasks = (long long)s->batch * s->nheads * tasks_per_head;
  const long long needed = (tasks + kWarps - 1) / kWarps;
  const unsigned grid = (unsigned)(needed < s->persistent_ctas ? needed : s->persistent_ctas);
  k.fn<<<grid, kThreads, 0, stream>>>(*s, *a, tasks_per_head, tasks);
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

extern "C" int km_mamba_ssm_persistent_ctas(const km_mamba_ssm_shape *s, int device) {
  if (!s) return 0;
  km_mamba_ssm_shape plain = *s;  // the grid is a property of the kernel, whatever s asks for now
  plain.persistent_ctas = 0;
  if (km_mamba_ssm_shape_error(&plain)) return 0;
  const PersistentKernel k = persistent_for(&plain);
  int sms = 0, blocks = 0;
  if (!k.fn || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.fn, kThreads, 0) != cudaSuccess)
    return 0;
  return sms * blocks;
}

extern "C" cudaError_t km_mamba_ssm_update(const km_mamba_ssm_shape *s, const km_mamba_ssm_args *a,
                                           cudaStream_t stream) {
  if (!s || !a || km_mamba_ssm_shape_error(s)) return cudaErrorInvalidValue;
  if (!a->state || !a->x || !a->dt || !a->dt_bias || !a->A || !a->B || !a->C || !a->out ||
      (s->has_d && !a->D) || (s->has_z && !a->z))
    return cudaErrorInvalidValue;
  if (!aligned16(a->state) || !aligned16(a->B) || !aligned16(a->C)) return cudaErrorInvalidValue;
  if (s->persistent_ctas > 0) return launch_persistent(s, a, stream);
  return s->state_dtype == KM_MAMBA_STATE_F32 ? dispatch_dstate<float>(s, a, stream)
                                              : dispatch_dstate<__nv_bfloat16>(s, a, stream);
}
