/* The timer and the start-up ceilings on a GPU: a 4 KiB fill is replayed from a CUDA graph and every
 * sample lasts >= the 200 us minimum; the copy, read and write ceilings are measured (the read and write
 * kernels checked first) on buffers >= 8x L2; a copy timed again exactly as the roofline/d2d_memcpy row
 * is lands within 1% of the copy ceiling (the recorded run's target is 0.5%; a test allows run-to-run
 * spread); no ceiling exceeds the theoretical peak; NVML, where the driver has it, names the GPU by UUID. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "ceiling.h"
#include "fill.h"
#include "micro_tables.h"
#include "nvml.h"
#include "run_ctx.h"
#include "shares.h"
#include "stats.h"
#include "test_util.h"
#include "timer.h"

typedef struct fill_job {
  void *p;
  size_t bytes;
} fill_job;

static cudaError_t enqueue_fill(void *arg, int rep, cudaStream_t s) {
  fill_job *j = arg;
  return km_fill_random_bits(j->p, j->bytes, (uint64_t)rep, s);
}

typedef struct copy_job {
  void *dst;
  const void *src;
  size_t bytes;
} copy_job;

static cudaError_t enqueue_copy(void *arg, int rep, cudaStream_t s) {
  copy_job *j = arg;
  return cudaMemcpyAsync(j->dst, j->src, j->bytes, cudaMemcpyDeviceToDevice, s);
}

static double median_of_samples(km_timer *t, int n) {
  double x[64];
  char err[256];
  for (int i = 0; i < n; i++)
    if (km_timer_sample(t, &x[i], err, sizeof err) != 0) {
      fprintf(stderr, "%s\n", err);
      return NAN;
    }
  return km_median_of(x, (size_t)n);
}

static void test_graph_replay(cudaStream_t s) {
  fill_job j = {NULL, 4096};
  KM_EXPECT_CUDA(cudaMalloc(&j.p, j.bytes));
  km_timer t;
  char err[256];
  KM_EXPECT(km_timer_init(&t, s, enqueue_fill, &j, KM_MIN_SAMPLE_SECONDS, err, sizeof err) == 0);
  double per = median_of_samples(&t, KM_SAMPLES_DEFAULT);
  KM_EXPECT_MSG(km_timer_graph(&t), "a %.2f us launch was not graph-replayed", per * 1e6);
  KM_EXPECT_MSG(t.shortest_sample_s >= KM_MIN_SAMPLE_SECONDS, "a sample of %.1f us (batch %d)",
                t.shortest_sample_s * 1e6, t.batch);
  printf("4 KiB fill: %.3f us per launch, batch %d, graph %d, shortest sample %.1f us\n", per * 1e6, t.batch,
         km_timer_graph(&t), t.shortest_sample_s * 1e6);
  km_timer_destroy(&t);
  cudaFree(j.p);
}

static void test_ceilings(cudaStream_t s, const struct cudaDeviceProp *prop, double peak) {
  size_t free_b = 0, total_b = 0;
  KM_EXPECT_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const km_ceiling_set *sets[] = {km_roofline_table.ceilings};
  km_ceiling_plan plan = {s, km_ceiling_bytes((size_t)prop->l2CacheSize, free_b), prop->multiProcessorCount,
                          KM_SAMPLES_DEFAULT, KM_MIN_SAMPLE_SECONDS, 42, sets, 1, 1, 0.0, peak};
  km_ceiling_report rep;
  char err[512];
  KM_EXPECT_MSG(km_ceilings_measure(&plan, &rep, err, sizeof err) == 0, "%s", err);
  printf("ceilings: copy %.0f, read %.0f, write %.0f GB/s; host %.2f / %.2f GB/s; peak %.0f\n", rep.c.copy_gbps,
         rep.c.read_gbps, rep.c.write_gbps, rep.c.h2d_gbps, rep.c.d2h_gbps, peak);
  KM_EXPECT(rep.c.copy_gbps > 0 && rep.c.read_gbps > 0 && rep.c.write_gbps > 0 && rep.c.h2d_gbps > 0);
  KM_EXPECT(peak <= 0 || (rep.c.copy_gbps < peak && rep.c.read_gbps < peak && rep.c.write_gbps < peak));
  /* the memcpy row: same buffers' size, same timer, same samples */
  copy_job j = {NULL, NULL, plan.bytes};
  void *src = NULL;
  KM_EXPECT_CUDA(cudaMalloc(&src, plan.bytes));
  KM_EXPECT_CUDA(cudaMalloc(&j.dst, plan.bytes));
  j.src = src;
  KM_EXPECT_CUDA(km_fill_random_bits(src, plan.bytes, 7, s));
  km_timer t;
  KM_EXPECT(km_timer_init(&t, s, enqueue_copy, &j, KM_MIN_SAMPLE_SECONDS, err, sizeof err) == 0);
  double sec = median_of_samples(&t, KM_SAMPLES_DEFAULT);
  km_timer_destroy(&t);
  double share = km_share_of_class(&rep.c, (double)plan.bytes, (double)plan.bytes, sec);
  printf("memcpy row: %.1f%% of the copy ceiling\n", share);
  KM_EXPECT_MSG(fabs(share - 100.0) <= 1.0, "the memcpy row reads %.2f%% of the copy ceiling", share);
  cudaFree(src);
  cudaFree(j.dst);
}

static void test_nvml(const char *bus) {
  km_nvml *n = km_nvml_open(NULL, bus);
  if (!km_nvml_available(n)) {
    printf("note: NVML unavailable here (%s): identity not checked\n", km_nvml_reason(n));
  } else {
    km_gpu_identity id;
    km_gpu_state st;
    KM_EXPECT(km_nvml_identity(n, &id) == 0 && strncmp(id.uuid, "GPU-", 4) == 0 && id.driver[0] != 'u');
    km_nvml_sample(n, &st);
    KM_EXPECT(st.valid && st.sm_mhz > 0 && st.mem_mhz > 0);
    printf("nvml: %s, driver %s, %u/%u MHz, %u C\n", id.uuid, id.driver, st.sm_mhz, st.mem_mhz, st.temp_c);
  }
  km_nvml_close(n);
}

int main(void) {
  if (!km_test_have_gpu()) return KM_TEST_SKIP;
  struct cudaDeviceProp prop;
  cudaStream_t s;
  char bus[32];
  int mem_khz = 0, bus_bits = 0;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaDeviceGetPCIBusId(bus, sizeof bus, 0) != cudaSuccess) {
    fprintf(stderr, "device setup failed\n");
    return 1;
  }
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  test_graph_replay(s);
  test_ceilings(s, &prop, 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9);
  test_nvml(bus);
  cudaStreamDestroy(s);
  return km_test_finish("gpu_timing");
}
