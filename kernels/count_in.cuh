// A CTA counting itself in on a counter in global memory, by one thread, after the CTA's barrier: the one
// atom.add.acq_rel.gpu both releases the CTA's earlier stores (ordered before it by the barrier: the release is
// cumulative) and, for the CTA that brings the count to `arrivals`, acquires every other CTA's (counted before
// it); that CTA sets the counter back to zero for the next launch (every arrival is in, nothing else touches it in
// this one). The caller's threads read the others' stores after a second barrier. Until the change that added
// this header the callers fenced with __threadfence() (fence.sc.gpu: MEMBAR.SC.GPU in sm_90 SASS) before the
// count, by every thread in the decode kernel, and again after it; acquire and release are all the pattern needs
// (MEMBAR.ALL.GPU once, beside the atomic).
#ifndef KM_COUNT_IN_CUH
#define KM_COUNT_IN_CUH

// true for the last of `arrivals` arrivals; T is int or unsigned (a 32-bit counter)
template <typename T>
__device__ __forceinline__ bool km_count_in(T *counter, unsigned arrivals) {
  static_assert(sizeof(T) == 4, "a 32-bit counter");
  unsigned old;
  asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
  const bool last = old == arrivals - 1;
  if (last) *counter = 0;
  return last;
}

#endif
