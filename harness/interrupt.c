/* The SIGINT handler. A signal handler can reach only static storage, so the count and the path of the
 * temporary file in flight live here (the one file-scope state in the harness); the handler calls only
 * async-signal-safe functions (unlink, _exit). */
#include "interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t interrupts;
static volatile sig_atomic_t temp_valid;
static char temp_path[4096];

static void on_sigint(int sig) {
  (void)sig;
  if (++interrupts < 2) return;
  if (temp_valid) unlink(temp_path);
  static const char msg[] = "\nmicro: second interrupt: stopped at once, nothing written\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
  _exit(KM_EXIT_INTERRUPTED);
}

int km_interrupt_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART; /* a read or write the signal lands in goes on */
  interrupts = 0;
  return sigaction(SIGINT, &sa, NULL) == 0 ? 0 : -1;
}

int km_interrupt_count(void) { return (int)interrupts; }

void km_interrupt_track_temp(const char *path) {
  temp_valid = 0; /* the handler never sees a half-copied path */
  if (!path || strlen(path) >= sizeof temp_path) return;
  memcpy(temp_path, path, strlen(path) + 1);
  temp_valid = 1;
}
