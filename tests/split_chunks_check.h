/* Shared by the planner tests of attn/ and attn/mla: the split-KV chunk list's invariants. */
#ifndef KM_TESTS_SPLIT_CHUNKS_CHECK_H
#define KM_TESTS_SPLIT_CHUNKS_CHECK_H

#include "split_chunks.h"
#include "test_util.h"

/* Sequence i's chunks cover its tiles [first, last) exactly once, in order, none empty or longer than
 * max_tiles. Returns its chunk count. */
static int check_seq_chunks(const km_split_chunks *ch, int i, int first, int last, int max_tiles) {
  int expect = first;
  KM_EXPECT(ch->seq_chunks[i] >= 1);
  for (int c = ch->seq_chunk0[i]; c < ch->seq_chunk0[i] + ch->seq_chunks[i]; ++c) {
    KM_EXPECT_MSG(ch->chunk_seq[c] == i && ch->chunk_begin[c] == expect && ch->chunk_end[c] > ch->chunk_begin[c],
                  "seq %d chunk %d: [%d, %d) expected from %d", i, c, ch->chunk_begin[c], ch->chunk_end[c], expect);
    KM_EXPECT(ch->chunk_end[c] - ch->chunk_begin[c] <= max_tiles);
    expect = ch->chunk_end[c];
  }
  KM_EXPECT_MSG(expect == last, "seq %d covers to %d, expected %d", i, expect, last);
  return ch->seq_chunks[i];
}

/* The list's uniform fields are set exactly when every sequence has the same first tile, tile count and chunk
 * count (tiles x chunks < 2^31), and then km_split_chunks_uniform_range gives every chunk as the arrays do. */
static void check_uniform_chunks(const km_split_chunks *ch) {
  int same = ch->batch > 0, f0 = 0, n0 = 0, nc0 = 0;
  for (int b = 0; b < ch->batch; ++b) {
    const int c0 = ch->seq_chunk0[b], nc = ch->seq_chunks[b];
    const int f = ch->chunk_begin[c0], n = ch->chunk_end[c0 + nc - 1] - f;
    if (b == 0) f0 = f, n0 = n, nc0 = nc;
    same = same && f == f0 && n == n0 && nc == nc0;
  }
  same = same && (long long)n0 * nc0 < (1LL << 31);
  KM_EXPECT_MSG((ch->uniform != 0) == same, "uniform %d, sequences alike %d", ch->uniform, same);
  if (!ch->uniform) return;
  KM_EXPECT(ch->uniform == nc0 && ch->uniform_first == f0 && ch->uniform_tiles == n0);
  for (int k = 0; k < ch->num_chunks; ++k) {
    int seq, begin, end;
    km_split_chunks_uniform_range(ch->uniform, ch->uniform_first, ch->uniform_tiles, k, &seq, &begin, &end);
    KM_EXPECT_MSG(seq == ch->chunk_seq[k] && begin == ch->chunk_begin[k] && end == ch->chunk_end[k],
                  "chunk %d: computed seq %d [%d, %d), listed seq %d [%d, %d)", k, seq, begin, end, ch->chunk_seq[k],
                  ch->chunk_begin[k], ch->chunk_end[k]);
  }
}

#endif
