/* Paged family (primitive 1): gather a batch of sequences through their block tables, NHD and HND,
 * bf16 and fp8, random and sequential tables, block size 1..256; the read-only variant; and what a
 * user would do instead (one cudaMemcpyAsync per block, cub::DeviceMemcpy::Batched, one contiguous copy). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "check.h"
#include "fill.h"
#include "kernel_path.h"
#include "micro_tables.h"
#include "paged_baselines.h"
#include "paged_gather.h"
#include "paged_ref.h"
#include "verify.h"
#include "verify_paged.h"

/* Tokens per sequence: "a few thousand", a multiple of every block size swept (256 -> 16 blocks). */
#define PAGED_SEQ_TOKENS 4096
/* Sequences of the timed output also checked on the CPU: two cross a sequence boundary and keep the
 * per-block copy-back small (the whole output, >= 8x L2, is checked on the device against a trusted
 * gather). */
#define PAGED_SLICE_SEQS 2
/* Bytes after each output that must come back untouched. */
#define PAGED_GUARD_BYTES 4096
#define PAGED_GUARD_VALUE 0xA5
#define PAGED_POISON_VALUE 0xFF

typedef enum paged_op {
  PAGED_GATHER = 0,
  PAGED_GATHER_BULK,    /* the same gather by sm_90 bulk copies through shared memory */
  PAGED_READ,           /* read-only, per-sequence sums */
  PAGED_MEMCPY_PER_BLOCK,
  PAGED_CUB_BATCHED,
  PAGED_CONTIGUOUS,     /* one cudaMemcpyAsync of the same bytes (sequential table: the pool's prefix) */
  PAGED_OP_COUNT
} paged_op;

typedef struct paged_params {
  paged_op op;
  km_paged_layout layout;
  int block_size;
  int head_dim;   /* 0: the --model's head_dim */
  int kv_heads;   /* 0: the --model's num_kv_heads */
  int elem_bytes; /* 2: bf16, 1: fp8 */
  int random;     /* 1: each table a random permutation of pool blocks, 0: sequential */
} paged_params;

typedef struct paged_run {
  paged_op op;
  int sms;         /* the bulk gather's grid: kCtasPerSm CTAs per SM */
  km_paged_geom g; /* the timed instance */
  unsigned char *pool, *out;
  int32_t *table;      /* device */
  int32_t *host_table; /* the same, on the host (per-block copies read it, verification stages by it) */
  uint32_t *sums;      /* read variant */
  void *temp;          /* cub */
  size_t temp_bytes;
  const void **d_src;
  void **d_dst;
  size_t *d_sizes;
} paged_run;

/* ---------------------------------------------------------------- running one instance */

static cudaError_t enqueue(void *arg, int rep, cudaStream_t s) {
  const paged_run *r = arg;
  const km_paged_geom *g = &r->g;
  switch (r->op) {
    case PAGED_GATHER: return km_paged_gather(g, r->pool, r->table, r->out, s);
    case PAGED_GATHER_BULK: return km_paged_gather_bulk(g, r->pool, r->table, r->out, r->sms, s);
    case PAGED_READ: return km_paged_read_sum(g, r->pool, r->table, r->sums, s);
    case PAGED_MEMCPY_PER_BLOCK: return km_paged_memcpy_per_block(g, r->pool, r->host_table, r->out, s);
    case PAGED_CUB_BATCHED:
      return km_paged_cub_batched(r->temp, r->temp_bytes, (const void *const *)r->d_src, (void *const *)r->d_dst,
                                  r->d_sizes, km_paged_piece_count(g), s);
    default: return km_paged_contiguous_copy(r->out, r->pool, km_paged_output_bytes(g), s);
  }
}

/* ---------------------------------------------------------------- setup */

