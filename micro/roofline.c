/* The ceilings as benchmarks: device-to-device cudaMemcpyAsync (the copy ceiling), and SM kernels that
 * copy, only read, and only write with 16-byte vectors. The read and write kernels are also declared as
 * the start-up read-only and write-only ceilings (roofline_ceilings below). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceiling.h"
#include "check.h"
#include "fill.h"
#include "kernel_path.h"
#include "micro_tables.h"
#include "roofline.h"
#include "verify.h"

typedef enum roof_kind { ROOF_MEMCPY, ROOF_SM_COPY, ROOF_SM_READ, ROOF_SM_WRITE, ROOF_KIND_COUNT } roof_kind;

typedef struct roof_params {
  roof_kind kind;
  int shape; /* ROOF_SM_COPY: km_copy_shape, or -1 for km_copy_vec16's default */
  int ceiling_size; /* 1: the start-up ceiling's own buffer size (the row that is the copy ceiling's method) */
} roof_params;

typedef struct roof_run {
  void *src, *dst;
  size_t bytes;
  unsigned long long *xor_out;
  int sms;
  roof_kind kind;
  int shape;
} roof_run;

static const uint64_t kPattern = 0xA5C3F00D12345678ull;

static cudaError_t enqueue(void *arg, int rep, cudaStream_t s) {
  roof_run *r = arg;
  switch (r->kind) {
    case ROOF_MEMCPY: return cudaMemcpyAsync(r->dst, r->src, r->bytes, cudaMemcpyDeviceToDevice, s);
    case ROOF_SM_COPY:
      if (r->shape < 0) return km_copy_vec16(r->dst, r->src, r->bytes, r->sms, s);
      return km_copy_vec16_shape(r->dst, r->src, r->bytes, r->sms, (km_copy_shape)r->shape, s);
    case ROOF_SM_READ: return km_read_xor(r->src, r->bytes, r->xor_out, r->sms, s);
    default: return km_write_pattern(r->dst, r->bytes, kPattern, r->sms, s);
  }
}

/* Size of the working set: 1 GiB (>= 8x L2 on current cards), capped at the start-up ceiling's buffers
 * (which are 8 GiB where memory allows, so that a launch's fixed cost is 0.4% of it: at 1 GiB the same
 * kernels read ~2-3% under their ceiling, which is that fixed cost; every row here is checked on the host in
 * full, and 8 GiB of it per row would cost seconds). The d2d_memcpy row is the copy ceiling's own method, so
 * it runs at the ceiling's size (H200, revision 54356d7a950f: 97.85% of the ceiling at 1 GiB). */
static size_t roof_bytes(km_bench *b, const roof_params *p) {
  const size_t gib = (size_t)1 << 30, ceiling = km_bench_ceiling_bytes(b);
  return p->ceiling_size || ceiling < gib ? ceiling : gib;
}

static unsigned long long cpu_xor(const void *p, size_t bytes) {
  const unsigned long long *w = p;
  unsigned long long acc = 0;
  for (size_t i = 0; i < bytes / 8; i++) acc ^= w[i];
  return acc;
}

static void verify(km_bench *b, roof_run *r) {
  cudaStream_t s = km_bench_stream(b);
  size_t n = r->bytes;
  unsigned char *want = km_bench_host_alloc(b, n), *got = km_bench_host_alloc(b, n);
  if (!want || !got) return;
  if (r->src) KM_CUDA(b, km_fill_random_bits(r->src, n, km_bench_seed(b), s));
  if (r->dst) KM_CUDA(b, cudaMemsetAsync(r->dst, 0xFF, n, s)); /* poison */
  if (r->xor_out) KM_CUDA(b, cudaMemsetAsync(r->xor_out, 0, sizeof *r->xor_out, s));
  KM_CUDA(b, enqueue(r, 0, s));
  if (r->kind == ROOF_SM_READ) {
    unsigned long long dev = 0;
    KM_CUDA(b, cudaMemcpyAsync(&dev, r->xor_out, sizeof dev, cudaMemcpyDeviceToHost, s));
    KM_CUDA(b, cudaMemcpyAsync(want, r->src, n, cudaMemcpyDeviceToHost, s));
    KM_CUDA(b, cudaStreamSynchronize(s));
    unsigned long long ref = cpu_xor(want, n);
    if (dev != ref) km_bench_mismatch(b, "xor of all words: got %016llx, want %016llx", dev, ref);
    km_bench_verified(b, dev != ref, 1, "bitwise xor of every 64-bit word");
    return;
  }
  KM_CUDA(b, cudaMemcpyAsync(got, r->dst, n, cudaMemcpyDeviceToHost, s));
  if (r->kind == ROOF_SM_WRITE) {
    for (size_t i = 0; i < n / 8; i++) memcpy(want + 8 * i, &kPattern, 8);
  } else {
    KM_CUDA(b, cudaMemcpyAsync(want, r->src, n, cudaMemcpyDeviceToHost, s));
  }
  KM_CUDA(b, cudaStreamSynchronize(s));
  km_bench_verified(b, km_verify_equal(b, got, want, n), n / 4, "bitwise");
}

