// Paged gather by bulk copies: the output is contiguous in piece order (seq, head, block within seq),
// so a 16 KiB stage is whole pieces (or one part of a large piece) and leaves with one bulk store; each
// lane of the CTA's single warp locates and issues the bulk load of one piece.
#include "paged_gather.h"

#include "bulk_copy.cuh"

namespace {

struct PagedParts {
  const unsigned char *pool;
  const int32_t *table;
  uint64_t block_bytes;
  uint32_t piece_bytes, part_bytes, parts_per_piece;
  uint32_t blocks_per_seq, pieces_per_block;
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= KM_BULK_MIN_ARCH * 10  // only the bulk-copy path locates parts
  __device__ const void *operator()(uint64_t part) const {
    const uint64_t piece = part / parts_per_piece;
    const uint32_t sub = (uint32_t)(part - piece * parts_per_piece);
    const uint64_t seq_head = piece / blocks_per_seq;
    const uint32_t blk_in_seq = (uint32_t)(piece - seq_head * blocks_per_seq);
    const uint64_t seq = seq_head / pieces_per_block;
    const uint32_t head = (uint32_t)(seq_head - seq * pieces_per_block);
    const int32_t blk = table[seq * blocks_per_seq + blk_in_seq];
    return pool + (uint64_t)(int64_t)blk * block_bytes + (uint64_t)head * piece_bytes + (uint64_t)sub * part_bytes;
  }
#endif
};

__global__ void __launch_bounds__(32) gather_bulk(unsigned char *out, uint64_t total, uint32_t stage, PagedParts parts) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= KM_BULK_MIN_ARCH * 10
  km_bulk::pipeline(out, total, parts.part_bytes, stage, parts);
#endif
}

int make_parts(const km_paged_geom *g, PagedParts *p, uint32_t *stage) {
  const uint64_t piece = km_paged_piece_bytes(g);
  if (piece == 0 || piece % 16 != 0 || km_paged_block_bytes(g) > UINT32_MAX) return 0;
  uint32_t part = piece <= km_bulk::kStageBytes ? (uint32_t)piece : km_bulk::kStageBytes;
  if (piece % part != 0) return 0;
  *stage = km_bulk::stage_for(part);
  if (*stage == 0) return 0;
  p->block_bytes = km_paged_block_bytes(g);
  p->piece_bytes = (uint32_t)piece;
  p->part_bytes = part;
  p->parts_per_piece = (uint32_t)(piece / part);
  p->blocks_per_seq = (uint32_t)g->blocks_per_seq;
  p->pieces_per_block = g->layout == KM_PAGED_HND ? (uint32_t)g->kv_heads : 1u;
  return 1;
}

}  // namespace

extern "C" int km_paged_bulk_shape_ok(const km_paged_geom *g) {
  PagedParts p;
  uint32_t stage = 0;
  return g && make_parts(g, &p, &stage);
}

extern "C" cudaError_t km_paged_bulk_setup(km_kernel_image *img) { return km_bulk::setup(gather_bulk, img); }

extern "C" cudaError_t km_paged_gather_bulk(const km_paged_geom *g, const void *pool, const int32_t *table, void *out,
                                            int sms, cudaStream_t stream) {
  PagedParts p;
  uint32_t stage = 0;
  if (!g || !make_parts(g, &p, &stage) || ((uintptr_t)pool | (uintptr_t)out) % 16 != 0) return cudaErrorInvalidValue;
  p.pool = static_cast<const unsigned char *>(pool);
  p.table = table;
  gather_bulk<<<(sms > 0 ? sms : 1) * km_bulk::kCtasPerSm, 32, km_bulk::kSmemBytes, stream>>>(
      static_cast<unsigned char *>(out), km_paged_output_bytes(g), stage, p);
  return cudaGetLastError();
}
