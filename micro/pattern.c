/* Position-hash test patterns and their checks (see pattern.h). */
#include "pattern.h"

uint64_t km_pattern_word(uint64_t seed, uint64_t i) {
  uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void km_pattern_fill(void *p, size_t bytes, uint64_t seed, uint64_t first_word) {
  uint64_t *w = p;
  for (size_t i = 0; i < bytes / 8; i++) w[i] = km_pattern_word(seed, first_word + i);
}

size_t km_pattern_check(km_bench *b, const void *p, size_t bytes, uint64_t seed, uint64_t first_word,
                        const char *what) {
  const uint64_t *w = p;
  size_t bad = 0;
  for (size_t i = 0; i < bytes / 8; i++) {
    uint64_t want = km_pattern_word(seed, first_word + i);
    if (w[i] == want) continue;
    bad++;
    if (b)
      km_bench_mismatch(b, "%s byte %zu: got %016llx want %016llx", what, i * 8, (unsigned long long)w[i],
                        (unsigned long long)want);
  }
  return bad;
}

size_t km_poison_check(km_bench *b, const void *p, size_t bytes, const char *what) {
  const uint64_t *w = p;
  size_t bad = 0;
  for (size_t i = 0; i < bytes / 8; i++) {
    if (w[i] == ~0ull) continue;
    bad++;
    if (b)
      km_bench_mismatch(b, "%s byte %zu: got %016llx, expected untouched 0xff", what, i * 8,
                        (unsigned long long)w[i]);
  }
  return bad;
}

void km_pattern_permutation(int32_t *perm, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) perm[i] = (int32_t)i;
  for (size_t i = n; i-- > 1;) {
    size_t j = (size_t)(km_pattern_word(seed, i) % (i + 1));
    int32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}
