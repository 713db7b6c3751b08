/* Simulator parameters. Rows are grouped by the series their case declares; a row without a
 * declaration is a series of its own with no fit. Each series' points come from its rows (or, for a
 * series of stages, from the stage counters of its one row); L2-resident points are written but not
 * fitted. Nothing here looks at case names. */
#include "params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_file.h"
#include "sweep_fit.h"

enum { MAX_POINTS = 512 };

static int usable(const km_result *row) {
  if (row->error || row->skipped) return 0;
  if (row->repetitions > 1) return row->is_aggregate && strcmp(row->aggregate_name, "median") == 0;
  return !row->is_aggregate && isfinite(km_result_counter(row, "median_us"));
}

static const char *series_of(const km_result *row) {
  const cJSON *s = row->sweep ? cJSON_GetObjectItemCaseSensitive(row->sweep, "series") : NULL;
  return cJSON_IsString(s) ? s->valuestring : row->name;
}

/* A series' declaration, read from its first row. */
typedef struct series_decl {
  const char *axes[KM_SWEEP_MAX_AXES];
  size_t naxes;
  const char *model;
  const cJSON *stages; /* array of names, or NULL */
} series_decl;

static int read_decl(const cJSON *sweep, series_decl *d) {
  memset(d, 0, sizeof *d);
  const cJSON *axes = cJSON_GetObjectItemCaseSensitive(sweep, "axes"), *a;
  cJSON_ArrayForEach(a, axes) {
    if (!cJSON_IsString(a) || d->naxes == KM_SWEEP_MAX_AXES) return -1;
    d->axes[d->naxes++] = a->valuestring;
  }
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(sweep, "model");
  d->model = cJSON_IsString(model) ? model->valuestring : "bytes";
  const cJSON *stages = cJSON_GetObjectItemCaseSensitive(sweep, "stages");
  d->stages = cJSON_IsArray(stages) ? stages : NULL;
  return d->naxes ? 0 : -1;
}

static int same_decl(const series_decl *a, const series_decl *b) {
  if (a->naxes != b->naxes || strcmp(a->model, b->model) != 0 || !a->stages != !b->stages) return 0;
  for (size_t i = 0; i < a->naxes; i++)
    if (strcmp(a->axes[i], b->axes[i]) != 0) return 0;
  return 1;
}

/* The point of one row: its coordinate on each axis ("bytes": what it moved). */
static int row_point(const km_result *row, const series_decl *d, km_fit_point *pt) {
  const cJSON *at = cJSON_GetObjectItemCaseSensitive(row->sweep, "at");
  for (size_t a = 0; a < d->naxes; a++) {
    const cJSON *v = cJSON_GetArrayItem(at, (int)a);
    pt->at[a] = strcmp(d->axes[a], "bytes") == 0 ? km_result_counter(row, "bytes") : cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(pt->at[a])) return -1;
  }
  pt->time_us = km_result_counter(row, "median_us");
  return 0;
}

static double stage_counter(const km_result *row, const char *stage, const char *suffix) {
  char key[160];
  snprintf(key, sizeof key, "%s_%s", stage, suffix);
  return km_result_counter(row, key);
}

typedef struct series_points {
  km_fit_point pts[MAX_POINTS]; /* the fitted ones */
  size_t n;
  cJSON *json;                  /* every point, fitted or not */
  char reason[320];             /* set when the points cannot be fitted at all */
} series_points;

static void add_json_point(series_points *sp, const char *name, const series_decl *d, const km_fit_point *pt,
                           double gbps, int l2) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  for (size_t a = 0; a < d->naxes; a++) cJSON_AddNumberToObject(o, d->axes[a], pt->at[a]);
  cJSON_AddNumberToObject(o, "time_us", pt->time_us);
  if (isfinite(gbps)) cJSON_AddNumberToObject(o, "gbps", gbps);
  if (l2) cJSON_AddBoolToObject(o, "l2_resident", 1);
  cJSON_AddItemToArray(sp->json, o);
}

/* The point joins the fit; its name points into the results, which outlive the fit. */
static void keep(series_points *sp, const km_fit_point *pt, const char *name) {
  if (sp->n == MAX_POINTS) return;
  sp->pts[sp->n] = *pt;
  sp->pts[sp->n++].name = name;
}

