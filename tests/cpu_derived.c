/* CPU test of the derived figures the families declare (km_case_table.derived): every case a figure reads is
 * a case of some table, every figure names a technique of the byte table, and a ratio's scale is positive. */
#include <string.h>

#include "micro_tables.h"
#include "results.h"
#include "test_util.h"

int main(void) {
  size_t figures = 0;
  for (size_t t = 0; t < km_all_table_count; t++)
    for (size_t j = 0; j < km_all_tables[t]->derived_count; j++) {
      const km_derived *d = &km_all_tables[t]->derived[j];
      const char *names[3] = {d->a, d->b, d->c};
      const int n = d->kind == KM_DERIVED_RATIO ? 2 : 3;
      for (int i = 0; i < n; i++)
        KM_EXPECT_MSG(names[i] && km_find_case(km_all_tables, km_all_table_count, names[i]),
                      "derived figure '%s' reads case '%s', which no table has", d->what, names[i] ? names[i] : "(none)");
      KM_EXPECT_MSG(km_technique_rank(d->technique) < KM_TECHNIQUE_COUNT, "derived figure '%s': technique '%s'",
                    d->what, d->technique);
      KM_EXPECT(d->scale >= 0);
      if (d->kind == KM_DERIVED_CROSSOVER) KM_EXPECT(d->xb != d->xc);
      figures++;
    }
  KM_EXPECT(figures >= 10);
  return km_test_finish("cpu_derived");
}
