/* The text format of a table, fitted to a terminal's width: the caption wrapped, KM_TEXT_HIDE columns
 * left out and a KM_TEXT_NOTE column's texts turned into references to numbered notes; then leave out a
 * column that only repeats the group heading above its rows, then put titles on two lines, then narrow
 * text columns (the last one, where the explanations are, first; never the first column, which names the
 * row) so that a cell too long for its column keeps its first words and a reference [n] to a note printed
 * in full below. */
#include <stdlib.h>
#include <string.h>

#include "console_line.h"
#include "table.h"

/* MIN_TEXT_W: the narrowest a text column gets (the last one: its title, or MIN_LAST_W); MIN_PREFIX:
 * fewer columns than this beside a note's reference and the cell is the reference alone. */
/* GAP: spaces between columns (TIGHT_GAP between two numeric columns when nothing else fits). */
enum { GAP = 2, TIGHT_GAP = 1, MIN_TEXT_W = 8, MIN_LAST_W = 4, MIN_PREFIX = 5, CELL_MAX = 1024, TITLE_LINES = 3, TITLE_MAX = 64 };
enum { CAPTION_INDENT = 2 }; /* a caption line's continuation lines */

typedef struct title_lines {
  size_t n;
  char line[TITLE_LINES][TITLE_MAX];
} title_lines;

typedef struct layout {
  const km_table *t;
  size_t width;
  int *shown;
  size_t *w, *natural, *gap; /* gap: spaces before the column (none before the first shown) */
  size_t *title_w;      /* the title's width as it will be printed */
  title_lines *titles;  /* as printed, bottom-aligned over the rule */
  size_t header_lines;
  char **cells;         /* nrows x ncols, as printed */
  char **notes;
  size_t nnotes;
} layout;

static size_t vis(const char *s) { return km_console_visible_width(s); }

