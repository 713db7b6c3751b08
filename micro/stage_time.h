/* Times of the parts of a case that are reported beside its row (the pipeline's stages, the latency
 * fit's points, each direction of a copy pair), each with its median, CV and noisy flag as counters:
 * <name>, <name>_cv, <name>_noisy (name is the median's counter, e.g. "score_us"). Timed with the
 * harness's timer and statistics, as km_bench_measure times a row.
 *
 * A stand-in for the harness's own stage call: harness/bench.h is to gain
 *   double km_bench_stage(km_bench *b, const char *name, km_enqueue_fn fn, void *arg, int isolated);
 *   double km_bench_stage_sampled(km_bench *b, const char *name, km_stage_sample_fn fn, void *arg);
 * with these semantics, after which these two functions become calls to it. */
#ifndef KM_MICRO_STAGE_TIME_H
#define KM_MICRO_STAGE_TIME_H

#include "bench.h"

/* fn timed like a row: warm-up, batches of >= 200 us (isolated: one launch per sample on an idle
 * stream, what a lone call costs), KM_STAGE_SAMPLES samples (one under --smoke). Returns the median
 * in seconds per launch, 0 after failing the case. */
double km_stage_time(km_bench *b, const char *name, km_enqueue_fn fn, void *arg, int isolated);

/* For a stage that two events on the bench stream cannot bracket (one direction of a pair running on
 * two streams): fn takes one sample itself, in seconds; 0 ok, -1 after failing the case. */
typedef int (*km_stage_sample_fn)(km_bench *b, void *arg, double *seconds);
double km_stage_sampled(km_bench *b, const char *name, km_stage_sample_fn fn, void *arg);

#endif
