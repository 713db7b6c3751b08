/* GPU checks of what the prefill rows trust: the fp32 reference GEMM against a CPU GEMM in double on shapes
 * that do and do not fill its 64-wide tiles (batched too), cuBLASLt's bf16 GEMMs through the baseline's
 * plans against the CPU (dense and expert-batched shapes), and the comparison kernel: it finds a planted
 * wrong element and an unwritten (NaN) one, and reports the lowest wrong index. Skipped (77) with no GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "prefill_cublaslt.h"
#include "prefill_gemm_ref.h"
#include "prefix_cases.h"
#include "prefix_ref.h"
#include "sparse_ref.h"
#include "test_util.h"

typedef struct shape {
  int t, n, k, batch;
} shape;

typedef struct bufs {
  shape s;
  size_t ni, nw, no;
  uint16_t *in, *w, *d_in, *d_w, *d_out;
  float *d_ref, *d_mag;
  double *want, *mag;
} bufs;

static void bufs_free(bufs *b) {
  free(b->in);
  free(b->w);
  free(b->want);
  free(b->mag);
  cudaFree(b->d_in);
  cudaFree(b->d_w);
  cudaFree(b->d_out);
  cudaFree(b->d_ref);
  cudaFree(b->d_mag);
}

/* Random inputs on the host and the device, and the CPU's answer in double. 0 ok. */
static int bufs_new(bufs *b, shape s, uint64_t seed) {
  memset(b, 0, sizeof *b);
  b->s = s;
  b->ni = (size_t)s.batch * s.t * s.k;
  b->nw = (size_t)s.batch * s.n * s.k;
  b->no = (size_t)s.batch * s.t * s.n;
  b->in = malloc(b->ni * 2);
  b->w = malloc(b->nw * 2);
  b->want = malloc(b->no * sizeof *b->want);
  b->mag = malloc(b->no * sizeof *b->mag);
  if (!b->in || !b->w || !b->want || !b->mag) return -1;
  for (size_t i = 0; i < b->ni; i++) b->in[i] = km_float_to_bf16(km_test_rng_normal(&seed));
  for (size_t i = 0; i < b->nw; i++) b->w[i] = km_float_to_bf16(0.02f * km_test_rng_normal(&seed));
  for (int e = 0; e < s.batch; e++)
    km_prefix_ref_gemm(b->in + (size_t)e * s.t * s.k, b->w + (size_t)e * s.n * s.k, b->want + (size_t)e * s.t * s.n,
                       b->mag + (size_t)e * s.t * s.n, s.t, s.n, s.k);
  if (cudaMalloc((void **)&b->d_in, b->ni * 2) || cudaMalloc((void **)&b->d_w, b->nw * 2) ||
      cudaMalloc((void **)&b->d_out, b->no * 2) || cudaMalloc((void **)&b->d_ref, b->no * 4) ||
      cudaMalloc((void **)&b->d_mag, b->no * 4))
    return -1;
  if (cudaMemcpy(b->d_in, b->in, b->ni * 2, cudaMemcpyHostToDevice) ||
      cudaMemcpy(b->d_w, b->w, b->nw * 2, cudaMemcpyHostToDevice))
    return -1;
  return 0;
}

