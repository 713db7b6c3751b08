/* GPU test of choosing Hopper-only paths by what the binary holds. For each bulk-copy kernel: the image
 * the runtime reports (PTX and SASS architecture) is the one this build's CMAKE_CUDA_ARCHITECTURES gives
 * for this device by CUDA's loading rules; the path is taken exactly when that image is sm_90 code; where
 * it is taken it copies bitwise, where it is not a launch fails instead of running an empty body, and
 * micro skips the case with the reason instead of failing its check. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

#include "context.h"
#include "kernel_image.h"
#include "kernel_path.h"
#include "paged_gather.h"
#include "paged_ref.h"
#include "results.h"
#include "roofline.h"
#include "test_util.h"

/* What CUDA loads for a kernel built for `archs` (CMake's list, ',' separated) on a device of `dev`: the
 * best machine code of the device's major version and at most its minor (sm_NNa only on NN itself), or
 * else the newest PTX at most the device, JIT-compiled to the device's own code. Returns 1 with *want
 * filled, 0 when nothing runs (no image), -1 for a list this oracle does not read (all, native). */
static int predict(const char *archs, int dev, km_kernel_image *want) {
  int best_sass = 0, best_ptx = 0;
  const char *p = archs;
  while (*p) {
    size_t n = strcspn(p, ",");
    char entry[32];
    snprintf(entry, sizeof entry, "%.*s", (int)(n < sizeof entry ? n : sizeof entry - 1), p);
    p += n + (p[n] == ',');
    char *end = NULL;
    long arch = strtol(entry, &end, 10);
    if (end == entry || arch <= 0) return -1;
    int specific = *end == 'a'; /* arch-specific (sm_90a): this major.minor only */
    while (isalpha((unsigned char)*end)) end++;
    int real = strcmp(end, "-virtual") != 0, virt = strcmp(end, "-real") != 0;
    if (*end && strcmp(end, "-real") != 0 && strcmp(end, "-virtual") != 0) return -1;
    int fits = specific ? arch == dev : arch <= dev;
    if (real && fits && arch / 10 == dev / 10 && arch > best_sass) best_sass = (int)arch;
    if (virt && fits && arch > best_ptx) best_ptx = (int)arch;
  }
  want->device_arch = dev;
  if (best_sass) {
    want->sass_arch = want->ptx_arch = best_sass;
    return 1;
  }
  want->ptx_arch = best_ptx;
  want->sass_arch = best_ptx ? dev : 0;
  return best_ptx ? 1 : 0;
}

static void check_predict_rules(void) {
  km_kernel_image w;
  KM_EXPECT(predict("80-real,90", 90, &w) == 1 && w.sass_arch == 90 && w.ptx_arch == 90);
  KM_EXPECT(predict("80-real,90", 80, &w) == 1 && w.sass_arch == 80 && w.ptx_arch == 80);
  KM_EXPECT(predict("80-real,90", 100, &w) == 1 && w.sass_arch == 100 && w.ptx_arch == 90);
  KM_EXPECT(predict("80-virtual", 90, &w) == 1 && w.sass_arch == 90 && w.ptx_arch == 80);
  KM_EXPECT(predict("80,90", 86, &w) == 1 && w.sass_arch == 80 && w.ptx_arch == 80);
  KM_EXPECT(predict("90-real", 80, &w) == 0);
  KM_EXPECT(predict("90a-real", 90, &w) == 1 && w.sass_arch == 90);
  KM_EXPECT(predict("native", 90, &w) == -1);
}

static const char *build_archs(char *buf, size_t len) {
  cJSON *b = km_context_build_json();
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(b, "cuda_architectures");
  snprintf(buf, len, "%s", cJSON_IsString(a) ? a->valuestring : "");
  cJSON_Delete(b);
  return buf;
}

