/* Ctrl-C without a GPU, in child processes: the first SIGINT only counts (the run stops after the case
 * in progress and still writes its results, atomically, leaving no temporary file); the second stops
 * the process at once with status 130 and removes the temporary file of a result being written. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "interrupt.h"
#include "output_file.h"
#include "test_util.h"

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Entries of dir other than . and .. whose name contains `part`. */
static int count_matching(const char *dir, const char *part) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, part)) n++;
  if (d) closedir(d);
  return n;
}

static int child_status(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* First SIGINT: the process goes on and writes its result whole. Exit 0 when it did. */
static void first_interrupt_child(const char *path) {
  if (km_interrupt_install() != 0) _exit(10);
  raise(SIGINT);
  if (km_interrupt_count() != 1) _exit(11);
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddBoolToObject(doc, "incomplete", 1);
  char err[256];
  int rc = km_output_write_json(path, doc, err, sizeof err);
  cJSON_Delete(doc);
  _exit(rc == 0 ? 0 : 12);
}

/* Second SIGINT while a temporary file exists: the handler removes it and exits 130. */
static void second_interrupt_child(const char *tmp) {
  if (km_interrupt_install() != 0) _exit(10);
  FILE *f = fopen(tmp, "w");
  if (!f) _exit(11);
  fputs("{\"half\": ", f);
  fclose(f);
  km_interrupt_track_temp(tmp);
  raise(SIGINT);
  if (!exists(tmp)) _exit(12); /* the first one must not touch it */
  raise(SIGINT);
  _exit(13); /* not reached */
}

int main(void) {
  char dir[] = "/tmp/km_interrupt_XXXXXX";
  KM_EXPECT(mkdtemp(dir) != NULL);
  char path[256], tmp[256];
  snprintf(path, sizeof path, "%s/run.json", dir);
  snprintf(tmp, sizeof tmp, "%s/run.json.tmp.abc123", dir);

  pid_t pid = fork();
  if (pid == 0) first_interrupt_child(path);
  KM_EXPECT_MSG(child_status(pid) == 0, "the first SIGINT stopped the write");
  KM_EXPECT(exists(path));
  KM_EXPECT(count_matching(dir, ".tmp.") == 0);

  pid = fork();
  if (pid == 0) second_interrupt_child(tmp);
  int st = child_status(pid);
  KM_EXPECT_MSG(st == KM_EXIT_INTERRUPTED, "second SIGINT: status %d, expected %d", st, KM_EXIT_INTERRUPTED);
  KM_EXPECT_MSG(!exists(tmp), "the temporary file was left behind");

  unlink(path);
  rmdir(dir);
  return km_test_finish("cpu_interrupt");
}