/* A series of stages: each named stage of the row is a point at its own bytes. */
static void stage_points(const km_result *row, const series_decl *d, series_points *sp) {
  const cJSON *name;
  if (d->naxes != 1 || strcmp(d->axes[0], "bytes") != 0) {
    snprintf(sp->reason, sizeof sp->reason, "a series of stages has the one axis \"bytes\"");
    return;
  }
  cJSON_ArrayForEach(name, d->stages) {
    if (!cJSON_IsString(name)) continue;
    km_fit_point pt = {{stage_counter(row, name->valuestring, "bytes")}, stage_counter(row, name->valuestring, "us"),
                       NULL};
    if (!isfinite(pt.at[0]) || !isfinite(pt.time_us)) {
      snprintf(sp->reason, sizeof sp->reason, "stage %s of %s was not measured (no %s_us / %s_bytes)",
               name->valuestring, row->name, name->valuestring, name->valuestring);
      return;
    }
    char label[256];
    snprintf(label, sizeof label, "%s:%s", row->name, name->valuestring);
    add_json_point(sp, label, d, &pt, stage_counter(row, name->valuestring, "gbps"), 0);
    keep(sp, &pt, name->valuestring);
  }
}

static void collect(const km_results *r, const char *series, const series_decl *d, series_points *sp,
                    const char **technique) {
  for (size_t i = 0; i < r->count; i++) {
    const km_result *row = &r->rows[i];
    if (!usable(row) || strcmp(series_of(row), series) != 0) continue;
    *technique = row->technique;
    series_decl mine;
    if (!row->sweep) { /* no declaration: the row alone */
      km_fit_point pt = {{km_result_counter(row, "bytes")}, km_result_counter(row, "median_us"), NULL};
      add_json_point(sp, row->name, d, &pt, km_result_counter(row, "GB/s"), km_result_counter(row, "l2_resident") == 1);
      snprintf(sp->reason, sizeof sp->reason, "the case declares no sweep (km_case.sweep)");
      continue;
    }
    if (read_decl(row->sweep, &mine) != 0 || !same_decl(&mine, d)) {
      snprintf(sp->reason, sizeof sp->reason, "%s declares other axes, model or stages than the series' first case",
               row->name);
      continue;
    }
    if (d->stages) {
      stage_points(row, d, sp);
      continue;
    }
    km_fit_point pt;
    if (row_point(row, d, &pt) != 0) {
      snprintf(sp->reason, sizeof sp->reason, "%s has no value on every axis", row->name);
      continue;
    }
    int l2 = km_result_counter(row, "l2_resident") == 1;
    add_json_point(sp, row->name, d, &pt, km_result_counter(row, "GB/s"), l2);
    if (!l2) keep(sp, &pt, row->name); /* L2's speed is not the card's: no fit from it */
  }
}

static cJSON *fit_json(const km_sweep_fit *f, const km_model_terms *m, const series_decl *d) {
  cJSON *fit = cJSON_CreateObject(), *coef = cJSON_CreateObject(), *range = cJSON_CreateObject();
  cJSON_AddNumberToObject(coef, "1", f->coef[0]);
  for (size_t j = 0; j < m->nterms; j++) cJSON_AddNumberToObject(coef, m->text[j], f->coef[j + 1]);
  cJSON_AddItemToObject(fit, "coefficients_us", coef);
  for (size_t a = 0; a < d->naxes; a++) {
    cJSON *lohi = cJSON_CreateArray();
    cJSON_AddItemToArray(lohi, cJSON_CreateNumber(f->lo[a]));
    cJSON_AddItemToArray(lohi, cJSON_CreateNumber(f->hi[a]));
    cJSON_AddItemToObject(range, d->axes[a], lohi);
  }
  cJSON_AddItemToObject(fit, "range", range);
  cJSON_AddNumberToObject(fit, "max_rel_error", f->max_rel_error);
  cJSON_AddNumberToObject(fit, "r2", f->r2);
  /* the copy model's figures under their own names */
  if (d->naxes == 1 && strcmp(d->axes[0], "bytes") == 0 && m->nterms == 1 && f->coef[1] > 0) {
    cJSON_AddNumberToObject(fit, "alpha_us", f->coef[0]);
    cJSON_AddNumberToObject(fit, "beta_GBps", 1.0 / (f->coef[1] * 1e3)); /* us per byte -> GB/s */
    cJSON_AddNumberToObject(fit, "min_bytes", f->lo[0]);
    cJSON_AddNumberToObject(fit, "max_bytes", f->hi[0]);
  }
  return fit;
}