static char *dup_text(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* A column whose every cell is its row's group heading says nothing the heading does not. */
static int repeats_group(const layout *L, size_t c) {
  const km_table *t = L->t;
  if (c == 0 || t->nrows == 0 || t->cols[c].right_align) return 0;
  for (size_t r = 0; r < t->nrows; r++)
    if (!t->group[r] || strcmp(L->cells[r * t->ncols + c], t->group[r]) != 0) return 0;
  return 1;
}

/* The title filled into lines of at most `width` columns, breaking at spaces (dropped) and after '/'
 * (kept). Returns the number of lines it needs (more than TITLE_LINES: does not fit). */
static size_t fill_title(const char *title, size_t width, title_lines *out) {
  memset(out, 0, sizeof *out);
  size_t n = 0, len = 0;
  for (const char *p = title; *p;) {
    size_t word = 0; /* up to and including a '/', or up to a space */
    while (p[word] && p[word] != ' ' && (word == 0 || p[word - 1] != '/')) word++;
    int spaced = len > 0 && p[-1] == ' ';
    if (word > width || word >= TITLE_MAX) return TITLE_LINES + 1;
    if (n == 0 || len + spaced + word > width) {
      if (++n > TITLE_LINES) return TITLE_LINES + 1;
      len = 0, spaced = 0;
    }
    char *line = out->line[n - 1];
    if (spaced) line[len++] = ' ';
    memcpy(line + len, p, word);
    len += word;
    line[len] = '\0';
    p += word;
    while (*p == ' ') p++;
  }
  out->n = n;
  return n;
}

/* The narrowest lines (at most TITLE_LINES) for a title, never narrower than the column's cells. */
static size_t wrap_title(const char *title, size_t natural, title_lines *out) {
  size_t full = strlen(title);
  for (size_t w = natural ? natural : 1; w < full; w++)
    if (fill_title(title, w, out) <= TITLE_LINES) return w;
  fill_title(title, full, out);
  return full;
}

static size_t total_width(const layout *L) {
  size_t sum = 0, shown = 0;
  for (size_t c = 0; c < L->t->ncols; c++)
    if (L->shown[c]) sum += L->w[c] + (shown++ ? L->gap[c] : 0);
  return sum;
}

/* Last resort: one space instead of two between right-aligned numbers, from the right, until it fits. */
static void tighten_gaps(layout *L) {
  for (size_t c = L->t->ncols; c-- > 1 && total_width(L) > L->width;) {
    size_t prev = c;
    while (prev-- > 0 && !L->shown[prev]) {}
    if (prev < c && L->shown[c] && L->shown[prev] && L->t->cols[c].right_align && L->t->cols[prev].right_align)
      L->gap[c] = TIGHT_GAP;
  }
}

/* The narrowest a column may get: its title on at most TITLE_LINES lines, and MIN_TEXT_W (MIN_LAST_W for
 * the explanations' column). */
static size_t floor_of(const layout *L, size_t c, size_t least) {
  title_lines scratch;
  size_t w = wrap_title(L->t->cols[c].title, 1, &scratch);
  return w > least ? w : least;
}

/* Column c at width w (at least its floor), its title wrapped to fit. */
static void set_width(layout *L, size_t c, size_t w) {
  L->w[c] = w;
  if (strlen(L->t->cols[c].title) <= w) return;
  L->title_w[c] = wrap_title(L->t->cols[c].title, w, &L->titles[c]);
  if (L->title_w[c] > L->w[c]) L->w[c] = L->title_w[c];
  if (L->titles[c].n > L->header_lines) L->header_lines = L->titles[c].n;
}

static void wrap_titles(layout *L) {
  for (size_t c = 0; c < L->t->ncols; c++)
    if (L->shown[c] && strlen(L->t->cols[c].title) > L->natural[c]) set_width(L, c, L->natural[c]);
}

/* Narrow text columns until the table fits: the last one (the explanations) first, then the others one
 * at a time from the widest, each as far as needed; never the first column, which names the row. */
static void narrow_text(layout *L) {
  const km_table *t = L->t;
  size_t last = 0;
  for (size_t c = 1; c < t->ncols; c++)
    if (L->shown[c] && !t->cols[c].right_align) last = c;
  if (last == 0) return;
  int *done = calloc(t->ncols, sizeof *done);
  if (!done) return;
  for (size_t c = last;;) {
    size_t total = total_width(L);
    if (total <= L->width) break;
    size_t fl = floor_of(L, c, c == last ? MIN_LAST_W : MIN_TEXT_W), over = total - L->width;
    if (L->w[c] > fl) set_width(L, c, L->w[c] - over > fl && L->w[c] > over ? L->w[c] - over : fl);
    done[c] = 1;
    size_t next = 0; /* the widest text column not narrowed yet */
    for (size_t k = 1; k < t->ncols; k++)
      if (!done[k] && L->shown[k] && !t->cols[k].right_align && (next == 0 || L->w[k] > L->w[next])) next = k;
    if (next == 0) break;
    c = next;
  }
  free(done);
}

static size_t note_number(layout *L, const char *text) {
  for (size_t i = 0; i < L->nnotes; i++)
    if (strcmp(L->notes[i], text) == 0) return i + 1;
  char **grown = realloc(L->notes, (L->nnotes + 1) * sizeof *grown);
  char *copy = dup_text(text);
  if (!grown || !copy) {
    free(copy);
    if (grown) L->notes = grown;
    return 0;
  }
  L->notes = grown;
  L->notes[L->nnotes++] = copy;
  return L->nnotes;
}

/* "first words [n]" within width columns, or "[n]" alone when no word fits beside it. */
static void note_cell(char **cell, size_t width, size_t n) {
  char ref[32], out[CELL_MAX];
  snprintf(ref, sizeof ref, "[%zu]", n);
  const char *s = *cell;
  size_t room = width > strlen(ref) + 1 ? width - strlen(ref) - 1 : 0, keep = 0, cols = 0, cut = 0;
  if (room < MIN_PREFIX) room = 0;
  while (s[keep] && cols < room) {
    keep++;
    while ((s[keep] & 0xC0) == 0x80) keep++;
    cols++;
    if (s[keep] == ' ' || s[keep] == ',' || s[keep] == ';' || s[keep] == '(') cut = keep;
  }
  if (s[keep] && s[keep] != ' ') keep = cut; /* end on a word boundary */
  while (keep > 0 && strchr(" ,;:(", s[keep - 1])) keep--;
  if (keep > 0 && keep < sizeof out - sizeof ref - 2)
    snprintf(out, sizeof out, "%.*s %s", (int)keep, s, ref);
  else
    snprintf(out, sizeof out, "%s", ref);
  char *d = dup_text(out);
  if (!d) return;
  free(*cell);
  *cell = d;
}

static void make_notes(layout *L) {
  const km_table *t = L->t;
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 1; c < t->ncols; c++) {
      char **cell = &L->cells[r * t->ncols + c];
      if (!L->shown[c] || t->cols[c].right_align || t->text_mode[c] == KM_TEXT_NOTE || vis(*cell) <= L->w[c]) continue;
      size_t n = note_number(L, *cell);
      if (n) note_cell(cell, L->w[c], n);
    }
}

