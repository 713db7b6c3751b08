/* CPU test of the console lines: each run's line (ok, noisy, unverified, skipped, error, aggregates,
 * names and messages longer than the line) fits 160 columns with its fields in place; colour codes
 * appear only when asked; the colour flag is read as Google Benchmark reads it; and the real reporter,
 * run over C cases that need no GPU, prints plain lines when colour is off and coloured ones when on. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "console_line.h"
#include "gbench_shim.h"
#include "test_util.h"

static const char *const kCounterNames[] = {"median_us", "GB/s", "pct_of_ceiling", "verified", "noisy", "cv"};

static gb_run make_run(const char *name, const double *values, const char *label) {
  gb_run r;
  memset(&r, 0, sizeof r);
  r.name = name;
  r.aggregate_name = "";
  r.aggregate_unit = "time";
  r.time_unit = "us";
  r.real_time = values ? values[0] : 0;
  r.message = "";
  r.label = label;
  r.ncounters = values ? sizeof kCounterNames / sizeof kCounterNames[0] : 0;
  r.counter_names = kCounterNames;
  r.counter_values = values;
  return r;
}

/* The line of r, checked for width, colour codes and the phrases it must hold. */
static void expect_line(const gb_run *r, int color, const char *const *phrases) {
  char buf[4 * KM_CONSOLE_WIDTH];
  size_t w = km_console_run_line(r, color, buf, sizeof buf);
  KM_EXPECT_MSG(w <= KM_CONSOLE_WIDTH, "%zu columns: %s", w, buf);
  KM_EXPECT_MSG(w == km_console_visible_width(buf), "reported %zu, counted %zu", w, km_console_visible_width(buf));
  KM_EXPECT_MSG((strchr(buf, '\033') != NULL) == (color != 0), "colour %d: %s", color, buf);
  KM_EXPECT_MSG(strlen(buf) > 0 && buf[strlen(buf) - 1] == '\n' && !strchr(buf, '\n')[1], "not one line: %s", buf);
  for (size_t i = 0; phrases[i]; i++) KM_EXPECT_MSG(strstr(buf, phrases[i]) != NULL, "'%s' lacks '%s'", buf, phrases[i]);
}

static void check_lines(void) {
  const double ok[] = {530.2, 4050.5, 95.1, 1, 0, 0.003}, noisy[] = {25.0, 681.1, 16.0, 1, 1, 0.061},
               unverified[] = {181.0, 4215.1, 98.9, 0, 0, 0.007};
  char long_label[400], long_name[200];
  memset(long_label, 'x', sizeof long_label - 1);
  long_label[sizeof long_label - 1] = '\0';
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  for (int color = 0; color <= 1; color++) {
    gb_run r = make_run("roofline/sm_copy", ok, "1024 MiB");
    expect_line(&r, color, (const char *const[]){"roofline/sm_copy", "530.2 us", "4050.5", "95.1%", "ok; 1024 MiB", NULL});
    r = make_run("sparse/topk/r512/p8192/k128", noisy, "");
    expect_line(&r, color, (const char *const[]){"25.00 us", "noisy (CV 6.1%)", NULL});
    r = make_run("quant/fp8_e4m3/quantize/per_token_head/d128", unverified, "");
    expect_line(&r, color, (const char *const[]){"unverified", NULL});
    r = make_run("paged/gather/nhd/bs16/d128/h8/bf16/random", ok, long_label);
    expect_line(&r, color, (const char *const[]){"ok; xxx", "...", NULL});
    r = make_run(long_name, ok, "label");
    expect_line(&r, color, (const char *const[]){"nnnn", NULL});
    r = make_run("paged/gather_bulk/nhd/bs16/d128/h8/bf16/random", NULL, "");
    r.skipped = 1;
    r.message = "this binary runs bulk copies from compute_80 code (as sm_90), where their sm_90 body is compiled out "
                "(add 90 to CMAKE_CUDA_ARCHITECTURES)";
    expect_line(&r, color, (const char *const[]){"SKIPPED: this binary runs bulk copies", "...", NULL});
    r = make_run("quant/uniform_3bit/quantize/g32/d128", NULL, "");
    r.error = 1;
    r.message = "bitwise: 12 of 4096 values differ";
    expect_line(&r, color, (const char *const[]){"ERROR: bitwise: 12 of 4096", NULL});
    r = make_run("roofline/d2d_memcpy", ok, "");
    r.is_aggregate = 1;
    r.aggregate_name = "median";
    expect_line(&r, color, (const char *const[]){"roofline/d2d_memcpy_median", "530.2 us", NULL});
    r.aggregate_name = "cv";
    r.aggregate_unit = "percentage";
    r.real_time = 0.0042;
    expect_line(&r, color, (const char *const[]){"roofline/d2d_memcpy_cv", "0.42 %", "cv of the repetitions", NULL});
  }
  /* a share of the PCIe link, for rows over the link */
  const char *const link_names[] = {"median_us", "GB/s", "pct_of_link", "verified"};
  const double link_values[] = {1219.7, 55.0, 87.3, 1};
  gb_run r = make_run("offload/h2d/pinned/64MiB", NULL, "");
  r.ncounters = 4;
  r.counter_names = link_names;
  r.counter_values = link_values;
  expect_line(&r, 0, (const char *const[]){"87.3% link", NULL});
  char head[4 * KM_CONSOLE_WIDTH];
  km_console_header(0, head, sizeof head);
  KM_EXPECT(strstr(head, "case") == head && strstr(head, "GB/s") && strstr(head, "of ceiling") && strstr(head, "status"));
  KM_EXPECT(km_console_visible_width("\033[32mab\033[mc\n") == 3);
}

