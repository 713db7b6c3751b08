/* The copy ceiling every GPU row is a share of: device-to-device cudaMemcpyAsync of a buffer at least
 * 8x L2 (so L2 cannot serve it), bytes counted read + written, median of timed copies. */
#ifndef KM_CEILING_H
#define KM_CEILING_H

#include <stddef.h>

#include <cuda_runtime_api.h>

/* Size of each of the two buffers: max(8 x L2, 1 GiB), reduced to fit a quarter of free memory. */
size_t km_ceiling_bytes(size_t l2_bytes, size_t free_bytes);
/* Copies between two buffers of `bytes` each (km_ceiling_bytes, or smaller for a smoke run).
 * 0 ok with GB/s in *gbps and the CV of the samples in *cv; -1 with one line in err. */
int km_ceiling_measure(cudaStream_t stream, size_t bytes, double *gbps, double *cv, char *err, size_t errlen);

#endif
