/* NCCL send/recv between GPUs of this process, one rank per GPU (ncclCommInitAll), and a rank sending
 * to itself on one GPU. Built against NCCL only when CMake found nccl.h and libnccl (KM_HAVE_NCCL);
 * otherwise every call answers that NCCL is absent, so the cases that use it are skipped, not dropped. */
#ifndef KM_BASELINES_P2P_NCCL_H
#define KM_BASELINES_P2P_NCCL_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct km_nccl km_nccl;

/* 1 when this build has NCCL; then *version (when not NULL) is NCCL's version code (2.28.9 -> 22809)
 * of the library loaded at run time. 0 without NCCL. */
int km_nccl_built(int *version);

/* Communicators over `ndev` devices (ranks 0..ndev-1 in that order); ndev 1 is a rank of its own.
 * The current device is kept. 0 ok; -1 with one line in err. */
int km_nccl_create(const int *devices, int ndev, km_nccl **out, char *err, size_t errlen);
void km_nccl_destroy(km_nccl *n);

/* One point-to-point transfer: rank `from` sends `bytes` from `send`, rank `to` receives them into `recv`
 * (from == to: a rank sending to itself). */
typedef struct km_nccl_xfer {
  int from, to;
  const void *send;
  void *recv;
  size_t bytes;
} km_nccl_xfer;

/* All `count` transfers in one NCCL group, each rank's operations on streams[rank]. NCCL's own failures
 * come back as cudaErrorUnknown with the reason in km_nccl_error. */
cudaError_t km_nccl_transfer(km_nccl *n, const km_nccl_xfer *x, size_t count, const cudaStream_t *streams);
/* The last NCCL failure of n, "" when none. */
const char *km_nccl_error(const km_nccl *n);

#ifdef __cplusplus
}
#endif

#endif