static km_paged_geom geom_for(km_bench *b, const paged_params *p) {
  const km_model *m = km_bench_model(b);
  km_paged_geom g;
  memset(&g, 0, sizeof g);
  g.layout = p->layout;
  g.block_size = p->block_size;
  g.kv_heads = p->kv_heads ? p->kv_heads : m->num_kv_heads;
  g.head_dim = p->head_dim ? p->head_dim : m->head_dim;
  g.elem_bytes = p->elem_bytes;
  g.blocks_per_seq = PAGED_SEQ_TOKENS / p->block_size;
  /* enough sequences that the pool (every block gathered once) is >= 8x L2 */
  uint64_t seq_bytes = (uint64_t)g.blocks_per_seq * km_paged_block_bytes(&g);
  uint64_t seqs = seq_bytes ? (km_bench_big_bytes(b) + seq_bytes - 1) / seq_bytes : 1;
  g.num_seqs = (int)(seqs < PAGED_SLICE_SEQS ? PAGED_SLICE_SEQS : seqs);
  g.num_blocks = (int64_t)g.num_seqs * g.blocks_per_seq;
  return g;
}

/* Device arrays of per-piece pointers and sizes for cub, built on the host, plus cub's temp storage:
 * all outside the timed region. */
static void setup_cub(km_bench *b, paged_run *r) {
  cudaStream_t s = km_bench_stream(b);
  size_t n = km_paged_piece_count(&r->g);
  const void **src = km_bench_host_alloc(b, n * sizeof *src);
  void **dst = km_bench_host_alloc(b, n * sizeof *dst);
  size_t *sizes = km_bench_host_alloc(b, n * sizeof *sizes);
  r->d_src = km_bench_device_alloc(b, n * sizeof *src);
  r->d_dst = km_bench_device_alloc(b, n * sizeof *dst);
  r->d_sizes = km_bench_device_alloc(b, n * sizeof *sizes);
  KM_RETURN_IF_STOPPED(b);
  KM_CUDA(b, km_paged_cub_temp_bytes(n, &r->temp_bytes));
  r->temp = km_bench_device_alloc(b, r->temp_bytes);
  KM_RETURN_IF_STOPPED(b);
  km_paged_batch_args(&r->g, r->pool, r->host_table, r->out, src, dst, sizes);
  KM_CUDA(b, cudaMemcpyAsync(r->d_src, src, n * sizeof *src, cudaMemcpyHostToDevice, s));
  KM_CUDA(b, cudaMemcpyAsync(r->d_dst, dst, n * sizeof *dst, cudaMemcpyHostToDevice, s));
  KM_CUDA(b, cudaMemcpyAsync(r->d_sizes, sizes, n * sizeof *sizes, cudaMemcpyHostToDevice, s));
  KM_CUDA(b, cudaStreamSynchronize(s)); /* the host arrays are pageable and freed with the case */
}

static void setup(km_bench *b, const paged_params *p, paged_run *r) {
  cudaStream_t s = km_bench_stream(b);
  km_paged_plan plan;
  r->op = p->op;
  r->g = geom_for(b, p);
  if (km_paged_plan_make(&r->g, 0, KM_PAGED_GATHER_UNROLL, 1, &plan) != cudaSuccess) {
    km_bench_skip(b, "shape h%d d%d x %d B: a (block, head) piece is not a multiple of 4 bytes", r->g.kv_heads,
                  r->g.head_dim, r->g.elem_bytes);
    return;
  }
  if (p->op == PAGED_GATHER_BULK) {
    if (!km_paged_bulk_shape_ok(&r->g)) {
      km_bench_skip(b, "bulk copies need 16-byte pieces that divide or are divided by 16 KiB; these are %llu bytes",
                    (unsigned long long)km_paged_piece_bytes(&r->g));
      return;
    }
    km_kernel_image img;
    cudaError_t e = km_paged_bulk_setup(&img);
    if (!km_kernel_path_usable(b, e, &img, KM_BULK_MIN_ARCH, "bulk copies")) return;
    r->sms = km_bench_device(b)->multiProcessorCount;
  }
  size_t entries = (size_t)r->g.num_seqs * (size_t)r->g.blocks_per_seq;
  size_t pool_bytes = (size_t)r->g.num_blocks * km_paged_block_bytes(&r->g);
  r->pool = km_bench_device_alloc(b, pool_bytes);
  r->out = km_bench_device_alloc(b, (size_t)km_paged_output_bytes(&r->g) + PAGED_GUARD_BYTES);
  r->table = km_bench_device_alloc(b, entries * sizeof *r->table);
  r->host_table = km_bench_host_alloc(b, entries * sizeof *r->host_table);
  if (p->op == PAGED_READ) r->sums = km_bench_device_alloc(b, (size_t)r->g.num_seqs * 4 + PAGED_GUARD_BYTES);
  KM_RETURN_IF_STOPPED(b);
  KM_CUDA(b, km_fill_random_bits(r->pool, pool_bytes, km_bench_seed(b), s));
  if (!p->random)
    km_paged_table_sequential(r->host_table, entries);
  else if (km_paged_table_random(r->host_table, entries, r->g.num_blocks, km_bench_seed(b)) != 0) {
    km_bench_skip(b, "no host memory for a %zu-entry block table", entries);
    return;
  }
  KM_CUDA(b, cudaMemcpyAsync(r->table, r->host_table, entries * sizeof *r->table, cudaMemcpyHostToDevice, s));
  KM_CUDA(b, cudaStreamSynchronize(s));
  if (p->op == PAGED_CUB_BATCHED) setup_cub(b, r);
}