static cJSON *series_json(const km_results *r, const km_result *first) {
  const char *series = series_of(first), *technique = "";
  const series_decl copy_model = {{"bytes"}, 1, "bytes", NULL};
  series_decl d = copy_model;
  if (first->sweep && read_decl(first->sweep, &d) != 0) d = copy_model;
  series_points *sp = calloc(1, sizeof *sp);
  cJSON *o = cJSON_CreateObject();
  if (!sp || !o) {
    free(sp);
    cJSON_Delete(o);
    return NULL;
  }
  sp->json = cJSON_CreateArray();
  collect(r, series, &d, sp, &technique);
  cJSON_AddStringToObject(o, "series", series);
  cJSON_AddStringToObject(o, "technique", technique);
  cJSON *axes = cJSON_AddArrayToObject(o, "axes");
  for (size_t a = 0; a < d.naxes; a++) cJSON_AddItemToArray(axes, cJSON_CreateString(d.axes[a]));
  km_model_terms m;
  char err[200];
  if (km_model_parse(d.model, d.axes, d.naxes, &m, err, sizeof err) != 0) {
    snprintf(sp->reason, sizeof sp->reason, "%s", err);
  } else {
    char model[512] = "time_us = c[1]";
    for (size_t j = 0; j < m.nterms; j++)
      snprintf(model + strlen(model), sizeof model - strlen(model), " + c[%s] * %s", m.text[j], m.text[j]);
    cJSON_AddStringToObject(o, "model", model);
  }
  km_sweep_fit f = {0};
  if (!sp->reason[0]) km_sweep_fit_compute(sp->pts, sp->n, d.axes, d.naxes, &m, &f);
  if (!sp->reason[0] && f.published) {
    cJSON_AddItemToObject(o, "fit", fit_json(&f, &m, &d));
  } else {
    cJSON_AddNullToObject(o, "fit");
    cJSON_AddStringToObject(o, "no_fit_reason", sp->reason[0] ? sp->reason : f.reason);
  }
  cJSON_AddItemToObject(o, "points", sp->json);
  free(sp);
  return o;
}

static cJSON *ceilings_of(const cJSON *gpu) {
  const cJSON *c = gpu ? cJSON_GetObjectItemCaseSensitive(gpu, "ceilings") : NULL;
  return c ? cJSON_Duplicate(c, 1) : cJSON_CreateNull();
}

static cJSON *identity_of(const cJSON *gpu) {
  static const char *const keys[] = {"name", "uuid", "driver_release", "vbios", "compute_capability", "sms",
                                     "memory_gib", "theoretical_gbps", "l2_bytes", "pci_bus_id"};
  cJSON *o = cJSON_CreateObject();
  for (size_t i = 0; gpu && i < sizeof keys / sizeof keys[0]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(gpu, keys[i]);
    if (v) cJSON_AddItemToObject(o, keys[i], cJSON_Duplicate(v, 1));
  }
  return o;
}

cJSON *km_params_json(const km_results *r, const km_model *m, const km_bytes_params *p, const cJSON *gpu) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "schema", KM_PARAMS_SCHEMA);
  cJSON_AddItemToObject(doc, "gpu", identity_of(gpu));
  cJSON_AddItemToObject(doc, "ceilings", ceilings_of(gpu));
  cJSON_AddStringToObject(doc, "fit_rules",
                          ">= 3 points and more points than coefficients, every axis spanning >= 4x, no negative "
                          "coefficient, every point predicted within 10% (least squares of relative error)");
  cJSON *series = cJSON_CreateArray();
  for (size_t i = 0; i < r->count; i++) {
    if (!usable(&r->rows[i])) continue;
    int seen = 0; /* each series once, at its first row */
    for (size_t j = 0; j < i && !seen; j++)
      seen = usable(&r->rows[j]) && strcmp(series_of(&r->rows[j]), series_of(&r->rows[i])) == 0;
    cJSON *s = seen ? NULL : series_json(r, &r->rows[i]);
    if (s) cJSON_AddItemToArray(series, s);
  }
  cJSON_AddItemToObject(doc, "series", series);
  km_table *t = NULL;
  char err[256];
  if (km_bytes_table_build(m, p, &t, err, sizeof err) == 0) {
    cJSON_AddItemToObject(doc, "bytes_table", km_bytes_table_json(m, p, t));
    km_table_free(t);
  }
  return doc;
}

int km_params_write(const char *path, const km_results *r, const km_model *m, const km_bytes_params *p,
                    const cJSON *gpu, char *err, size_t errlen) {
  cJSON *doc = km_params_json(r, m, p, gpu);
  int rc = km_output_write_json(path, doc, err, errlen);
  cJSON_Delete(doc);
  return rc;
}
