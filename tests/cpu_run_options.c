/* What a run is sized and allowed to be, without a GPU: the start-up ceiling's buffer size (8x L2, at least
 * 1 GiB, at most a quarter of free memory, whole 64 KiB pieces) and --smoke's refusal of every flag that
 * would publish or time its rows. */
#include <stdio.h>
#include <string.h>

#include "ceiling.h"
#include "cli.h"
#include "run_ctx.h"
#include "test_util.h"

static int parse(const char *const *args, int n, km_options *o, char *err, size_t errlen) {
  char *argv[16] = {"micro"};
  for (int i = 0; i < n && i < 15; i++) argv[i + 1] = (char *)args[i];
  km_options_default(o);
  return km_options_parse(n + 1, argv, o, err, errlen);
}

int main(void) {
  const size_t mib = (size_t)1 << 20, gib = (size_t)1 << 30;
  KM_EXPECT(km_ceiling_bytes(60 * mib, 140 * gib) == 8 * gib);     /* H200: 8 x 60 MiB < 8 GiB */
  KM_EXPECT(km_ceiling_bytes(2 * gib, 140 * gib) == 16 * gib);     /* a larger L2: 8x it */
  KM_EXPECT(km_ceiling_bytes(60 * mib, 16 * gib) == 4 * gib);      /* a 16 GiB card: a quarter of it */
  KM_EXPECT(km_ceiling_bytes(60 * mib, 2 * gib) == 512 * mib);     /* a quarter of free memory */
  size_t odd = km_ceiling_bytes(60 * mib, 3 * gib + 12345);
  KM_EXPECT(odd % (64 * 1024) == 0 && odd <= (3 * gib + 12345) / 4 && odd > (3 * gib) / 4 - 64 * 1024);
  KM_EXPECT(KM_SMOKE_BYTES < 60 * mib && KM_SMOKE_BYTES % (64 * 1024) == 0);

  km_options o;
  char err[256];
  const char *ok[] = {"--smoke", "--quick", "--filter", "^quant/"};
  KM_EXPECT(parse(ok, 4, &o, err, sizeof err) == 0 && o.smoke && o.quick);
  const char *listing[] = {"--smoke", "--list", "--json", "x.json"};
  KM_EXPECT_MSG(parse(listing, 4, &o, err, sizeof err) == 0, "--list with --smoke: %s", err);
  static const struct {
    const char *args[3];
    int n;
    const char *named;
  } conflicts[] = {
      {{"--smoke", "--json", "r.json"}, 3, "--json"},    {{"--smoke", "--params", "p.json"}, 3, "--params"},
      {{"--smoke", "--table", "bytes"}, 3, "--table"},   {{"--min-time", "1", "--smoke"}, 3, "--min-time"},
      {{"--smoke", "--repetitions", "2"}, 3, "--repetitions"}, {{"--no-verify", "--smoke"}, 2, "--no-verify"},
  };
  for (size_t i = 0; i < sizeof conflicts / sizeof conflicts[0]; i++) {
    err[0] = '\0';
    int rc = parse(conflicts[i].args, conflicts[i].n, &o, err, sizeof err);
    char want[64];
    snprintf(want, sizeof want, "--smoke cannot go with %s", conflicts[i].named);
    KM_EXPECT_MSG(rc == KM_EXIT_USAGE && strstr(err, want) != NULL, "case %zu: rc %d, '%s'", i, rc, err);
  }
  const char *one_rep[] = {"--smoke", "--repetitions", "1"};
  KM_EXPECT(parse(one_rep, 3, &o, err, sizeof err) == 0);
  return km_test_finish("cpu_run_options");
}