/* The image and the path decision against the oracle; returns whether the path runs. */
static int check_image(const char *what, cudaError_t setup, const km_kernel_image *img, const char *archs) {
  km_kernel_image want;
  int predicted = predict(archs, img->device_arch, &want);
  char reason[256];
  int usable = km_kernel_path_reason(setup, img, KM_BULK_MIN_ARCH, "bulk copies", reason, sizeof reason);
  fprintf(stderr, "%s: device %d, image compute_%d -> sm_%d (%s); built for %s: %s\n", what, img->device_arch,
          img->ptx_arch, img->sass_arch, cudaGetErrorString(setup), archs, reason);
  KM_EXPECT_MSG(usable >= 0, "%s: %s", what, reason);
  KM_EXPECT_MSG(usable == km_kernel_image_runs(img, KM_BULK_MIN_ARCH), "%s: the reason and the decision disagree",
                what);
  if (predicted < 0) {
    fprintf(stderr, "%s: CMAKE_CUDA_ARCHITECTURES '%s' is not a list of numbers: image not predicted\n", what, archs);
    return usable == 1;
  }
  KM_EXPECT_MSG((setup == cudaSuccess) == (predicted == 1), "%s: setup %s, predicted %s", what,
                cudaGetErrorString(setup), predicted ? "an image" : "none");
  if (predicted == 1 && setup == cudaSuccess) {
    KM_EXPECT_MSG(img->ptx_arch == want.ptx_arch && img->sass_arch == want.sass_arch,
                  "%s: runtime reports compute_%d -> sm_%d, the architecture list gives compute_%d -> sm_%d", what,
                  img->ptx_arch, img->sass_arch, want.ptx_arch, want.sass_arch);
    int want_usable = want.device_arch >= KM_BULK_MIN_ARCH && want.ptx_arch >= KM_BULK_MIN_ARCH;
    KM_EXPECT_MSG(usable == want_usable, "%s: path taken %d, the architecture list gives %d", what, usable,
                  want_usable);
  }
  return usable == 1;
}

/* A bulk launch's outcome (e, after the launch and a synchronize): where the path runs it succeeded and
 * d_out holds want bitwise; where it does not, the launch failed instead of running an empty body. */
