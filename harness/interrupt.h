/* Ctrl-C during a run. The first SIGINT asks the run to stop: the case being timed ends as skipped, the
 * cases after it are not run, and what finished is written marked incomplete. A second SIGINT stops the
 * process at once (exit status 130) after removing the temporary file of a result being written, so no
 * half-written result and no PATH.tmp.XXXXXX is left. */
#ifndef KM_INTERRUPT_H
#define KM_INTERRUPT_H

/* The skip message of a case that the interruption stopped or kept from running. */
#define KM_INTERRUPTED_MESSAGE "interrupted (SIGINT): not measured"
/* Exit status of a run that was interrupted (128 + SIGINT, as a shell reports it). */
#define KM_EXIT_INTERRUPTED 130

/* Install the handler. 0 ok, -1 when sigaction fails. */
int km_interrupt_install(void);
/* How many SIGINTs arrived since the handler was installed. */
int km_interrupt_count(void);
/* The temporary file being written (NULL: none), removed by the second SIGINT before it exits. */
void km_interrupt_track_temp(const char *path);

#endif