static void check_color_flag(void) {
  char *plain[] = {"micro", "--benchmark_color=false"};
  char *user_on[] = {"micro", "--benchmark_color=false", "--benchmark_color=true"};
  char *yes[] = {"micro", "--benchmark_color=yes"}, *no[] = {"micro", "--benchmark_color=no"};
  char *zero[] = {"micro", "--benchmark_color=0"}, *off[] = {"micro", "--benchmark_color=OFF"};
  KM_EXPECT(gb_color_wanted(2, plain) == 0);
  KM_EXPECT(gb_color_wanted(3, user_on) == 1); /* a flag after "--" overrides micro's own */
  KM_EXPECT(gb_color_wanted(2, yes) == 1);
  KM_EXPECT(gb_color_wanted(2, no) == 0);
  KM_EXPECT(gb_color_wanted(2, zero) == 0);
  KM_EXPECT(gb_color_wanted(2, off) == 0);
  char *none[] = {"micro"};
  KM_EXPECT(gb_color_wanted(1, none) == (isatty(STDOUT_FILENO) && getenv("TERM") && strcmp(getenv("TERM"), "dumb")));
}

/* ---- the reporter itself, on cases that only report made-up times */
static void case_ok(gb_state *st, void *arg) {
  while (gb_keep_running(st)) gb_set_iteration_time(st, 1e-4);
  gb_counter(st, "median_us", 100.0);
  gb_counter(st, "GB/s", 4000.0);
  gb_counter(st, "pct_of_ceiling", 94.9);
  gb_counter(st, "verified", 1.0);
  gb_counter(st, "noisy", 0.0);
  gb_counter(st, "bytes_per_token", 147456.0); /* in the JSON, not on the console */
  gb_label(st, (const char *)arg);
}

static void case_skip(gb_state *st, void *arg) {
  gb_skip_with_message(st, "skipped: this case needs something this machine lacks, explained at length so the line "
                           "would pass 160 columns if nothing cut it: and a little more, and more again");
  while (gb_keep_running(st)) gb_set_iteration_time(st, 1e-4);
}

static void count_run(const gb_run *run, void *user) { ++*(int *)user; }

/* Run every registered case with the console on, stdout into a file; returns the file's text. */
static char *run_captured(int console, int *runs) {
  char path[] = "/tmp/km_console_XXXXXX", err[256];
  int fd = mkstemp(path);
  if (fd < 0) return NULL;
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  dup2(fd, STDOUT_FILENO);
  long n = gb_run_all(count_run, runs, console, err, sizeof err);
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  KM_EXPECT_MSG(n > 0, "gb_run_all: %s", err);
  FILE *f = fdopen(fd, "rb");
  char *text = calloc(1 << 16, 1);
  if (f && text) {
    rewind(f);
    size_t got = fread(text, 1, (1 << 16) - 1, f);
    text[got] = '\0';
  }
  if (f) fclose(f);
  unlink(path);
  return text;
}

static void check_lines_of(const char *text, int color) {
  size_t lines = 0;
  for (const char *p = text; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    char row[1024];
    snprintf(row, sizeof row, "%.*s", (int)(n < sizeof row ? n : sizeof row - 1), p);
    KM_EXPECT_MSG(km_console_visible_width(row) <= KM_CONSOLE_WIDTH, "%zu columns: %s", km_console_visible_width(row),
                  row);
    KM_EXPECT_MSG(!strstr(row, "bytes_per_token"), "a counter outside the console set: %s", row);
    lines++;
    p += n + (nl != NULL);
  }
  KM_EXPECT_MSG(lines >= 4, "%zu lines", lines); /* header, rule, two cases */
  KM_EXPECT_MSG((strchr(text, '\033') != NULL) == color, "colour %d, output:\n%s", color, text);
  KM_EXPECT(strstr(text, "test/console/ok") && strstr(text, "4000.0") && strstr(text, "94.9%"));
  KM_EXPECT_MSG(strstr(text, "SKIPPED: this case needs something"), "no skipped line in:\n%s", text);
}

static void check_reporter(void) {
  char err[256], *argv[] = {"cpu_console_line", "--benchmark_color=false"};
  KM_EXPECT_MSG(gb_init(2, argv, err, sizeof err) == 0, "gb_init: %s", err);
  static const char label[] = "a label long enough to be cut: 0123456789 0123456789 0123456789 0123456789 0123456789";
  KM_EXPECT(gb_register("test/console/ok", case_ok, (void *)label, 1, 0, 3) == 0);
  KM_EXPECT(gb_register("test/console/skipped_with_a_long_reason", case_skip, NULL, 1, 0, 3) == 0);
  int runs = 0;
  char *plain = run_captured(GB_CONSOLE_PLAIN, &runs);
  KM_EXPECT(runs == 2);
  if (plain) check_lines_of(plain, 0);
  char *color = run_captured(GB_CONSOLE_COLOR, &runs);
  if (color) check_lines_of(color, 1);
  runs = 0;
  char *quiet = run_captured(GB_CONSOLE_NONE, &runs);
  KM_EXPECT(runs == 2 && quiet && quiet[0] == '\0');
  free(plain);
  free(color);
  free(quiet);
  gb_shutdown();
}

int main(void) {
  check_lines();
  check_color_flag();
  check_reporter();
  return km_test_finish("cpu_console_line");
}