static void test_reference(void) {
  const shape shapes[] = {{1, 1, 1, 1}, {48, 80, 136, 2}, {130, 70, 33, 3}, {64, 64, 16, 1}, {200, 129, 300, 1}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    bufs b;
    const shape s = shapes[i];
    KM_EXPECT(bufs_new(&b, s, 100 + i) == 0);
    KM_EXPECT(km_gemm_ref_bf16(b.d_in, b.d_w, b.d_ref, b.d_mag, s.t, s.n, s.k, s.batch, 0) == cudaSuccess);
    float *ref = malloc(b.no * 4), *mag = malloc(b.no * 4);
    KM_EXPECT(cudaMemcpy(ref, b.d_ref, b.no * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    KM_EXPECT(cudaMemcpy(mag, b.d_mag, b.no * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    size_t bad = 0;
    for (size_t j = 0; j < b.no; j++)
      bad += !(fabs(ref[j] - b.want[j]) <= KM_PREFILL_REF_SHARE(s.k) * b.mag[j]) ||
             !(fabs(mag[j] - b.mag[j]) <= KM_PREFILL_REF_SHARE(s.k) * b.mag[j]);
    KM_EXPECT_MSG(bad == 0, "reference GEMM %dx%dx%d batch %d: %zu of %zu wrong", s.t, s.n, s.k, s.batch, bad, b.no);
    free(ref);
    free(mag);
    bufs_free(&b);
  }
  KM_EXPECT(km_gemm_ref_bf16(NULL, NULL, NULL, NULL, 0, 1, 1, 1, 0) == cudaErrorInvalidValue);
}

static void test_cublaslt(void) {
  void *ws = NULL;
  km_lt *lt = NULL;
  char err[256];
  KM_EXPECT_CUDA(cudaMalloc(&ws, KM_LT_WORKSPACE_BYTES));
  KM_EXPECT_MSG(km_lt_create(ws, &lt, err, sizeof err) == 0, "%s", err);
  const shape shapes[] = {{48, 80, 136, 2}, {256, 512, 1024, 1}, {32, 1536, 2048, 4}, {512, 6144, 4096, 1}};
  for (size_t i = 0; lt && i < sizeof shapes / sizeof shapes[0]; i++) {
    bufs b;
    const shape s = shapes[i];
    km_lt_gemm *g = NULL;
    KM_EXPECT(bufs_new(&b, s, 200 + i) == 0);
    KM_EXPECT_MSG(km_lt_gemm_plan(lt, s.t, s.n, s.k, s.batch, &g, err, sizeof err) == 0, "%s", err);
    if (g) {
      cudaMemset(b.d_out, 0xFF, b.no * 2); /* NaN: an element not written fails */
      KM_EXPECT(km_lt_gemm_run(g, b.d_in, b.d_w, b.d_out, 0) == 0);
      uint16_t *out = malloc(b.no * 2);
      KM_EXPECT(cudaMemcpy(out, b.d_out, b.no * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
      size_t bad = 0;
      for (size_t j = 0; j < b.no; j++)
        bad += !(fabs(km_bf16_to_float(out[j]) - b.want[j]) <=
                 KM_PREFILL_OUT_REL * fabs(b.want[j]) + KM_PREFILL_OUT_SHARE * b.mag[j]);
      KM_EXPECT_MSG(bad == 0, "cuBLASLt %dx%dx%d batch %d: %zu of %zu wrong", s.t, s.n, s.k, s.batch, bad, b.no);
      free(out);
      km_lt_gemm_free(g);
    }
    bufs_free(&b);
  }
  km_lt_destroy(lt);
  cudaFree(ws);
}

static void test_compare(void) {
  bufs b;
  const shape s = {64, 96, 128, 1};
  KM_EXPECT(bufs_new(&b, s, 300) == 0);
  unsigned long long *d_counts = NULL, counts[2];
  KM_EXPECT_CUDA(cudaMalloc((void **)&d_counts, sizeof counts));
  KM_EXPECT(km_gemm_ref_bf16(b.d_in, b.d_w, b.d_ref, b.d_mag, s.t, s.n, s.k, 1, 0) == cudaSuccess);
  /* the CPU's answer rounded to bf16: within tolerance everywhere */
  uint16_t *out = malloc(b.no * 2);
  for (size_t j = 0; j < b.no; j++) out[j] = km_float_to_bf16((float)b.want[j]);
  KM_EXPECT(cudaMemcpy(b.d_out, out, b.no * 2, cudaMemcpyHostToDevice) == cudaSuccess);
  KM_EXPECT(km_gemm_compare_bf16(b.d_out, b.d_ref, b.d_mag, b.no, KM_PREFILL_OUT_REL, KM_PREFILL_OUT_SHARE,
                                 &d_counts[0], &d_counts[1], 0) == cudaSuccess);
  KM_EXPECT(cudaMemcpy(counts, d_counts, sizeof counts, cudaMemcpyDeviceToHost) == cudaSuccess);
  KM_EXPECT(counts[0] == 0 && counts[1] == b.no);
  /* one element off by a whole magnitude, one never written (NaN) */
  out[4000] = km_float_to_bf16((float)b.want[4000] + (float)b.mag[4000]);
  out[17] = 0xFFFF;
  KM_EXPECT(cudaMemcpy(b.d_out, out, b.no * 2, cudaMemcpyHostToDevice) == cudaSuccess);
  KM_EXPECT(km_gemm_compare_bf16(b.d_out, b.d_ref, b.d_mag, b.no, KM_PREFILL_OUT_REL, KM_PREFILL_OUT_SHARE,
                                 &d_counts[0], &d_counts[1], 0) == cudaSuccess);
  KM_EXPECT(cudaMemcpy(counts, d_counts, sizeof counts, cudaMemcpyDeviceToHost) == cudaSuccess);
  KM_EXPECT_MSG(counts[0] == 2 && counts[1] == 17, "compare found %llu wrong, first %llu", counts[0], counts[1]);
  free(out);
  cudaFree(d_counts);
  bufs_free(&b);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  test_reference();
  test_cublaslt();
  test_compare();
  return km_test_finish("gpu_prefix_gemm");
}
