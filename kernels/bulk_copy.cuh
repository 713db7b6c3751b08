// Hopper bulk-copy pipeline (cp.async.bulk, sm_90): one warp per CTA streams output "stages" of up to
// KM_BULK_STAGE_BYTES through shared memory. Each stage is filled by bulk loads of whole source parts
// (one mbarrier counts their bytes) and drained by one bulk store, because the output is contiguous.
// The copy engine moves the bytes, so no thread holds data in registers and a handful of instructions
// keep 48 KiB per CTA in flight. Used by the roofline copy and the paged gather.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernel_image.h"

namespace km_bulk {

constexpr int kStages = 4;                  // 3 stages of loads in flight while one drains
constexpr uint32_t kStageBytes = 16 * 1024; // one bulk store per stage
constexpr int kCtasPerSm = 3;               // 3 x 64 KiB of shared memory per SM
constexpr size_t kSmemBytes = (size_t)kStages * kStageBytes + kStages * sizeof(uint64_t);

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= KM_BULK_MIN_ARCH * 10
__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void bar_init(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
// The mbarrier is invalidated: no phase of it is pending and nothing waits on it any more; its memory may then be used
// for something else (PTX requires this before the memory is reused).
__device__ __forceinline__ void bar_inval(uint64_t *bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// This thread's arrival on the mbarrier's current phase (no byte count).
__device__ __forceinline__ void bar_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void bar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void bar_expect(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_wait(uint64_t *bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
// bar_wait that gives up after `tries` polls (each try_wait may also suspend the thread a while) with a trap, so
// that a phase which never completes (an arrival count that does not match) fails the launch instead of hanging it.
__device__ __forceinline__ void bar_wait_or_trap(uint64_t *bar, uint32_t parity, uint32_t tries) {
  for (uint32_t k = 0; k < tries; ++k) {
    uint32_t done;
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
    if (done) return;
  }
  __trap();
}
__device__ __forceinline__ void load(void *dst_smem, const void *src, uint32_t bytes, uint64_t *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst_smem)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
// One box of a 3-D tensor map at coordinates (x, y, z), x fastest, into shared memory, its bytes counted on bar.
// `map` is a tensor map in parameter space (a __grid_constant__ kernel parameter) or in constant/global memory.
__device__ __forceinline__ void load_box3(void *dst_smem, const void *map, int x, int y, int z, uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];" ::"r"(smem_addr(dst_smem)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(smem_addr(bar))
      : "memory");
}
// An arrival on bar once this thread's earlier cp.async copies have landed; the barrier's expected arrivals count
// it (.noinc).
__device__ __forceinline__ void arrive_on_copies(uint64_t *bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// This thread's earlier accesses to shared memory through the generic proxy (ordinary loads), ordered before its
// later ones through the async proxy (bulk copies into the same bytes).
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void store(void *dst, const void *src_smem, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_addr(src_smem)),
               "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
__device__ __forceinline__ void wait_stores_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void wait_stores() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// Copy `total` output bytes; part p of the output (part_bytes each, 16-byte multiples) comes from
// locate(p). Stage t covers output [t * stage, (t + 1) * stage); CTAs take stages round-robin.
// Launch with 32 threads and kSmemBytes of dynamic shared memory.
template <class Locate>
__device__ void pipeline(unsigned char *__restrict__ out, uint64_t total, uint32_t part_bytes, uint32_t stage_bytes,
                         const Locate &locate) {
  extern __shared__ __align__(128) unsigned char smem[];
  uint64_t *bars = reinterpret_cast<uint64_t *>(smem + (size_t)kStages * kStageBytes);
  const uint32_t lane = threadIdx.x;
  const uint64_t nstages = (total + stage_bytes - 1) / stage_bytes;
  const uint64_t mine = nstages > blockIdx.x ? (nstages - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  if (lane == 0) {
    for (int s = 0; s < kStages; s++) bar_init(&bars[s], 1);
    bar_init_fence();
  }
  __syncwarp();
  auto issue = [&](uint64_t k) {
    const uint64_t t = blockIdx.x + k * gridDim.x;
    const uint64_t begin = t * stage_bytes;
    const uint32_t len = (uint32_t)(total - begin < stage_bytes ? total - begin : stage_bytes);
    unsigned char *buf = smem + (size_t)(k % kStages) * kStageBytes;
    uint64_t *bar = &bars[k % kStages];
    if (lane == 0) bar_expect(bar, len);
    __syncwarp();
    const uint32_t parts = len / part_bytes;
    for (uint32_t p = lane; p < parts; p += 32) load(buf + (size_t)p * part_bytes, locate(begin / part_bytes + p), part_bytes, bar);
  };
  for (uint64_t k = 0; k < mine && k < (uint64_t)kStages - 1; k++) issue(k);
  for (uint64_t k = 0; k < mine; k++) {
    const uint64_t next = k + kStages - 1;
    if (next < mine) {
      if (lane == 0) wait_stores_read();  // the stage `next` reuses was drained by store k - 1
      __syncwarp();
      issue(next);
    }
    bar_wait(&bars[k % kStages], (uint32_t)((k / kStages) & 1));
    if (lane == 0) {
      const uint64_t begin = (blockIdx.x + k * gridDim.x) * stage_bytes;
      const uint32_t len = (uint32_t)(total - begin < stage_bytes ? total - begin : stage_bytes);
      store(out + begin, smem + (size_t)(k % kStages) * kStageBytes, len);
    }
  }
  if (lane == 0) wait_stores();
}
#endif

// What runs for `kernel` on the current device, into *img; when that is sm_90 code, the kernel may also
// use kSmemBytes of dynamic shared memory. Once per case, before its first launch: launches query nothing,
// and a kernel whose image is not sm_90 code keeps the default limit, so a launch of it fails loudly.
template <class Kernel>
cudaError_t setup(Kernel *kernel, km_kernel_image *img) {
  cudaError_t e = km_kernel_image_query(reinterpret_cast<const void *>(kernel), img);
  if (e != cudaSuccess || !km_kernel_image_runs(img, KM_BULK_MIN_ARCH)) return e;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kSmemBytes);
}

// Stage size for parts of part_bytes: whole parts per stage, at most kStageBytes; 0 when a part is
// not a 16-byte multiple or larger than a stage (the caller splits larger pieces into parts first).
inline uint32_t stage_for(uint32_t part_bytes) {
  if (part_bytes == 0 || part_bytes % 16 != 0 || part_bytes > kStageBytes) return 0;
  return (kStageBytes / part_bytes) * part_bytes;
}

}  // namespace km_bulk
