// Device side of km_diff (kernels/verify_compare.h), shared by the trusted checks: count a mismatch
// and keep it when the count hands out one of the first KM_DIFF_KEPT slots.
#ifndef KM_KERNELS_VERIFY_DIFF_CUH
#define KM_KERNELS_VERIFY_DIFF_CUH

#include "verify_compare.h"

__device__ __forceinline__ void km_diff_record(km_diff *d, size_t index, uint32_t got, uint32_t want) {
  const unsigned long long slot = atomicAdd(&d->count, 1ull);
  if (slot < KM_DIFF_KEPT) {
    d->index[slot] = index;
    d->got[slot] = got;
    d->want[slot] = want;
  }
}

#endif
