/* The version line is read from the same object that goes into context.build of every result file, so
 * the two never disagree. */
#include "version.h"

#include <cjson/cJSON.h>

#include "context.h"

static const char *text(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "unknown";
}

void km_version_print(const char *program, FILE *out) {
  cJSON *b = km_context_build_json();
  const cJSON *rt = cJSON_GetObjectItemCaseSensitive(b, "cuda_runtime_built");
  int v = cJSON_IsNumber(rt) ? rt->valueint : 0;
  fprintf(out, "%s (kvmicro) revision %s, %s build, CUDA architectures %s, CUDA runtime %d.%d, Google Benchmark %s\n",
          program, text(b, "git_revision"), text(b, "build_type"), text(b, "cuda_architectures"), v / 1000,
          v % 1000 / 10, text(b, "google_benchmark"));
  cJSON_Delete(b);
}
