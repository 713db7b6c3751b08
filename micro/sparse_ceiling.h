/* The sparse family's candidate for the start-up read ceiling (micro/sparse_ceiling.c). */
#ifndef KM_MICRO_SPARSE_CEILING_H
#define KM_MICRO_SPARSE_CEILING_H

#include "ceiling.h"

extern const km_ceiling_set km_sparse_ceilings;

#endif
