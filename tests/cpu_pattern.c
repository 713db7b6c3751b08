/* CPU tests of the block-copy test patterns (micro/pattern.c), which the offload and p2p families' checks
 * rest on: words are distinct per position and seed, a check counts exactly the words changed (one flipped
 * bit, a word from the wrong place, a partial trailing word ignored), the poison check counts exactly the
 * words written over, and the permutation is one on odd and tiny sizes. */
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "test_util.h"

int main(void) {
  /* distinct words: a copy to the wrong place or from the wrong seed must show */
  KM_EXPECT(km_pattern_word(1, 0) != km_pattern_word(1, 1));
  KM_EXPECT(km_pattern_word(1, 7) != km_pattern_word(2, 7));
  KM_EXPECT(km_pattern_word(3, 5) == km_pattern_word(3, 5));

  enum { WORDS = 1001 };
  const size_t bytes = WORDS * 8;
  uint64_t *p = malloc(bytes + 8);
  if (!p) return 1;
  km_pattern_fill(p, bytes, 42, 100);
  KM_EXPECT(km_pattern_check(NULL, p, bytes, 42, 100, "p") == 0);
  KM_EXPECT(km_pattern_check(NULL, p, bytes, 42, 101, "p") == WORDS); /* off by one word: every word */
  KM_EXPECT(km_pattern_check(NULL, p, bytes, 43, 100, "p") == WORDS); /* another seed */
  p[0] ^= 1ull;                                                       /* one bit of the first word */
  p[WORDS - 1] = km_pattern_word(42, 100);                            /* the last word from the first place */
  KM_EXPECT(km_pattern_check(NULL, p, bytes, 42, 100, "p") == 2);
  /* a trailing partial word is not a word: bytes 8 * WORDS + 4 checks WORDS words */
  KM_EXPECT(km_pattern_check(NULL, p, bytes + 4, 42, 100, "p") == 2);

  memset(p, 0xFF, bytes);
  KM_EXPECT(km_poison_check(NULL, p, bytes, "poison") == 0);
  ((unsigned char *)p)[8 * 17 + 3] = 0xFE; /* one byte of word 17 */
  p[WORDS - 1] = 0;
  KM_EXPECT(km_poison_check(NULL, p, bytes, "poison") == 2);
  free(p);

  /* permutations of 1, 2, an odd and a larger size: every index once, and (for the larger) not the identity */
  const size_t sizes[] = {1, 2, 7, 1000};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const size_t n = sizes[k];
    int32_t *perm = malloc(n * sizeof *perm);
    char *seen = calloc(n, 1);
    if (!perm || !seen) return 1;
    km_pattern_permutation(perm, n, 9);
    size_t fixed = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
      if (perm[i] < 0 || (size_t)perm[i] >= n || seen[perm[i]]++) bad++;
      fixed += (size_t)perm[i] == i;
    }
    KM_EXPECT_MSG(bad == 0, "n %zu: %zu indices out of range or repeated", n, bad);
    if (n == 1000) KM_EXPECT_MSG(fixed < 20, "n 1000: %zu fixed points", fixed);
    free(perm);
    free(seen);
  }
  return km_test_finish("cpu_pattern");
}
