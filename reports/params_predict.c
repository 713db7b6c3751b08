/* Reading a kvmicro-params/1 file back and predicting one case, as a simulator would: only the schema,
 * the series name and its fit are needed; the raw points and the byte table are for other readers. */
#include "params_predict.h"

#include <math.h>
#include <string.h>

#include "params.h"
#include "run_file.h"

static const cJSON *find_series(const cJSON *params, const char *series) {
  const cJSON *all = cJSON_GetObjectItemCaseSensitive(params, "series");
  for (const cJSON *s = cJSON_IsArray(all) ? all->child : NULL; s; s = s->next) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "series");
    if (cJSON_IsString(name) && strcmp(name->valuestring, series) == 0) return s;
  }
  return NULL;
}

static int fit_number(const cJSON *fit, const char *key, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(fit, key);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return -1;
  *out = v->valuedouble;
  return 0;
}

static int read_fit(const cJSON *s, const char *series, km_prediction *p, char *err, size_t errlen) {
  const cJSON *fit = cJSON_GetObjectItemCaseSensitive(s, "fit");
  if (!cJSON_IsObject(fit)) {
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(s, "no_fit_reason");
    snprintf(err, errlen, "series '%s' has no fit (%s): use its raw points", series,
             cJSON_IsString(why) ? why->valuestring : "\"fit\" is not an object");
    return -1;
  }
  static const char *const keys[] = {"alpha_us", "beta_GBps", "r2", "min_bytes", "max_bytes"};
  double *dst[] = {&p->alpha_us, &p->beta_gbps, &p->r2, &p->min_bytes, &p->max_bytes};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (fit_number(fit, keys[i], dst[i])) {
      snprintf(err, errlen, "series '%s': fit.%s must be a finite number", series, keys[i]);
      return -1;
    }
  if (!(p->beta_gbps > 0)) {
    snprintf(err, errlen, "series '%s': fit.beta_GBps must be above 0", series);
    return -1;
  }
  return 0;
}

int km_params_predict(const cJSON *params, const char *series, double bytes, km_prediction *out, char *err,
                      size_t errlen) {
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(params, "schema");
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
    snprintf(err, errlen, "no series '%s' in the file (series are case names less the last component)", series);
    return -1;
  }
  km_prediction p = {0};
  if (read_fit(s, series, &p, err, errlen)) return -1;
  p.time_us = p.alpha_us + bytes / (p.beta_gbps * 1e3); /* GB/s * 1e3 = bytes per microsecond */
  p.in_range = bytes >= p.min_bytes && bytes <= p.max_bytes;
  *out = p;
  return 0;
}

int km_params_predict_command(const char *path, const char *series, const char *bytes_arg, FILE *out, char *err,
                              size_t errlen) {
  double bytes = 0;
  if (km_report_parse_bytes(bytes_arg, &bytes)) {
    snprintf(err, errlen, "BYTES '%s': expected a byte count such as 1048576 or 64MiB", bytes_arg);
    return 2;
  }
  cJSON *doc = km_report_read_json(path, err, errlen);
  if (!doc) return 2;
  km_prediction p;
  char inner[400];
  int rc = km_params_predict(doc, series, bytes, &p, inner, sizeof inner);
  if (rc == 0) {
    fprintf(out, "%s at %.0f bytes: %.3f us (alpha %.3f us + bytes / %.1f GB/s; R^2 %.4f)\n", series, bytes,
            p.time_us, p.alpha_us, p.beta_gbps, p.r2);
    if (!p.in_range)
      fprintf(out, "note: outside the fitted range %.0f..%.0f bytes: an extrapolation\n", p.min_bytes, p.max_bytes);
    if (!(p.time_us > 0))
      fprintf(out, "note: the predicted time is not positive: the line does not hold at this size\n");
  } else {
    snprintf(err, errlen, "%s: %s", path, inner);
  }
  cJSON_Delete(doc);
  return rc ? 2 : 0;
}
