/* Device-side fills for fresh test data: random bits and Gaussian bf16 from a counter hash of
 * (seed, index), so multi-GiB inputs are made in milliseconds and never repeat across runs. */
#ifndef KM_KERNELS_FILL_H
#define KM_KERNELS_FILL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Random bits over `bytes` bytes (any length, any alignment). */
cudaError_t km_fill_random_bits(void *dst, size_t bytes, uint64_t seed, cudaStream_t stream);

/* n bf16 values drawn N(0, stddev^2); channel c = i % channels is scaled by `outlier_scale` when
 * (c % outlier_every) == outlier_offset (outlier_every 0: no outliers). Models keys with a few
 * large channels. */
cudaError_t km_fill_normal_bf16(uint16_t *dst, size_t n, uint64_t seed, float stddev, int channels,
                                int outlier_every, int outlier_offset, float outlier_scale,
                                cudaStream_t stream);

/* n fp32 values drawn N(mean, stddev^2). */
cudaError_t km_fill_normal_f32(float *dst, size_t n, uint64_t seed, float mean, float stddev, cudaStream_t stream);

/* Random int32 in [0, bound) (bound > 0). */
cudaError_t km_fill_random_index(int32_t *dst, size_t n, uint64_t seed, int32_t bound, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
