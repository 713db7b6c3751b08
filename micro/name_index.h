/* Names of an enum's values kept in a table of strings: the lookup that parsing a flag's value needs. */
#ifndef KM_NAME_INDEX_H
#define KM_NAME_INDEX_H

#include <string.h>

/* The index of name in names[0 .. n), or -1 (also for a NULL name). */
static inline int km_name_index(const char *const *names, int n, const char *name) {
  for (int i = 0; name && i < n; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

#endif
