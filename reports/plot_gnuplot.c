/* Running gnuplot for `report plot`: found on PATH (so `env PATH=... report plot` tests the fallback),
 * run in the output folder on plots.gp, its images written under temporary names and renamed into
 * place only when it exits 0, so a failed run leaves no half-drawn image. */
#include "plot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define KM_PLOT_TMP_SUFFIX ".tmp"

int km_plot_find_gnuplot(char *buf, size_t len) {
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t n = strcspn(path, ":");
    /* an empty PATH entry means the current folder */
    if ((size_t)snprintf(buf, len, "%.*s/gnuplot", (int)n, n ? path : ".") < len && access(buf, X_OK) == 0)
      return 0;
    path += n + (path[n] == ':');
  }
  return -1;
}

static const char *const image_exts[] = {"svg", "png"};

/* Rename (keep != 0) or remove every chart's temporary images. 0 when every rename worked. */
static int settle_images(const km_plot_chart charts[KM_PLOT_CHART_COUNT], const char *dir, int keep, char *err,
                         size_t errlen) {
  int rc = 0;
  for (size_t c = 0; c < KM_PLOT_CHART_COUNT; c++) {
    if (!charts[c].nseries) continue;
    for (size_t e = 0; e < sizeof image_exts / sizeof image_exts[0]; e++) {
      char final[4096], tmp[4200];
      snprintf(final, sizeof final, "%s/%s.%s", dir, charts[c].stem, image_exts[e]);
      snprintf(tmp, sizeof tmp, "%s" KM_PLOT_TMP_SUFFIX, final);
      if (keep && rc == 0 && rename(tmp, final) != 0) {
        snprintf(err, errlen, "gnuplot did not produce %s (%s)", final, strerror(errno));
        rc = -1;
      }
      unlink(tmp);
    }
  }
  return rc;
}

int km_plot_run_gnuplot(const char *gnuplot, const km_plot_chart charts[KM_PLOT_CHART_COUNT], const char *dir,
                        char *err, size_t errlen) {
  fflush(NULL); /* the child would write out (again) whatever the parent's streams still buffer */
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errlen, "cannot start gnuplot: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    /* gnuplot's own messages go to our stderr; its stdout would mix with the report's */
    if (chdir(dir) != 0 || !freopen("/dev/null", "w", stdout)) _exit(127);
    execl(gnuplot, "gnuplot", "-e", "out_suffix='" KM_PLOT_TMP_SUFFIX "'", "plots.gp", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      status = -1;
      break;
    }
  int ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    settle_images(charts, dir, 0, err, errlen);
    snprintf(err, errlen, "%s failed on %s/plots.gp (exit status %d): no images written", gnuplot, dir,
             status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return -1;
  }
  if (settle_images(charts, dir, 1, err, errlen) == 0) return 0;
  settle_images(charts, dir, 0, err, errlen); /* keep the first error; drop what is left */
  return -1;
}

static int make_dir(const char *dir, char *err, size_t errlen) {
  struct stat st;
  if (mkdir(dir, 0777) == 0 || (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))) return 0;
  snprintf(err, errlen, "--out '%s': cannot create the folder (%s)", dir,
           errno == EEXIST ? "a file of that name exists" : strerror(errno));
  return -1;
}

static void say_missing(const km_plot_chart charts[KM_PLOT_CHART_COUNT], FILE *out) {
  for (size_t c = 0; c < KM_PLOT_CHART_COUNT; c++)
    if (!charts[c].nseries) fprintf(out, "%s: no rows in this file (it needs %s)\n", charts[c].stem, charts[c].needs);
}

int km_plot_command(const km_run_file *f, const cJSON *sim, const char *dir, FILE *out, char *err, size_t errlen) {
  km_plot_chart charts[KM_PLOT_CHART_COUNT];
  char gnuplot[4096];
  km_plot_collect(f, sim, charts);
  int n = 0, rc = 0;
  if (make_dir(dir, err, errlen) || (n = km_plot_write_files(charts, f->path, dir, err, errlen)) < 0) {
    km_plot_charts_free(charts);
    return 2;
  }
  say_missing(charts, out);
  if (n == 0) {
    fprintf(out, "nothing to plot in %s: no files written\n", f->path);
  } else if (km_plot_find_gnuplot(gnuplot, sizeof gnuplot) != 0) {
    fprintf(out, "gnuplot not found on PATH: wrote the data (%d .dat files) and %s/plots.gp; "
                 "draw them with: cd %s && gnuplot plots.gp\n", n, dir, dir);
  } else if (km_plot_run_gnuplot(gnuplot, charts, dir, err, errlen) != 0) {
    rc = 1;
  } else {
    for (size_t c = 0; c < KM_PLOT_CHART_COUNT; c++)
      if (charts[c].nseries) fprintf(out, "wrote %s/%s.svg and %s.png\n", dir, charts[c].stem, charts[c].stem);
  }
  km_plot_charts_free(charts);
  return rc;
}