/* A KM_TEXT_NOTE column's text cell as its reference "[n]" (an empty cell stays as printed); 0: no memory. */
static int note_reference(layout *L, size_t r, size_t c, char *buf, size_t len) {
  const km_cell *cell = &L->t->cells[r * L->t->ncols + c];
  if (cell->kind != KM_CELL_TEXT || !cell->text[0]) return 1;
  size_t n = note_number(L, cell->text);
  if (n) snprintf(buf, len, "[%zu]", n);
  return n != 0;
}

static void put_cell(FILE *out, const char *s, size_t width, int right, size_t gap, int last) {
  size_t w = vis(s), pad = width > w ? width - w : 0;
  if (gap) fprintf(out, "%*s", (int)gap, "");
  if (right) fprintf(out, "%*s", (int)pad, "");
  fputs(s, out);
  if (!right && !last) fprintf(out, "%*s", (int)pad, "");
}

static size_t last_shown(const layout *L) {
  size_t last = 0;
  for (size_t c = 0; c < L->t->ncols; c++)
    if (L->shown[c]) last = c;
  return last;
}

/* Lines are composed in memory so trailing spaces (empty last cells, short header parts) are dropped:
 * line_end writes the line without them and starts the next. */
static void line_end(FILE **m, char **buf, size_t *len, FILE *out) {
  if (!*m) return;
  fflush(*m);
  /* the line is what was written since the last rewind: a shorter line leaves the longer one's tail in the
   * buffer, so its length is the stream position, not strlen */
  long pos = ftell(*m);
  size_t n = pos > 0 ? (size_t)pos : 0;
  if (n > *len) n = *len;
  while (n > 0 && (*buf)[n - 1] == ' ') n--;
  fwrite(*buf, 1, n, out);
  fputc('\n', out);
  rewind(*m);
  (*buf)[0] = '\0';
}

static void print_header(const layout *L, FILE *out) {
  const km_table *t = L->t;
  size_t last = last_shown(L), len = 0;
  char *buf = NULL;
  FILE *m = open_memstream(&buf, &len);
  for (size_t line = 0; m && line < L->header_lines; line++) {
    int first = 1;
    for (size_t c = 0; c < t->ncols; c++) {
      if (!L->shown[c]) continue;
      const title_lines *tl = &L->titles[c];
      size_t skip = L->header_lines - tl->n; /* bottom-aligned */
      put_cell(m, line >= skip ? tl->line[line - skip] : "", L->w[c], t->cols[c].right_align, first ? 0 : L->gap[c],
               c == last);
      first = 0;
    }
    line_end(&m, &buf, &len, out);
  }
  int first = 1;
  for (size_t c = 0; m && c < t->ncols; c++) {
    if (!L->shown[c]) continue;
    if (!first) fprintf(m, "%*s", (int)L->gap[c], "");
    for (size_t i = 0; i < L->w[c]; i++) fputc('-', m);
    first = 0;
  }
  line_end(&m, &buf, &len, out);
  if (m) fclose(m);
  free(buf);
}

/* Text wrapped at width on spaces: the first line after lead, the others indented by indent. */
static void print_wrapped(FILE *out, const char *lead, size_t indent, const char *text, size_t width) {
  size_t col = strlen(lead);
  int fresh = 1; /* nothing on this line yet after the lead or the indent */
  fputs(lead, out);
  for (const char *p = text;;) {
    while (*p == ' ') p++;
    size_t word = strcspn(p, " ");
    if (word == 0) break;
    if (!fresh && col + 1 + word > width) {
      fprintf(out, "\n%*s", (int)indent, "");
      col = indent;
      fresh = 1;
    }
    if (!fresh) {
      fputc(' ', out);
      col++;
    }
    fwrite(p, 1, word, out);
    col += word;
    p += word;
    fresh = 0;
  }
  fputc('\n', out);
}