/* ---------------------------------------------------------------- verification
 * The timed instance itself (same geometry, table and buffers) runs once on a poisoned output. Its whole
 * output is compared on the device with a trusted one-thread-per-word gather (kernels/verify_paged.h);
 * the first PAGED_SLICE_SEQS sequences are compared on the CPU with the CPU reference over blocks
 * staged by per-block copies; the guard bytes after the output must be untouched. */

/* Copy the source blocks of the first `entries` table entries to the host, in table order, one
 * cudaMemcpyAsync each (the copy engine's indirection, independent of the kernel's). */
static unsigned char *stage_blocks(km_bench *b, const paged_run *r, size_t entries) {
  cudaStream_t s = km_bench_stream(b);
  size_t bb = (size_t)km_paged_block_bytes(&r->g);
  unsigned char *staged = km_bench_pinned_alloc(b, entries * bb);
  if (!staged) return NULL;
  for (size_t j = 0; j < entries; ++j) {
    cudaError_t e = cudaMemcpyAsync(staged + j * bb, r->pool + (size_t)r->host_table[j] * bb, bb,
                                    cudaMemcpyDeviceToHost, s);
    if (e != cudaSuccess) {
      km_bench_fail(b, "staging block %zu failed: %s", j, cudaGetErrorString(e));
      return NULL;
    }
  }
  return staged;
}

/* The CPU reference of the slice: the staged blocks form a small pool that an identity table gathers
 * in the timed table's order. want gets the slice's sums (read variant) or gathered bytes. */
static void *slice_reference(km_bench *b, const paged_run *r, km_paged_geom *slice) {
  *slice = r->g;
  slice->num_seqs = PAGED_SLICE_SEQS;
  const size_t entries = (size_t)slice->num_seqs * (size_t)slice->blocks_per_seq;
  unsigned char *staged = stage_blocks(b, r, entries);
  int32_t *ident = km_bench_host_alloc(b, entries * sizeof *ident);
  const size_t want_bytes = r->op == PAGED_READ ? (size_t)slice->num_seqs * 4 : (size_t)km_paged_output_bytes(slice);
  void *want = km_bench_host_alloc(b, want_bytes);
  if (!staged || !ident || !want || cudaStreamSynchronize(km_bench_stream(b)) != cudaSuccess) return NULL;
  km_paged_geom sg = *slice;
  sg.num_blocks = (int64_t)entries;
  km_paged_table_sequential(ident, entries);
  if (r->op == PAGED_READ)
    km_paged_ref_sums(&sg, staged, ident, want);
  else
    km_paged_ref_gather(&sg, staged, ident, want);
  return want;
}

