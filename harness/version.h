/* `--version` of micro and report: one line of the build facts every result file also carries. */
#ifndef KM_VERSION_H
#define KM_VERSION_H

#include <stdio.h>

/* "<program> (kvmicro) revision R, B build, CUDA architectures A, CUDA runtime X.Y, Google Benchmark V". */
void km_version_print(const char *program, FILE *out);

#endif
