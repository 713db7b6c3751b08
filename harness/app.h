/* The ./micro program over a set of case tables: arguments first, then the byte table or the run. */
#ifndef KM_APP_H
#define KM_APP_H

#include <stddef.h>

#include "registry.h"

/* Returns the exit status: 0 ok, 1 a case failed, 2 bad input, 3 no CUDA device. A command whose flag
 * is on the command line runs instead of the suite; --help lists the commands after the flags. */
int km_app_main(int argc, char **argv, const km_case_table *const *tables, size_t ntables,
                const km_command *const *commands, size_t ncommands);

#endif