static void verify(km_bench *b, paged_run *r) {
  cudaStream_t s = km_bench_stream(b);
  const int read = r->op == PAGED_READ;
  const size_t n = read ? (size_t)r->g.num_seqs * 4 : (size_t)km_paged_output_bytes(&r->g);
  unsigned char *out = read ? (unsigned char *)r->sums : r->out;
  unsigned char *trusted = km_bench_device_alloc(b, n);
  unsigned char *guard = km_bench_host_alloc(b, PAGED_GUARD_BYTES);
  km_check c;
  if (!trusted || !guard || km_check_init(&c, b) != 0) return;
  /* the read adds into its sums, so they start at zero; a gather's output starts poisoned */
  KM_CUDA(b, cudaMemsetAsync(out, read ? 0 : PAGED_POISON_VALUE, n, s));
  KM_CUDA(b, cudaMemsetAsync(out + n, PAGED_GUARD_VALUE, PAGED_GUARD_BYTES, s));
  KM_CUDA(b, enqueue(r, 0, s));
  if (read)
    KM_CUDA(b, km_verify_paged_sums(&r->g, r->pool, r->table, (uint32_t *)trusted, s));
  else
    KM_CUDA(b, km_verify_paged_gather(&r->g, r->pool, r->table, trusted, s));
  km_check_device(&c, read ? "sums" : "output word", out, trusted, n / 4, 4, 1, 0);
  km_paged_geom slice;
  void *want = slice_reference(b, r, &slice);
  const size_t slice_bytes = read ? (size_t)slice.num_seqs * 4 : (size_t)km_paged_output_bytes(&slice);
  unsigned char *got = km_bench_host_alloc(b, slice_bytes);
  if (!want || !got) return;
  KM_CUDA(b, cudaMemcpyAsync(got, out, slice_bytes, cudaMemcpyDeviceToHost, s));
  KM_CUDA(b, cudaMemcpyAsync(guard, out + n, PAGED_GUARD_BYTES, cudaMemcpyDeviceToHost, s));
  KM_CUDA(b, cudaStreamSynchronize(s));
  km_check_host(&c, read ? "CPU slice sums" : "CPU slice word", got, want, slice_bytes / 4, 4, 1, 0);
  km_check_add(&c, km_verify_filled(b, guard, PAGED_GUARD_BYTES, PAGED_GUARD_VALUE), PAGED_GUARD_BYTES);
  km_check_done(&c, read ? "every sequence's sum bitwise against a trusted kernel, the first 2 against the CPU, "
                           "guard untouched"
                         : "whole output bitwise against a trusted gather, the first 2 sequences against the CPU, "
                           "guard untouched");
}

/* ---------------------------------------------------------------- the case */

static km_work work_of(const paged_run *r) {
  km_work w;
  memset(&w, 0, sizeof w);
  double gathered = (double)km_paged_output_bytes(&r->g);
  double table = (double)r->g.num_seqs * r->g.blocks_per_seq * sizeof(int32_t);
  double pieces = (double)km_paged_piece_count(&r->g);
  w.bytes_read = gathered;
  w.bytes_written = gathered;
  if (r->op == PAGED_GATHER || r->op == PAGED_GATHER_BULK) w.bytes_read += table;
  if (r->op == PAGED_READ) {
    w.bytes_read += table;
    w.bytes_written = (double)r->g.num_seqs * sizeof(uint32_t);
  }
  /* cub reads a source pointer, a destination pointer and a size per piece */
  if (r->op == PAGED_CUB_BATCHED) w.bytes_read += pieces * (2 * sizeof(void *) + sizeof(size_t));
  w.tokens = (double)km_paged_tokens(&r->g);
  w.layers = 1; /* one layer's K (or V) cache: ns per token per layer */
  return w;
}

