/* Loading result files for the report tool. km_results_from_json falls back to defaults for fields
 * of the wrong type (it reads what a run wrote); a file handed to `report` may have been edited, so
 * the fields the report relies on are type-checked first and a bad one is named. */
#include "run_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Larger than any result file the suite writes (a few hundred KiB); stops a wrong path to a huge
 * file from being read whole. */
#define KM_REPORT_MAX_FILE_BYTES (64L * 1024 * 1024)

char *km_report_read_text(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
    return NULL;
  }
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n < 0 || n > KM_REPORT_MAX_FILE_BYTES || fseek(f, 0, SEEK_SET) != 0) {
    snprintf(err, errlen, "%s: not a readable regular file of at most 64 MiB", path);
    fclose(f);
    return NULL;
  }
  char *text = malloc((size_t)n + 1);
  size_t got = text ? fread(text, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!text || got != (size_t)n) {
    snprintf(err, errlen, "%s: read failed", path);
    free(text);
    return NULL;
  }
  text[n] = '\0';
  return text;
}

cJSON *km_report_read_json(const char *path, char *err, size_t errlen) {
  char *text = km_report_read_text(path, err, errlen);
  if (!text) return NULL;
  cJSON *doc = cJSON_Parse(text);
  if (!doc) {
    const char *at = cJSON_GetErrorPtr();
    long off = at && at >= text ? (long)(at - text) : -1;
    snprintf(err, errlen, "%s: not valid JSON (parse error near byte %ld)", path, off);
  } else if (!cJSON_IsObject(doc)) {
    snprintf(err, errlen, "%s: top level is not a JSON object", path);
    cJSON_Delete(doc);
    doc = NULL;
  }
  free(text);
  return doc;
}

/* A field that is present must have its type; absent fields take the reader's defaults. */
static int field_ok(const cJSON *o, const char *key, cJSON_bool (*is_type)(const cJSON *)) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return !v || is_type(v);
}

static cJSON_bool is_bool(const cJSON *v) { return cJSON_IsBool(v); }

static int check_benchmark(const cJSON *o, size_t i, const char *path, char *err, size_t errlen) {
  static const char *const strings[] = {"name", "kvmicro_name", "technique", "baseline", "run_type",
                                        "aggregate_name", "time_unit", "label", "error_message", "skip_message",
                                        "traffic_class"};
  static const char *const numbers[] = {"repetitions", "iterations", "median_us", "GB/s", "bytes",
                                        "pct_of_ceiling", "cv"};
  static const char *const bools[] = {"representative", "skipped", "error_occurred"};
  const char *bad = NULL, *want = NULL;
  for (size_t k = 0; !bad && k < sizeof strings / sizeof strings[0]; k++)
    if (!field_ok(o, strings[k], cJSON_IsString)) bad = strings[k], want = "a string";
  for (size_t k = 0; !bad && k < sizeof numbers / sizeof numbers[0]; k++)
    if (!field_ok(o, numbers[k], cJSON_IsNumber)) bad = numbers[k], want = "a number";
  for (size_t k = 0; !bad && k < sizeof bools / sizeof bools[0]; k++)
    if (!field_ok(o, bools[k], is_bool)) bad = bools[k], want = "true or false";
  if (!bad) return 0;
  snprintf(err, errlen, "%s: benchmarks[%zu].\"%s\" must be %s", path, i, bad, want);
  return -1;
}

/* context.<section>.<key>, NULL when absent (or the section is not an object: read_context says so). */
static const cJSON *context_item(const cJSON *ctx, const char *section, const char *key) {
  const cJSON *sec = cJSON_GetObjectItemCaseSensitive(ctx, section);
  return cJSON_IsObject(sec) ? cJSON_GetObjectItemCaseSensitive(sec, key) : NULL;
}

