/* Reading a kvmicro-params/2 file back and predicting one call, as a simulator would: only the schema,
 * the series name and its fit are needed; the raw points and the byte table are for other readers. */
#include "params_predict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "run_file.h"

enum { MAX_ARGS = 8 };

static const cJSON *find_series(const cJSON *params, const char *series) {
  const cJSON *all = cJSON_GetObjectItemCaseSensitive(params, "series");
  for (const cJSON *s = cJSON_IsArray(all) ? all->child : NULL; s; s = s->next) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "series");
    if (cJSON_IsString(name) && strcmp(name->valuestring, series) == 0) return s;
  }
  return NULL;
}

/* "no series 'x'; series with a fit: a, b, c (and N more)" */
static void unknown_series(const cJSON *params, const char *series, char *err, size_t errlen) {
  size_t used = (size_t)snprintf(err, errlen, "no series '%s' in the file; series with a fit:", series);
  int listed = 0, more = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(params, "series")) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "series");
    if (!cJSON_IsString(name) || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(s, "fit"))) continue;
    if (listed < 8 && used + strlen(name->valuestring) + 4 < errlen)
      used += (size_t)snprintf(err + used, errlen - used, "%s %s", listed++ ? "," : "", name->valuestring);
    else
      more++;
  }
  if (used < errlen) snprintf(err + used, errlen - used, "%s", listed == 0 ? " none" : "");
  if (more && strlen(err) + 24 < errlen) snprintf(err + strlen(err), errlen - strlen(err), " (and %d more)", more);
}

static int number(const cJSON *o, const char *key, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return -1;
  *out = v->valuedouble;
  return 0;
}

static int value_of(const char *axis, size_t len, const char *const *axes, const double *values, size_t n,
                    double *out) {
  for (size_t i = 0; i < n; i++)
    if (strlen(axes[i]) == len && strncmp(axes[i], axis, len) == 0) {
      *out = values[i];
      return 0;
    }
  return -1;
}

/* One term "batch*context" at the point. */
static int term_at(const char *term, const char *const *axes, const double *values, size_t n, double *out,
                   char *missing, size_t mlen) {
  double v = 1.0;
  for (const char *t = term; *t;) {
    size_t len = strcspn(t, "*");
    double x = 0;
    if (value_of(t, len, axes, values, n, &x) != 0) {
      snprintf(missing, mlen, "%.*s", (int)len, t);
      return -1;
    }
    v *= x;
    t += len + (t[len] == '*');
  }
  *out = v;
  return 0;
}

static void check_range(const cJSON *fit, const char *const *axes, const double *values, size_t n, km_prediction *p) {
  p->in_range = 1;
  const cJSON *range = cJSON_GetObjectItemCaseSensitive(fit, "range"), *r;
  cJSON_ArrayForEach(r, range) {
    double x = 0;
    const cJSON *lo = cJSON_GetArrayItem(r, 0), *hi = cJSON_GetArrayItem(r, 1);
    if (!cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) || value_of(r->string, strlen(r->string), axes, values, n, &x))
      continue;
    if (x >= lo->valuedouble && x <= hi->valuedouble) continue;
    size_t used = strlen(p->outside);
    snprintf(p->outside + used, sizeof p->outside - used, "%s%s %g outside %g..%g", used ? ", " : "", r->string, x,
             lo->valuedouble, hi->valuedouble);
    p->in_range = 0;
  }
}

static int evaluate(const cJSON *s, const char *series, const char *const *axes, const double *values, size_t n,
                    km_prediction *p, char *err, size_t errlen) {
  const cJSON *fit = cJSON_GetObjectItemCaseSensitive(s, "fit");
  if (!cJSON_IsObject(fit)) {
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(s, "no_fit_reason");
    snprintf(err, errlen, "series '%s' has no fit (%s): use its %d raw points", series,
             cJSON_IsString(why) ? why->valuestring : "\"fit\" is not an object",
             cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "points")));
    return -1;
  }
  const cJSON *coef = cJSON_GetObjectItemCaseSensitive(fit, "coefficients_us"), *c;
  if (!cJSON_IsObject(coef) || !coef->child) {
    snprintf(err, errlen, "series '%s': fit.coefficients_us must be an object of numbers", series);
    return -1;
  }
  double t = 0.0;
  cJSON_ArrayForEach(c, coef) {
    double x = 1.0;
    char missing[64];
    if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble)) {
      snprintf(err, errlen, "series '%s': fit.coefficients_us.%s must be a finite number", series, c->string);
      return -1;
    }
    if (strcmp(c->string, "1") != 0 && term_at(c->string, axes, values, n, &x, missing, sizeof missing) != 0) {
      snprintf(err, errlen, "series '%s' needs a value for %s (give it as %s=VALUE)", series, missing, missing);
      return -1;
    }
    t += c->valuedouble * x;
  }
  p->time_us = t;
  if (number(fit, "max_rel_error", &p->max_rel_error)) p->max_rel_error = NAN;
  p->copy_model = number(fit, "alpha_us", &p->alpha_us) == 0 && number(fit, "beta_GBps", &p->beta_gbps) == 0;
  check_range(fit, axes, values, n, p);
  return 0;
}