/* A note wrapped at the table's width, continuation lines under its text. */
static void print_note(FILE *out, size_t n, const char *text, size_t width) {
  char ref[32];
  snprintf(ref, sizeof ref, "[%zu] ", n);
  print_wrapped(out, ref, strlen(ref), text, width);
}

static void layout_free(layout *L) {
  if (L->cells)
    for (size_t i = 0; i < L->t->nrows * L->t->ncols; i++) free(L->cells[i]);
  for (size_t i = 0; i < L->nnotes; i++) free(L->notes[i]);
  free(L->cells);
  free(L->notes);
  free(L->shown);
  free(L->w);
  free(L->natural);
  free(L->gap);
  free(L->titles);
  free(L->title_w);
}

static int layout_make(layout *L, const km_table *t, size_t width) {
  memset(L, 0, sizeof *L);
  L->t = t;
  L->width = width;
  size_t nc = t->ncols, cells = t->nrows * nc;
  L->shown = calloc(nc, sizeof *L->shown);
  L->w = calloc(nc, sizeof *L->w);
  L->natural = calloc(nc, sizeof *L->natural);
  L->gap = calloc(nc, sizeof *L->gap);
  L->titles = calloc(nc, sizeof *L->titles);
  L->title_w = calloc(nc, sizeof *L->title_w);
  L->cells = calloc(cells ? cells : 1, sizeof *L->cells);
  if (!L->shown || !L->w || !L->natural || !L->gap || !L->titles || !L->title_w || !L->cells) return -1;
  char buf[CELL_MAX];
  for (size_t r = 0; r < t->nrows; r++)
    for (size_t c = 0; c < nc; c++) {
      km_table_cell_text(t, r, c, 1, buf, sizeof buf);
      if (t->text_mode[c] == KM_TEXT_NOTE && !note_reference(L, r, c, buf, sizeof buf)) return -1;
      if (!(L->cells[r * nc + c] = dup_text(buf))) return -1;
      if (vis(buf) > L->natural[c]) L->natural[c] = vis(buf);
    }
  for (size_t c = 0; c < nc; c++) {
    L->shown[c] = t->text_mode[c] != KM_TEXT_HIDE;
    L->gap[c] = GAP;
    L->title_w[c] = strlen(t->cols[c].title);
    L->titles[c].n = 1;
    snprintf(L->titles[c].line[0], TITLE_MAX, "%s", t->cols[c].title);
    L->w[c] = L->natural[c] > L->title_w[c] ? L->natural[c] : L->title_w[c];
  }
  L->header_lines = 1;
  for (size_t c = 0; total_width(L) > width && c < nc; c++)
    if (repeats_group(L, c)) L->shown[c] = 0;
  if (total_width(L) > width) wrap_titles(L);
  if (total_width(L) > width) narrow_text(L);
  if (total_width(L) > width) tighten_gaps(L);
  make_notes(L);
  return 0;
}

void km_table_print_text(const km_table *t, size_t width, FILE *out) {
  layout L;
  if (layout_make(&L, t, width) != 0) {
    layout_free(&L);
    fprintf(out, "(out of memory printing %s)\n", t->title);
    return;
  }
  if (t->title[0]) fprintf(out, "%s\n", t->title);
  for (size_t i = 0; i < t->ncaption; i++) print_wrapped(out, "", CAPTION_INDENT, t->caption[i], width);
  if (t->ncaption) fputc('\n', out);
  print_header(&L, out);
  size_t last = last_shown(&L), len = 0;
  char *buf = NULL;
  FILE *m = open_memstream(&buf, &len);
  for (size_t r = 0; r < t->nrows; r++) {
    if (t->group[r] && (r == 0 || !t->group[r - 1] || strcmp(t->group[r], t->group[r - 1]) != 0))
      fprintf(out, "[%s]\n", t->group[r]);
    int first = 1;
    for (size_t c = 0; m && c < t->ncols; c++) {
      if (!L.shown[c]) continue;
      put_cell(m, L.cells[r * t->ncols + c], L.w[c], t->cols[c].right_align, first ? 0 : L.gap[c], c == last);
      first = 0;
    }
    line_end(&m, &buf, &len, out);
  }
  if (m) fclose(m);
  free(buf);
  if (L.nnotes) {
    fputs("\nnotes:\n", out);
    for (size_t i = 0; i < L.nnotes; i++) print_note(out, i + 1, L.notes[i], width);
  }
  layout_free(&L);
}