/* The context is optional (plain Google Benchmark files lack it); what is present must be well typed. */
static int read_context(km_run_file *f, char *err, size_t errlen) {
  f->gpu_name = "unknown GPU";
  f->revision = "unknown revision";
  f->ceiling_gbps = NAN;
  f->link_gbps = NAN;
  const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(f->doc, "context");
  if (!ctx) return 0;
  static const struct { const char *name, *message; } sections[] = {
      {"gpu", "\"context.gpu\" must be an object"},
      {"host", "\"context.host\" must be an object"},
      {"build", "\"context.build\" must be an object"}};
  const char *what = cJSON_IsObject(ctx) ? NULL : "\"context\" must be an object";
  for (size_t i = 0; !what && i < sizeof sections / sizeof sections[0]; i++) {
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(ctx, sections[i].name);
    if (sec && !cJSON_IsObject(sec)) what = sections[i].message;
  }
  const cJSON *name = what ? NULL : context_item(ctx, "gpu", "name");
  const cJSON *ceil = what ? NULL : context_item(ctx, "gpu", "ceiling_gbps");
  const cJSON *link = what ? NULL : context_item(ctx, "host", "pcie_link_gbps");
  const cJSON *rev = what ? NULL : context_item(ctx, "build", "git_revision");
  if (what) {
    /* named above */
  } else if (name && !cJSON_IsString(name)) {
    what = "\"context.gpu.name\" must be a string";
  } else if (ceil && !(cJSON_IsNumber(ceil) && ceil->valuedouble > 0)) {
    what = "\"context.gpu.ceiling_gbps\" must be a number above 0";
  } else if (link && !cJSON_IsNumber(link)) {
    what = "\"context.host.pcie_link_gbps\" must be a number";
  } else if (rev && !cJSON_IsString(rev)) {
    what = "\"context.build.git_revision\" must be a string";
  }
  if (what) {
    snprintf(err, errlen, "%s: %s", f->path, what);
    return -1;
  }
  if (name) f->gpu_name = name->valuestring;
  if (ceil) f->ceiling_gbps = ceil->valuedouble;
  const cJSON *gpu = what ? NULL : cJSON_GetObjectItemCaseSensitive(ctx, "gpu");
  f->gpu = cJSON_IsObject(gpu) ? gpu : NULL;
  if (link && link->valuedouble > 0) f->link_gbps = link->valuedouble; /* 0: hwloc did not know the link */
  if (rev) f->revision = rev->valuestring;
  return 0;
}

int km_run_file_load(const char *path, km_run_file *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  out->path = path;
  out->doc = km_report_read_json(path, err, errlen);
  if (!out->doc) return -1;
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(out->doc, "benchmarks");
  if (!cJSON_IsArray(b)) {
    snprintf(err, errlen, "%s: \"benchmarks\" is missing or not an array (expected a micro --json file)", path);
    km_run_file_free(out);
    return -1;
  }
  size_t i = 0;
  for (const cJSON *o = b->child; o; o = o->next, i++)
    if (cJSON_IsObject(o) && check_benchmark(o, i, path, err, errlen)) {
      km_run_file_free(out);
      return -1;
    }
  char inner[256];
  if (read_context(out, err, errlen)) {
    km_run_file_free(out);
    return -1;
  }
  if (km_results_from_json(b, &out->results, inner, sizeof inner)) {
    snprintf(err, errlen, "%s: %s", path, inner);
    km_run_file_free(out);
    return -1;
  }
  return 0;
}

void km_run_file_free(km_run_file *f) {
  km_results_free(&f->results);
  cJSON_Delete(f->doc);
  f->doc = NULL;
}

static double gbps_of(const cJSON *ceilings, const char *cls) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(ceilings, cls);
  const cJSON *v = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "gbps") : NULL;
  return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0.0;
}

km_ceilings km_run_file_ceilings(const km_run_file *f) {
  km_ceilings c = {0};
  const cJSON *all = f->gpu ? cJSON_GetObjectItemCaseSensitive(f->gpu, "ceilings") : NULL;
  const cJSON *peak = f->gpu ? cJSON_GetObjectItemCaseSensitive(f->gpu, "theoretical_gbps") : NULL;
  if (cJSON_IsObject(all)) {
    c.copy_gbps = gbps_of(all, "copy"), c.read_gbps = gbps_of(all, "read"), c.write_gbps = gbps_of(all, "write");
    c.h2d_gbps = gbps_of(all, "h2d"), c.d2h_gbps = gbps_of(all, "d2h");
  }
  if (!(c.copy_gbps > 0) && isfinite(f->ceiling_gbps)) c.copy_gbps = f->ceiling_gbps;
  if (cJSON_IsNumber(peak) && peak->valuedouble > 0) c.peak_gbps = peak->valuedouble;
  if (isfinite(f->link_gbps)) c.link_gbps = f->link_gbps;
  return c;
}

int km_run_row_is_primary(const km_results *r, const km_result *row) {
  return km_results_find(r, row->name) == row;
}

static double unit_to_us(const char *unit) {
  if (strcmp(unit, "ns") == 0) return 1e-3;
  if (strcmp(unit, "ms") == 0) return 1e3;
  if (strcmp(unit, "s") == 0) return 1e6;
  return 1.0; /* "us", and kvmicro's default */
}

double km_run_row_time_us(const km_result *row) {
  if (row->error || row->skipped) return NAN;
  double med = km_result_counter(row, "median_us");
  return isfinite(med) ? med : row->real_time * unit_to_us(row->time_unit);
}

double km_run_row_gbps(const km_result *row) {
  if (row->error || row->skipped) return NAN;
  return km_result_counter(row, "GB/s");
}

int km_report_parse_bytes(const char *s, double *out) {
  static const struct { const char *suffix; double mult; } units[] = {
      {"", 1.0}, {"B", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !isfinite(v) || v < 0) return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(end, units[i].suffix) == 0) {
      *out = v * units[i].mult;
      return 0;
    }
  return -1;
}