static void run_roofline(km_bench *b, const void *params) {
  const roof_params *p = params;
  roof_run r = {0};
  r.kind = p->kind;
  r.shape = p->shape;
  r.bytes = roof_bytes(b, p);
  r.sms = km_bench_device(b)->multiProcessorCount;
  if (p->shape == KM_COPY_BULK) {
    km_kernel_image img;
    cudaError_t e = km_copy_bulk_setup(&img);
    if (!km_kernel_path_usable(b, e, &img, KM_BULK_MIN_ARCH, "bulk copies")) return;
  }
  if (p->kind != ROOF_SM_WRITE) r.src = km_bench_device_alloc(b, r.bytes);
  if (p->kind != ROOF_SM_READ) r.dst = km_bench_device_alloc(b, r.bytes);
  if (p->kind == ROOF_SM_READ) r.xor_out = km_bench_device_alloc(b, sizeof *r.xor_out);
  KM_RETURN_IF_STOPPED(b);
  if (km_bench_verify_enabled(b)) verify(b, &r);
  KM_RETURN_IF_STOPPED(b);
  km_work w = {0};
  w.bytes_read = (p->kind == ROOF_SM_WRITE) ? 0 : (double)r.bytes;
  w.bytes_written = (p->kind == ROOF_SM_READ) ? 0 : (double)r.bytes;
  km_bench_measure(b, enqueue, &r, &w);
  km_bench_label(b, "%.0f MiB", r.bytes / 1048576.0);
}

static const roof_params p_memcpy = {ROOF_MEMCPY, -1, 1}, p_copy = {ROOF_SM_COPY, -1}, p_read = {ROOF_SM_READ, -1},
                          p_write = {ROOF_SM_WRITE, -1};
static const roof_params p_copy_shape[KM_COPY_SHAPE_COUNT] = {
    {ROOF_SM_COPY, KM_COPY_STRIDED_ILP4}, {ROOF_SM_COPY, KM_COPY_TILE_ILP4}, {ROOF_SM_COPY, KM_COPY_TILE_ILP8},
    {ROOF_SM_COPY, KM_COPY_TILE_ILP8_PLAIN}, {ROOF_SM_COPY, KM_COPY_STRIDED_ILP8}, {ROOF_SM_COPY, KM_COPY_BULK},
    {ROOF_SM_COPY, KM_COPY_BLOCKS_ILP4}, {ROOF_SM_COPY, KM_COPY_BLOCKS_ILP8}};

static const km_case roofline_cases[] = {
    {"roofline/d2d_memcpy", "roofline", "device-to-device cudaMemcpyAsync: the copy ceiling", run_roofline, &p_memcpy,
     KM_CASE_QUICK, NULL},
    {"roofline/sm_copy", "roofline", "16-byte vector copy kernel (a block per 16 KiB tile, 4 loads in flight per thread)",
     run_roofline, &p_copy, KM_CASE_QUICK, "roofline/d2d_memcpy"},
    {"roofline/sm_read", "roofline", "read-only kernel: XOR of every word, one atomic per warp", run_roofline, &p_read,
     KM_CASE_QUICK, NULL},
    {"roofline/sm_write", "roofline", "write-only kernel: 16-byte pattern stores", run_roofline, &p_write,
     KM_CASE_QUICK, NULL},
    /* the shapes sm_copy was chosen from, kept so a new GPU can show whether the choice still holds */
    {"roofline/sm_copy_shape/strided_ilp4", "roofline", "copy, thread-strided, 4 loads in flight", run_roofline,
     &p_copy_shape[0], 0, "roofline/d2d_memcpy"},
    {"roofline/sm_copy_shape/tile_ilp4", "roofline", "copy, 16 KiB block tiles", run_roofline, &p_copy_shape[1], 0,
     "roofline/d2d_memcpy"},
    {"roofline/sm_copy_shape/tile_ilp8", "roofline", "copy, 32 KiB block tiles", run_roofline, &p_copy_shape[2], 0,
     "roofline/d2d_memcpy"},
    {"roofline/sm_copy_shape/tile_ilp8_plain", "roofline", "copy, 32 KiB block tiles, no cache hints", run_roofline,
     &p_copy_shape[3], 0, "roofline/d2d_memcpy"},
    {"roofline/sm_copy_shape/strided_ilp8", "roofline", "copy, thread-strided, 8 loads in flight", run_roofline,
     &p_copy_shape[4], 0, "roofline/d2d_memcpy"},
    {"roofline/sm_copy_shape/bulk", "roofline", "copy by sm_90 bulk copies through shared memory, 16 KiB stages",
     run_roofline, &p_copy_shape[5], KM_CASE_QUICK, "roofline/d2d_memcpy"},
    {"roofline/sm_copy_shape/blocks_ilp4", "roofline", "copy, a block per 16 KiB tile (not persistent)", run_roofline,
     &p_copy_shape[6], 0, "roofline/d2d_memcpy"},
    {"roofline/sm_copy_shape/blocks_ilp8", "roofline", "copy, a block per 32 KiB tile (not persistent)", run_roofline,
     &p_copy_shape[7], 0, "roofline/d2d_memcpy"},
};