static void run_paged(km_bench *b, const void *params) {
  const paged_params *p = params;
  paged_run r;
  memset(&r, 0, sizeof r);
  setup(b, p, &r);
  KM_RETURN_IF_STOPPED(b);
  if (km_bench_verify_enabled(b)) verify(b, &r);
  KM_RETURN_IF_STOPPED(b);
  km_work w = work_of(&r);
  km_bench_measure(b, enqueue, &r, &w);
  km_bench_label(b, "h%d d%d %s, %d seqs x %d tokens, pool %.0f MiB in %.0f-byte pieces", r.g.kv_heads,
                 r.g.head_dim, r.g.elem_bytes == 1 ? "fp8" : "bf16", r.g.num_seqs, PAGED_SEQ_TOKENS,
                 (double)km_paged_output_bytes(&r.g) / 1048576.0, (double)km_paged_piece_bytes(&r.g));
}

/* ---------------------------------------------------------------- the sweep */

#define NHD KM_PAGED_NHD
#define HND KM_PAGED_HND
#define P(name, op, layout, bs, d, h, eb, rnd) static const paged_params name = {op, layout, bs, d, h, eb, rnd}

/* gather, d128 h8 bf16 random: the full block-size sweep in both layouts */
P(g_nhd_bs1, PAGED_GATHER, NHD, 1, 128, 8, 2, 1);
P(g_nhd_bs8, PAGED_GATHER, NHD, 8, 128, 8, 2, 1);
P(g_nhd_bs16, PAGED_GATHER, NHD, 16, 128, 8, 2, 1);
P(g_nhd_bs32, PAGED_GATHER, NHD, 32, 128, 8, 2, 1);
P(g_nhd_bs64, PAGED_GATHER, NHD, 64, 128, 8, 2, 1);
P(g_nhd_bs128, PAGED_GATHER, NHD, 128, 128, 8, 2, 1);
P(g_nhd_bs256, PAGED_GATHER, NHD, 256, 128, 8, 2, 1);
P(g_model, PAGED_GATHER, NHD, 16, 0, 0, 2, 1);
P(g_hnd_bs1, PAGED_GATHER, HND, 1, 128, 8, 2, 1);
P(g_hnd_bs8, PAGED_GATHER, HND, 8, 128, 8, 2, 1);
P(g_hnd_bs16, PAGED_GATHER, HND, 16, 128, 8, 2, 1);
P(g_hnd_bs32, PAGED_GATHER, HND, 32, 128, 8, 2, 1);
P(g_hnd_bs64, PAGED_GATHER, HND, 64, 128, 8, 2, 1);
P(g_hnd_bs128, PAGED_GATHER, HND, 128, 128, 8, 2, 1);
P(g_hnd_bs256, PAGED_GATHER, HND, 256, 128, 8, 2, 1);
/* sequential tables */
P(gs_nhd_bs1, PAGED_GATHER, NHD, 1, 128, 8, 2, 0);
P(gs_nhd_bs16, PAGED_GATHER, NHD, 16, 128, 8, 2, 0);
P(gs_nhd_bs256, PAGED_GATHER, NHD, 256, 128, 8, 2, 0);
P(gs_hnd_bs1, PAGED_GATHER, HND, 1, 128, 8, 2, 0);
P(gs_hnd_bs16, PAGED_GATHER, HND, 16, 128, 8, 2, 0);
/* head_dim and heads at block size 16, and the smallest HND pieces */
P(g_nhd_d64, PAGED_GATHER, NHD, 16, 64, 8, 2, 1);
P(g_nhd_d256, PAGED_GATHER, NHD, 16, 256, 8, 2, 1);
P(g_nhd_h1, PAGED_GATHER, NHD, 16, 128, 1, 2, 1);
P(g_nhd_h32, PAGED_GATHER, NHD, 16, 128, 32, 2, 1);
P(g_hnd_bs1_d64_fp8, PAGED_GATHER, HND, 1, 64, 8, 1, 1);
P(g_hnd_bs1_d256, PAGED_GATHER, HND, 1, 256, 8, 2, 1);
/* fp8 */
P(g_nhd_bs1_fp8, PAGED_GATHER, NHD, 1, 128, 8, 1, 1);
P(g_nhd_bs16_fp8, PAGED_GATHER, NHD, 16, 128, 8, 1, 1);
P(g_hnd_bs1_fp8, PAGED_GATHER, HND, 1, 128, 8, 1, 1);
P(g_hnd_bs16_fp8, PAGED_GATHER, HND, 16, 128, 8, 1, 1);
/* the same gathers by bulk copies: 2 KiB (NHD bs1), 256-byte (HND bs1), 32 KiB, 4 KiB and 512 KiB pieces */
P(gb_nhd_bs16, PAGED_GATHER_BULK, NHD, 16, 128, 8, 2, 1);
P(gb_nhd_bs256, PAGED_GATHER_BULK, NHD, 256, 128, 8, 2, 1);
P(gb_hnd_bs16, PAGED_GATHER_BULK, HND, 16, 128, 8, 2, 1);
P(gb_nhd_bs1, PAGED_GATHER_BULK, NHD, 1, 128, 8, 2, 1);
P(gb_hnd_bs1, PAGED_GATHER_BULK, HND, 1, 128, 8, 2, 1);
/* read-only */
P(r_nhd_bs1, PAGED_READ, NHD, 1, 128, 8, 2, 1);
P(r_nhd_bs16, PAGED_READ, NHD, 16, 128, 8, 2, 1);
P(r_nhd_bs256, PAGED_READ, NHD, 256, 128, 8, 2, 1);
P(rs_nhd_bs16, PAGED_READ, NHD, 16, 128, 8, 2, 0);
P(r_hnd_bs1, PAGED_READ, HND, 1, 128, 8, 2, 1);
P(r_hnd_bs16, PAGED_READ, HND, 16, 128, 8, 2, 1);
/* baselines */
P(b_contig, PAGED_CONTIGUOUS, NHD, 16, 128, 8, 2, 0);
P(b_memcpy_nhd_bs16, PAGED_MEMCPY_PER_BLOCK, NHD, 16, 128, 8, 2, 1);
P(b_memcpy_nhd_bs256, PAGED_MEMCPY_PER_BLOCK, NHD, 256, 128, 8, 2, 1);
P(b_memcpy_hnd_bs256, PAGED_MEMCPY_PER_BLOCK, HND, 256, 128, 8, 2, 1);
P(b_cub_nhd_bs1, PAGED_CUB_BATCHED, NHD, 1, 128, 8, 2, 1);
P(b_cub_nhd_bs16, PAGED_CUB_BATCHED, NHD, 16, 128, 8, 2, 1);
P(b_cub_nhd_bs256, PAGED_CUB_BATCHED, NHD, 256, 128, 8, 2, 1);
P(b_cub_hnd_bs1, PAGED_CUB_BATCHED, HND, 1, 128, 8, 2, 1);
P(b_cub_hnd_bs16, PAGED_CUB_BATCHED, HND, 16, 128, 8, 2, 1);

