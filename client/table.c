/* table: collect the rows first, then print each column as wide as its widest cell; a cell is
 * never cut, so what a user copies from a column is the whole value. */
#include "table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void table_init(table_t *t, int ncols)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
}

int table_row(table_t *t, ...)
{
    if (t->nrows == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        char **cells = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof *cells);
        if (!cells)
            return -1;
        t->cells = cells;
        t->cap = cap;
    }
    char **row = &t->cells[(size_t)t->nrows * (size_t)t->ncols];
    va_list ap;
    va_start(ap, t);
    int ok = 1;
    for (int c = 0; c < t->ncols; c++) {
        const char *cell = va_arg(ap, const char *);
        row[c] = strdup(cell && *cell ? cell : "-");
        ok &= row[c] != NULL;
    }
    va_end(ap);
    t->nrows++;
    return ok ? 0 : -1;
}

void table_print(const table_t *t, FILE *out)
{
    int *width = calloc(t->ncols > 0 ? (size_t)t->ncols : 1, sizeof *width);
    if (!width)
        return;
    for (int r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
            int len = cell ? (int)strlen(cell) : 1;
            if (len > width[c])
                width[c] = len;
        }
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
            if (c + 1 < t->ncols)
                fprintf(out, "%-*s  ", width[c], cell ? cell : "-");
            else
                fprintf(out, "%s\n", cell ? cell : "-");
        }
    }
    free(width);
}

void table_free(table_t *t)
{
    for (int i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
