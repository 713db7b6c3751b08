/* Every published fit of a kvmicro-params/2 file predicts each of its fitted points within 10%, as the
 * reader (`report predict`, reports/params_predict.c) evaluates it: the recorded H200 run's file and a
 * fixture. A kvmicro-params/1 file is refused with one line that says it is /1. Every key the recorded
 * file carries is documented in reports/PARAMS.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../reports/params_predict.h"
#include "test_util.h"

#define KM_PUBLISH_BOUND 0.10 /* the fourth rule of reports/PARAMS.md */

/* One point's axes from the series' axis list; 0 when the point carries every axis. */
static int point_axes(const cJSON *series, const cJSON *pt, const char **axes, double *values, size_t *n) {
  const cJSON *a;
  *n = 0;
  cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(series, "axes")) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pt, a->valuestring);
    if (*n == 8 || !cJSON_IsString(a) || !cJSON_IsNumber(v)) return -1;
    axes[*n] = a->valuestring;
    values[(*n)++] = v->valuedouble;
  }
  return 0;
}

/* Returns the number of published fits checked. */
static int check_file(const char *name) {
  cJSON *doc = km_test_read_json(name);
  KM_EXPECT_MSG(doc != NULL, "cannot read %s", name);
  if (!doc) return 0;
  int published = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(doc, "series")) {
    const cJSON *fit = cJSON_GetObjectItemCaseSensitive(s, "fit");
    const char *series = cJSON_GetObjectItemCaseSensitive(s, "series")->valuestring;
    if (!cJSON_IsObject(fit)) continue;
    published++;
    const double worst = cJSON_GetObjectItemCaseSensitive(fit, "max_rel_error")->valuedouble;
    double seen = 0;
    int fitted = 0;
    const cJSON *pt;
    cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(s, "points")) {
      if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pt, "l2_resident"))) continue; /* not fitted (PARAMS.md) */
      const char *axes[8];
      double values[8], t = cJSON_GetObjectItemCaseSensitive(pt, "time_us")->valuedouble;
      size_t n = 0;
      km_prediction p;
      char err[600];
      KM_EXPECT_MSG(point_axes(s, pt, axes, values, &n) == 0, "%s %s: a point lacks an axis", name, series);
      KM_EXPECT_MSG(km_params_predict(doc, series, axes, values, n, &p, err, sizeof err) == 0, "%s %s: %s", name,
                    series, err);
      double rel = fabs(p.time_us - t) / t;
      KM_EXPECT_MSG(rel <= KM_PUBLISH_BOUND, "%s %s: a point measured %.3f us is predicted %.3f us (%.1f%% off)", name,
                    series, t, p.time_us, 100 * rel);
      KM_EXPECT_MSG(p.in_range, "%s %s: a fitted point is outside the fit's range (%s)", name, series, p.outside);
      seen = rel > seen ? rel : seen;
      fitted++;
    }
    KM_EXPECT_MSG(fitted >= 3, "%s %s: a published fit over %d points", name, series, fitted);
    KM_EXPECT_MSG(fabs(seen - worst) <= 1e-6, "%s %s: max_rel_error %.6f, the points give %.6f", name, series, worst,
                  seen);
  }
  cJSON_Delete(doc);
  return published;
}

/* A /1 file: refused by the reader and by the command, one line that names /1, exit status 2. */
static void test_version_1(void) {
  cJSON *doc = km_test_read_json("runs/h200-sample-params.json");
  KM_EXPECT(doc != NULL);
  const char *axes[] = {"bytes"};
  double v[] = {4096};
  km_prediction p;
  char err[600] = "";
  KM_EXPECT(km_params_predict(doc, "roofline", axes, v, 1, &p, err, sizeof err) == -1);
  KM_EXPECT_MSG(strstr(err, "kvmicro-params/1") && !strchr(err, '\n'), "the /1 error: %s", err);
  cJSON_Delete(doc);
  char path[1024];
  const char *args[] = {"4096"};
  FILE *out = tmpfile();
  KM_EXPECT(out != NULL);
  if (!out) return;
  int rc = km_params_predict_command(km_test_fixture("runs/h200-sample-params.json", path, sizeof path), "roofline",
                                     args, 1, out, err, sizeof err);
  KM_EXPECT_MSG(rc == 2 && strstr(err, "kvmicro-params/1"), "predict on a /1 file: exit %d, %s", rc, err);
  KM_EXPECT_MSG(ftell(out) == 0, "predict on a /1 file printed a result");
  fclose(out);
}

/* Every key of the object (and of nested objects one level down where `nested`) appears backticked in doc. */
static void keys_documented(const cJSON *o, const char *doc, const char *where, int nested) {
  const cJSON *k;
  cJSON_ArrayForEach(k, o) {
    char quoted[160];
    snprintf(quoted, sizeof quoted, "`%s`", k->string);
    KM_EXPECT_MSG(strstr(doc, quoted) != NULL, "reports/PARAMS.md does not document %s.%s", where, k->string);
    if (nested && cJSON_IsObject(k)) keys_documented(k, doc, k->string, 0);
  }
}

static void test_documented(void) {
  cJSON *params = km_test_read_json("../../reports/runs/h200-params.json");
  char *doc = km_test_read_text("../../reports/PARAMS.md");
  KM_EXPECT(params && doc);
  if (params && doc) {
    keys_documented(params, doc, "(top level)", 0);
    keys_documented(cJSON_GetObjectItemCaseSensitive(params, "gpu"), doc, "gpu", 0);
    keys_documented(cJSON_GetObjectItemCaseSensitive(params, "ceilings"), doc, "ceilings", 1);
    const cJSON *bt = cJSON_GetObjectItemCaseSensitive(params, "bytes_table");
    keys_documented(bt, doc, "bytes_table", 0);
    keys_documented(cJSON_GetObjectItemCaseSensitive(bt, "vllm"), doc, "bytes_table.vllm", 0);
    keys_documented(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(bt, "rows"), 0), doc, "bytes_table.rows[]", 0);
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(params, "series")) {
      keys_documented(s, doc, "series[]", 0);
      const cJSON *fit = cJSON_GetObjectItemCaseSensitive(s, "fit");
      if (cJSON_IsObject(fit)) keys_documented(fit, doc, "series[].fit", 0);
      const cJSON *pt;
      cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(s, "points")) {
        const cJSON *k;
        cJSON_ArrayForEach(k, pt) { /* axis keys are documented as the series' axes */
          int is_axis = 0;
          const cJSON *a;
          cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(s, "axes")) is_axis |= strcmp(a->valuestring, k->string) == 0;
          char quoted[160];
          snprintf(quoted, sizeof quoted, "`%s`", k->string);
          KM_EXPECT_MSG(is_axis || strstr(doc, quoted), "reports/PARAMS.md does not document points[].%s", k->string);
        }
      }
    }
  }
  cJSON_Delete(params);
  free(doc);
}

int main(void) {
  int recorded = check_file("../../reports/runs/h200-params.json");
  KM_EXPECT_MSG(recorded >= 5, "the recorded H200 params file publishes %d fits", recorded);
  KM_EXPECT(check_file("runs/h200-degenerate-params.json") >= 1);
  test_version_1();
  test_documented();
  return km_test_finish("cpu_params_points");
}