/* ---- the start-up ceilings: each kernel checked on its own launch before it is timed */
static cudaError_t ceiling_read(void *dst, const void *src, size_t bytes, void *scratch, int sms, cudaStream_t s) {
  return km_read_xor(src, bytes, scratch, sms, s);
}

static cudaError_t ceiling_write(void *dst, const void *src, size_t bytes, void *scratch, int sms, cudaStream_t s) {
  return km_write_pattern(dst, bytes, kPattern, sms, s);
}

/* A device buffer copied to a host one the caller frees; NULL with the reason in err. */
static void *to_host_copy(const void *dev, size_t bytes, cudaStream_t s, char *err, size_t errlen) {
  void *h = malloc(bytes ? bytes : 1);
  cudaError_t e = h ? cudaMemcpyAsync(h, dev, bytes, cudaMemcpyDeviceToHost, s) : cudaErrorMemoryAllocation;
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e == cudaSuccess) return h;
  snprintf(err, errlen, "copying %zu bytes back: %s", bytes, cudaGetErrorString(e));
  free(h);
  return NULL;
}

static int check_read(const void *dst, const void *src, size_t bytes, const void *scratch, cudaStream_t s, char *err,
                      size_t errlen) {
  unsigned long long got = 0;
  void *h = to_host_copy(src, bytes, s, err, errlen);
  if (!h) return -1;
  unsigned long long want = cpu_xor(h, bytes);
  free(h);
  cudaError_t e = cudaMemcpyAsync(&got, scratch, sizeof got, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    snprintf(err, errlen, "reading the result: %s", cudaGetErrorString(e));
    return -1;
  }
  if (got == want) return 0;
  snprintf(err, errlen, "xor of every 64-bit word: got %016llx, want %016llx", got, want);
  return -1;
}

static int check_write(const void *dst, const void *src, size_t bytes, const void *scratch, cudaStream_t s, char *err,
                       size_t errlen) {
  unsigned char *h = to_host_copy(dst, bytes, s, err, errlen);
  if (!h) return -1;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < bytes / 8; i++)
    if (memcmp(h + 8 * i, &kPattern, 8) != 0 && bad++ == 0) first = i;
  free(h);
  if (bad == 0) return 0;
  snprintf(err, errlen, "%zu of %zu words are not the pattern (first at byte %zu)", bad, bytes / 8, 8 * first);
  return -1;
}

static const km_ceiling_kernel roofline_ceiling_kernels[] = {
    {"read_xor (kernels/roofline.cu: 16-byte streaming loads, XOR per warp)", KM_TRAFFIC_READ, ceiling_read,
     check_read},
    {"write_pattern (kernels/roofline.cu: 16-byte streaming stores)", KM_TRAFFIC_WRITE, ceiling_write, check_write},
};
static const km_ceiling_set roofline_ceilings = {
    roofline_ceiling_kernels, sizeof roofline_ceiling_kernels / sizeof roofline_ceiling_kernels[0],
    km_fill_random_bits};

const km_case_table km_roofline_table = {roofline_cases, sizeof roofline_cases / sizeof roofline_cases[0],
                                         &roofline_ceilings};
