/* NCCL point-to-point between the GPUs of this process (see p2p_nccl.h). Without KM_HAVE_NCCL the same
 * entry points report that the build has no NCCL. */
#include "p2p_nccl.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef KM_HAVE_NCCL
#include <nccl.h>

/* The suite moves data between at most a handful of GPUs of one host. */
enum { KM_NCCL_MAX_RANKS = 16 };

struct km_nccl {
  int ranks;
  ncclComm_t comms[KM_NCCL_MAX_RANKS];
  char err[256];
};

int km_nccl_built(int *version) {
  if (version) {
    int v = 0;
    *version = ncclGetVersion(&v) == ncclSuccess ? v : 0;
  }
  return 1;
}

int km_nccl_create(const int *devices, int ndev, km_nccl **out, char *err, size_t errlen) {
  *out = NULL;
  if (ndev < 1 || ndev > KM_NCCL_MAX_RANKS) {
    snprintf(err, errlen, "NCCL: %d ranks asked for, 1..%d supported", ndev, KM_NCCL_MAX_RANKS);
    return -1;
  }
  km_nccl *n = calloc(1, sizeof *n);
  if (!n) {
    snprintf(err, errlen, "NCCL: out of host memory");
    return -1;
  }
  int current = 0;
  cudaGetDevice(&current);
  ncclResult_t r = ncclCommInitAll(n->comms, ndev, devices);
  cudaSetDevice(current); /* NCCL may leave another device current */
  if (r != ncclSuccess) {
    snprintf(err, errlen, "ncclCommInitAll over %d device(s) failed: %s", ndev, ncclGetErrorString(r));
    free(n);
    return -1;
  }
  n->ranks = ndev;
  *out = n;
  return 0;
}

void km_nccl_destroy(km_nccl *n) {
  if (!n) return;
  int current = 0;
  cudaGetDevice(&current);
  for (int i = 0; i < n->ranks; i++) ncclCommDestroy(n->comms[i]);
  cudaSetDevice(current);
  free(n);
}

static void set_error(km_nccl *n, ncclResult_t r, int rank) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  const char *detail = ncclGetLastError(n->comms[rank]);
#else
  const char *detail = "";
  (void)rank;
#endif
  snprintf(n->err, sizeof n->err, "NCCL send/recv failed: %s%s%s", ncclGetErrorString(r),
           detail && *detail ? ": " : "", detail ? detail : "");
}

cudaError_t km_nccl_transfer(km_nccl *n, const km_nccl_xfer *x, size_t count, const cudaStream_t *streams) {
  for (size_t i = 0; i < count; i++)
    if (x[i].from < 0 || x[i].from >= n->ranks || x[i].to < 0 || x[i].to >= n->ranks) {
      snprintf(n->err, sizeof n->err, "NCCL transfer %zu: ranks %d -> %d outside 0..%d", i, x[i].from, x[i].to,
               n->ranks - 1);
      return cudaErrorInvalidValue;
    }
  ncclResult_t r = ncclGroupStart();
  int rank = 0;
  for (size_t i = 0; r == ncclSuccess && i < count; i++) {
    rank = x[i].from;
    r = ncclSend(x[i].send, x[i].bytes, ncclUint8, x[i].to, n->comms[x[i].from], streams[x[i].from]);
    if (r != ncclSuccess) break;
    rank = x[i].to;
    r = ncclRecv(x[i].recv, x[i].bytes, ncclUint8, x[i].from, n->comms[x[i].to], streams[x[i].to]);
  }
  ncclResult_t end = ncclGroupEnd(); /* always closes the group, even after a failed call inside it */
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess) {
    set_error(n, r, rank);
    return cudaErrorUnknown;
  }
  return cudaSuccess;
}

const char *km_nccl_error(const km_nccl *n) { return n ? n->err : ""; }

#else /* no NCCL in this build */

int km_nccl_built(int *version) {
  if (version) *version = 0;
  return 0;
}

int km_nccl_create(const int *devices, int ndev, km_nccl **out, char *err, size_t errlen) {
  (void)devices, (void)ndev;
  *out = NULL;
  snprintf(err, errlen, "this build has no NCCL (nccl.h and libnccl were not found at configure time)");
  return -1;
}

void km_nccl_destroy(km_nccl *n) { (void)n; }

cudaError_t km_nccl_transfer(km_nccl *n, const km_nccl_xfer *x, size_t count, const cudaStream_t *streams) {
  (void)n, (void)x, (void)count, (void)streams;
  return cudaErrorNotSupported;
}

const char *km_nccl_error(const km_nccl *n) {
  (void)n;
  return "this build has no NCCL";
}

#endif
