/* Atomic result files. The temporary name is made with mkstemp in the target's folder so the final
 * rename stays on one file system; any failure removes it, and so does a second SIGINT while it exists
 * (harness/interrupt.h). */
#include "output_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interrupt.h"

static int make_temp(const char *path, char *tmp, size_t len) {
  if ((size_t)snprintf(tmp, len, "%s.tmp.XXXXXX", path) >= len) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = mkstemp(tmp);
  if (fd >= 0) km_interrupt_track_temp(tmp);
  return fd;
}

static void remove_temp(const char *tmp) {
  unlink(tmp);
  km_interrupt_track_temp(NULL);
}

int km_output_check_writable(const char *path, const char *flag, char *err, size_t errlen) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s '%s': is a directory (expected a file path)", flag, path);
    return -1;
  }
  char tmp[4096];
  int fd = make_temp(path, tmp, sizeof tmp);
  if (fd < 0) {
    snprintf(err, errlen, "%s '%s': cannot write there (%s)", flag, path, strerror(errno));
    return -1;
  }
  close(fd);
  remove_temp(tmp);
  return 0;
}

int km_output_write_text(const char *path, const char *text, char *err, size_t errlen) {
  char tmp[4096];
  int fd = make_temp(path, tmp, sizeof tmp);
  if (fd < 0) {
    snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
    return -1;
  }
  FILE *f = fdopen(fd, "w");
  size_t n = strlen(text);
  int ok = f && fwrite(text, 1, n, f) == n && fflush(f) == 0 && fsync(fd) == 0;
  int saved = errno;
  if (f)
    ok = (fclose(f) == 0) && ok;
  else
    close(fd);
  if (ok) {
    /* mkstemp makes the file 0600; results are for sharing */
    chmod(tmp, 0644);
    if (rename(tmp, path) == 0) {
      km_interrupt_track_temp(NULL);
      return 0;
    }
    saved = errno;
  }
  remove_temp(tmp);
  snprintf(err, errlen, "cannot write '%s': %s", path, strerror(saved));
  return -1;
}

int km_output_write_json(const char *path, const cJSON *doc, char *err, size_t errlen) {
  char *text = cJSON_Print(doc);
  if (!text) {
    snprintf(err, errlen, "cannot write '%s': out of memory formatting JSON", path);
    return -1;
  }
  size_t n = strlen(text);
  char *with_nl = realloc(text, n + 2);
  if (!with_nl) {
    free(text);
    snprintf(err, errlen, "cannot write '%s': out of memory", path);
    return -1;
  }
  with_nl[n] = '\n';
  with_nl[n + 1] = '\0';
  int rc = km_output_write_text(path, with_nl, err, errlen);
  free(with_nl);
  return rc;
}