static void expect_outcome(const char *what, int usable, cudaError_t e, const void *d_out, const unsigned char *want,
                           unsigned char *got, size_t n) {
  if (!usable) {
    KM_EXPECT_MSG(e != cudaSuccess, "%s without sm_90 code launched: its body would be empty", what);
    cudaGetLastError();
    return;
  }
  KM_EXPECT_MSG(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
  KM_EXPECT(cudaMemcpy(got, d_out, n, cudaMemcpyDeviceToHost) == cudaSuccess);
  KM_EXPECT_MSG(memcmp(got, want, n) == 0, "%s: output differs from the reference", what);
}

/* The bulk copy where it runs: 1 MiB + one stage of random bytes, bitwise; elsewhere its launch must fail. */
static void check_copy_bulk(int usable, int sms) {
  const size_t n = (1u << 20) + (16u << 10);
  unsigned char *src = NULL, *dst = NULL, *want = malloc(n), *got = malloc(n);
  KM_EXPECT(want && got);
  if (!want || !got || cudaMalloc((void **)&src, n) != cudaSuccess || cudaMalloc((void **)&dst, n) != cudaSuccess) {
    fprintf(stderr, "copy bulk: setup failed\n");
    km_test_failures++;
  } else {
    uint64_t st = 0x5eed;
    for (size_t i = 0; i < n; i++) want[i] = (unsigned char)km_test_rng_next(&st);
    KM_EXPECT(cudaMemcpy(src, want, n, cudaMemcpyHostToDevice) == cudaSuccess);
    KM_EXPECT(cudaMemset(dst, 0xFF, n) == cudaSuccess);
    cudaError_t e = km_copy_vec16_shape(dst, src, n, sms, KM_COPY_BULK, 0);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    expect_outcome("bulk copy", usable, e, dst, want, got, n);
  }
  cudaFree(src);
  cudaFree(dst);
  free(want);
  free(got);
}

/* The bulk gather where it runs, against the CPU reference: 32 KiB pieces (two 16 KiB parts each, NHD
 * bs16) and 256-byte pieces (HND bs1). */
static void check_gather_bulk(int usable, int sms, km_paged_layout layout, int block_size) {
  km_paged_geom g = {layout, block_size, 8, 128, 2, 0, 3, 0};
  g.blocks_per_seq = 256 / block_size;
  g.num_blocks = (int64_t)g.num_seqs * g.blocks_per_seq + 5;
  size_t pool_bytes = (size_t)g.num_blocks * km_paged_block_bytes(&g), out_bytes = km_paged_output_bytes(&g);
  size_t entries = (size_t)g.num_seqs * g.blocks_per_seq;
  unsigned char *pool = malloc(pool_bytes), *want = malloc(out_bytes), *got = malloc(out_bytes);
  int32_t *table = malloc(entries * sizeof *table), *d_table = NULL;
  unsigned char *d_pool = NULL, *d_out = NULL;
  KM_EXPECT(km_paged_bulk_shape_ok(&g));
  if (!pool || !want || !got || !table || km_paged_table_random(table, entries, g.num_blocks, 7) != 0 ||
      cudaMalloc((void **)&d_pool, pool_bytes) != cudaSuccess || cudaMalloc((void **)&d_out, out_bytes) != cudaSuccess ||
      cudaMalloc((void **)&d_table, entries * sizeof *table) != cudaSuccess) {
    fprintf(stderr, "gather bulk: setup failed\n");
    km_test_failures++;
  } else {
    uint64_t st = 0xb10c;
    for (size_t i = 0; i < pool_bytes; i++) pool[i] = (unsigned char)km_test_rng_next(&st);
    km_paged_ref_gather(&g, pool, table, want);
    KM_EXPECT(cudaMemcpy(d_pool, pool, pool_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    KM_EXPECT(cudaMemcpy(d_table, table, entries * sizeof *table, cudaMemcpyHostToDevice) == cudaSuccess);
    KM_EXPECT(cudaMemset(d_out, 0xFF, out_bytes) == cudaSuccess);
    cudaError_t e = km_paged_gather_bulk(&g, d_pool, d_table, d_out, sms, 0);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    char what[64];
    snprintf(what, sizeof what, "bulk gather (%s bs%d)", layout == KM_PAGED_NHD ? "NHD" : "HND", block_size);
    expect_outcome(what, usable, e, d_out, want, got, out_bytes);
  }
  cudaFree(d_pool);
  cudaFree(d_out);
  cudaFree(d_table);
  free(pool);
  free(want);
  free(got);
  free(table);
}

/* micro itself on the bulk cases (full size: --smoke refuses --json): each runs verified where its path is
 * taken, and is a skipped row naming the reason where it is not; never an error. */
static void check_micro_rows(int copy_usable, int gather_usable) {
  const char *micro = getenv("KM_MICRO");
  if (!micro || !*micro) {
    fprintf(stderr, "KM_MICRO not set: micro's rows not checked\n");
    km_test_failures++;
    return;
  }
  char dir[] = "/tmp/km_kernel_paths_XXXXXX", path[256], cmd[1024];
  if (!mkdtemp(dir)) {
    km_test_failures++;
    return;
  }
  snprintf(path, sizeof path, "%s/bulk.json", dir);
  snprintf(cmd, sizeof cmd, "'%s' --filter 'bulk' --json '%s' >'%s/out.txt' 2>&1", micro, path, dir);
  int rc = system(cmd);
  KM_EXPECT_MSG(rc == 0, "%s exited with status %d (see %s/out.txt)", cmd, rc, dir);
  char err[256];
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  long len = 0;
  if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (text = calloc((size_t)len + 1, 1)) && fread(text, 1, (size_t)len, f) != (size_t)len) {
    free(text);
    text = NULL;
  }
  if (f) fclose(f);
  cJSON *doc = text ? cJSON_Parse(text) : NULL;
  km_results rows = {0};
  KM_EXPECT_MSG(doc && km_results_from_json(cJSON_GetObjectItemCaseSensitive(doc, "benchmarks"), &rows, err,
                                            sizeof err) == 0,
                "%s: not a result file", path);
  size_t seen = 0;
  for (size_t i = 0; i < rows.count; i++) {
    const km_result *r = &rows.rows[i];
    int usable = strncmp(r->name, "roofline/", 9) == 0 ? copy_usable : gather_usable;
    seen++;
    KM_EXPECT_MSG(!r->error, "%s: error row: %s", r->name, r->message);
    if (usable)
      KM_EXPECT_MSG(!r->skipped && km_result_counter(r, "verified") == 1.0, "%s: not verified (%s)", r->name,
                    r->message);
    else
      KM_EXPECT_MSG(r->skipped && strstr(r->message, "bulk copies"), "%s: expected a skip naming bulk copies, got '%s'",
                    r->name, r->message);
  }
  KM_EXPECT_MSG(seen >= 2, "only %zu bulk rows in %s", seen, path);
  km_results_free(&rows);
  cJSON_Delete(doc);
  free(text);
  if (km_test_failures == 0) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
}

int main(void) {
  check_predict_rules();
  if (!km_test_have_gpu()) return km_test_failures ? km_test_finish("gpu_kernel_paths") : KM_TEST_SKIP;
  char archs[128];
  build_archs(archs, sizeof archs);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  km_kernel_image copy_img, gather_img;
  cudaError_t copy_setup = km_copy_bulk_setup(&copy_img), gather_setup = km_paged_bulk_setup(&gather_img);
  int copy_usable = check_image("roofline copy_bulk", copy_setup, &copy_img, archs);
  int gather_usable = check_image("paged gather_bulk", gather_setup, &gather_img, archs);
  KM_EXPECT_MSG(copy_usable == gather_usable, "the two bulk kernels of one build disagree");
  check_copy_bulk(copy_usable, sms);
  check_gather_bulk(gather_usable, sms, KM_PAGED_NHD, 16);
  check_gather_bulk(gather_usable, sms, KM_PAGED_HND, 1);
  check_micro_rows(copy_usable, gather_usable);
  return km_test_finish("gpu_kernel_paths");
}