#define Q KM_CASE_QUICK
#define BL KM_CASE_BASELINE
#define T "paged"
#define GATHER_SUM "block-table gather of a batch of 4096-token sequences to contiguous memory"
#define READ_SUM "read-only walk of the same blocks, one sum per sequence (what attention reads)"
#define MEMCPY_NHD16 "baseline/paged/memcpy_per_block/nhd/bs16/d128/h8/bf16/random"
#define MEMCPY_NHD256 "baseline/paged/memcpy_per_block/nhd/bs256/d128/h8/bf16/random"
#define MEMCPY_HND256 "baseline/paged/memcpy_per_block/hnd/bs256/d128/h8/bf16/random"
#define CUB_NHD1 "baseline/paged/cub_batched/nhd/bs1/d128/h8/bf16/random"
#define CUB_NHD16 "baseline/paged/cub_batched/nhd/bs16/d128/h8/bf16/random"
#define CUB_HND1 "baseline/paged/cub_batched/hnd/bs1/d128/h8/bf16/random"
#define CUB_HND16 "baseline/paged/cub_batched/hnd/bs16/d128/h8/bf16/random"
#define SM_COPY "roofline/sm_copy"
#define SM_READ "roofline/sm_read"

static const km_case paged_cases[] = {
    {"paged/gather/nhd/bs1/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_bs1, 0, CUB_NHD1},
    {"paged/gather/nhd/bs8/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_bs8, 0, SM_COPY},
    {"paged/gather/nhd/bs16/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_bs16, Q, MEMCPY_NHD16},
    {"paged/gather/nhd/bs32/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_bs32, 0, SM_COPY},
    {"paged/gather/nhd/bs64/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_bs64, 0, SM_COPY},
    {"paged/gather/nhd/bs128/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_bs128, 0, SM_COPY},
    {"paged/gather/nhd/bs256/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_bs256, 0, MEMCPY_NHD256},
    {"paged/gather/nhd/bs16/model/bf16/random", T, "the --model shape's (KV heads x head_dim) gather, block 16",
     run_paged, &g_model, Q | KM_CASE_REPRESENTATIVE, MEMCPY_NHD16},
    {"paged/gather/hnd/bs1/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_hnd_bs1, Q, CUB_HND1},
    {"paged/gather/hnd/bs8/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_hnd_bs8, 0, SM_COPY},
    {"paged/gather/hnd/bs16/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_hnd_bs16, 0, CUB_HND16},
    {"paged/gather/hnd/bs32/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_hnd_bs32, 0, SM_COPY},
    {"paged/gather/hnd/bs64/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_hnd_bs64, 0, SM_COPY},
    {"paged/gather/hnd/bs128/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_hnd_bs128, 0, SM_COPY},
    {"paged/gather/hnd/bs256/d128/h8/bf16/random", T, GATHER_SUM, run_paged, &g_hnd_bs256, 0, MEMCPY_HND256},
    {"paged/gather/nhd/bs1/d128/h8/bf16/sequential", T, GATHER_SUM, run_paged, &gs_nhd_bs1, 0, SM_COPY},
    {"paged/gather/nhd/bs16/d128/h8/bf16/sequential", T, GATHER_SUM, run_paged, &gs_nhd_bs16, 0, SM_COPY},
    {"paged/gather/nhd/bs256/d128/h8/bf16/sequential", T, GATHER_SUM, run_paged, &gs_nhd_bs256, 0, SM_COPY},
    {"paged/gather/hnd/bs1/d128/h8/bf16/sequential", T, GATHER_SUM, run_paged, &gs_hnd_bs1, 0, SM_COPY},
    {"paged/gather/hnd/bs16/d128/h8/bf16/sequential", T, GATHER_SUM, run_paged, &gs_hnd_bs16, 0, SM_COPY},
    {"paged/gather/nhd/bs16/d64/h8/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_d64, 0, SM_COPY},
    {"paged/gather/nhd/bs16/d256/h8/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_d256, 0, SM_COPY},
    {"paged/gather/nhd/bs16/d128/h1/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_h1, 0, SM_COPY},
    {"paged/gather/nhd/bs16/d128/h32/bf16/random", T, GATHER_SUM, run_paged, &g_nhd_h32, 0, SM_COPY},
    {"paged/gather/hnd/bs1/d64/h8/fp8/random", T, GATHER_SUM " (64-byte pieces)", run_paged, &g_hnd_bs1_d64_fp8, 0,
     SM_COPY},
    {"paged/gather/hnd/bs1/d256/h8/bf16/random", T, GATHER_SUM, run_paged, &g_hnd_bs1_d256, 0, SM_COPY},
    {"paged/gather/nhd/bs1/d128/h8/fp8/random", T, GATHER_SUM, run_paged, &g_nhd_bs1_fp8, 0, SM_COPY},
    {"paged/gather/nhd/bs16/d128/h8/fp8/random", T, GATHER_SUM, run_paged, &g_nhd_bs16_fp8, 0, SM_COPY},
    {"paged/gather/hnd/bs1/d128/h8/fp8/random", T, GATHER_SUM, run_paged, &g_hnd_bs1_fp8, 0, SM_COPY},
    {"paged/gather/hnd/bs16/d128/h8/fp8/random", T, GATHER_SUM, run_paged, &g_hnd_bs16_fp8, 0, SM_COPY},
    {"paged/gather_bulk/nhd/bs1/d128/h8/bf16/random", T, GATHER_SUM " (sm_90 bulk copies)", run_paged, &gb_nhd_bs1, 0,
     SM_COPY},
    {"paged/gather_bulk/nhd/bs16/d128/h8/bf16/random", T, GATHER_SUM " (sm_90 bulk copies)", run_paged, &gb_nhd_bs16, 0,
     SM_COPY},
    {"paged/gather_bulk/nhd/bs256/d128/h8/bf16/random", T, GATHER_SUM " (sm_90 bulk copies)", run_paged,
     &gb_nhd_bs256, 0, SM_COPY},
    {"paged/gather_bulk/hnd/bs1/d128/h8/bf16/random", T, GATHER_SUM " (sm_90 bulk copies, 256-byte pieces)",
     run_paged, &gb_hnd_bs1, 0, SM_COPY},
    {"paged/gather_bulk/hnd/bs16/d128/h8/bf16/random", T, GATHER_SUM " (sm_90 bulk copies)", run_paged, &gb_hnd_bs16, 0,
     SM_COPY},
    {"paged/read/nhd/bs1/d128/h8/bf16/random", T, READ_SUM, run_paged, &r_nhd_bs1, 0, SM_READ},
    {"paged/read/nhd/bs16/d128/h8/bf16/random", T, READ_SUM, run_paged, &r_nhd_bs16, Q, SM_READ},
    {"paged/read/nhd/bs256/d128/h8/bf16/random", T, READ_SUM, run_paged, &r_nhd_bs256, 0, SM_READ},
    {"paged/read/nhd/bs16/d128/h8/bf16/sequential", T, READ_SUM, run_paged, &rs_nhd_bs16, 0, SM_READ},
    {"paged/read/hnd/bs1/d128/h8/bf16/random", T, READ_SUM, run_paged, &r_hnd_bs1, 0, SM_READ},
    {"paged/read/hnd/bs16/d128/h8/bf16/random", T, READ_SUM, run_paged, &r_hnd_bs16, 0, SM_READ},
    {"baseline/paged/contiguous/nhd/bs16/d128/h8/bf16", T, "one cudaMemcpyAsync of the gathered byte count",
     run_paged, &b_contig, Q | BL, NULL},
    {MEMCPY_NHD16, T, "one cudaMemcpyAsync per block (vLLM copy_blocks style)", run_paged, &b_memcpy_nhd_bs16, BL,
     NULL},
    {MEMCPY_NHD256, T, "one cudaMemcpyAsync per block (vLLM copy_blocks style)", run_paged, &b_memcpy_nhd_bs256, BL,
     NULL},
    {MEMCPY_HND256, T, "one cudaMemcpyAsync per (block, head) piece", run_paged, &b_memcpy_hnd_bs256, BL, NULL},
    {CUB_NHD1, T, "cub::DeviceMemcpy::Batched, one buffer per block", run_paged, &b_cub_nhd_bs1, BL, NULL},
    {CUB_NHD16, T, "cub::DeviceMemcpy::Batched, one buffer per block", run_paged, &b_cub_nhd_bs16, Q | BL, NULL},
    {"baseline/paged/cub_batched/nhd/bs256/d128/h8/bf16/random", T, "cub::DeviceMemcpy::Batched, one buffer per block",
     run_paged, &b_cub_nhd_bs256, BL, NULL},
    {CUB_HND1, T, "cub::DeviceMemcpy::Batched, one buffer per (block, head) piece", run_paged, &b_cub_hnd_bs1, BL,
     NULL},
    {CUB_HND16, T, "cub::DeviceMemcpy::Batched, one buffer per (block, head) piece", run_paged, &b_cub_hnd_bs16, BL,
     NULL},
};

const km_case_table km_paged_table = {paged_cases, sizeof paged_cases / sizeof paged_cases[0]};
