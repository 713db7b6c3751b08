/* Result files are written whole or not at all: a temporary file beside the target, then rename. */
#ifndef KM_OUTPUT_FILE_H
#define KM_OUTPUT_FILE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Before anything runs: can a file be created in PATH's folder (and PATH is not a folder)?
 * 0 yes; -1 with one line in err. Leaves nothing behind. */
int km_output_check_writable(const char *path, const char *flag, char *err, size_t errlen);
/* Write text to PATH atomically. 0 ok; -1 with one line in err and no file (nor temporary) left. */
int km_output_write_text(const char *path, const char *text, char *err, size_t errlen);
/* Print the JSON document (indented) and write it atomically. */
int km_output_write_json(const char *path, const cJSON *doc, char *err, size_t errlen);

#endif
