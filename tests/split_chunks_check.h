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

#endif