int km_params_predict(const cJSON *params, const char *series, const char *const *axes, const double *values,
                      size_t n, km_prediction *out, char *err, size_t errlen) {
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(params, "schema");
  if (cJSON_IsString(schema) && strcmp(schema->valuestring, "kvmicro-params/1") == 0) {
    /* /1 fitted a line to any run of sizes, whatever its span or sign (reports/PARAMS.md, Versioning) */
    snprintf(err, errlen, "a kvmicro-params/1 file, whose fits are not read (they were published without the /2 "
             "rules); write a kvmicro-params/2 file with micro --params PATH");
    return -1;
  }
  if (!cJSON_IsString(schema) || strcmp(schema->valuestring, KM_PARAMS_SCHEMA) != 0) {
    snprintf(err, errlen, "\"schema\" must be \"%s\" (a micro --params file)", KM_PARAMS_SCHEMA);
    return -1;
  }
  if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(params, "series"))) {
    snprintf(err, errlen, "\"series\" is missing or not an array");
    return -1;
  }
  const cJSON *s = find_series(params, series);
  if (!s) {
    unknown_series(params, series, err, errlen);
    return -1;
  }
  km_prediction p;
  memset(&p, 0, sizeof p);
  if (evaluate(s, series, axes, values, n, &p, err, errlen)) return -1;
  *out = p;
  return 0;
}

/* "64MiB" alone is bytes; otherwise AXIS=VALUE, where a value may also be a size. */
static int parse_point(const char *const *args, int nargs, char names[MAX_ARGS][64], const char *axes[MAX_ARGS],
                       double *values, char *err, size_t errlen) {
  if (nargs < 1 || nargs > MAX_ARGS) {
    snprintf(err, errlen, "predict takes BYTES or 1..%d AXIS=VALUE arguments after the series", MAX_ARGS);
    return -1;
  }
  for (int i = 0; i < nargs; i++) {
    const char *eq = strchr(args[i], '=');
    size_t len = eq ? (size_t)(eq - args[i]) : 5;
    const char *v = eq ? eq + 1 : args[i];
    if ((!eq && nargs > 1) || len == 0 || len >= sizeof names[i] || km_report_parse_bytes(v, &values[i])) {
      snprintf(err, errlen, "'%s': expected a byte count such as 64MiB, or AXIS=VALUE such as batch=16", args[i]);
      return -1;
    }
    snprintf(names[i], sizeof names[i], "%.*s", (int)len, eq ? args[i] : "bytes");
    axes[i] = names[i];
  }
  return 0;
}

int km_params_predict_command(const char *path, const char *series, const char *const *args, int nargs, FILE *out,
                              char *err, size_t errlen) {
  char names[MAX_ARGS][64];
  const char *axes[MAX_ARGS];
  double values[MAX_ARGS];
  if (parse_point(args, nargs, names, axes, values, err, errlen)) return 2;
  cJSON *doc = km_report_read_json(path, err, errlen);
  if (!doc) return 2;
  km_prediction p;
  char inner[600];
  int rc = km_params_predict(doc, series, axes, values, (size_t)nargs, &p, inner, sizeof inner);
  if (rc == 0) {
    fprintf(out, "%s at", series);
    for (int i = 0; i < nargs; i++) fprintf(out, " %s=%.0f", axes[i], values[i]);
    fprintf(out, ": %.3f us", p.time_us);
    if (p.copy_model) fprintf(out, " (alpha %.3f us + bytes / %.1f GB/s)", p.alpha_us, p.beta_gbps);
    if (isfinite(p.max_rel_error)) fprintf(out, "; the fit's worst point is %.1f%% off", 100.0 * p.max_rel_error);
    fputc('\n', out);
    if (!p.in_range) fprintf(out, "note: %s: an extrapolation\n", p.outside);
    if (!(p.time_us > 0)) fprintf(out, "note: the predicted time is not positive: the model does not hold here\n");
  } else {
    snprintf(err, errlen, "%s: %s", path, inner);
  }
  cJSON_Delete(doc);
  return rc ? 2 : 0;
}
