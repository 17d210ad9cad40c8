/* table: text tables whose columns are as wide as their widest cell, two spaces apart (cosched
 * topo), so that a long CPU list or a large number never runs into the next column. */
#ifndef COSCHED_TABLE_H
#define COSCHED_TABLE_H

#include <stdio.h>

typedef struct table {
    int ncols;
    int nrows;
    int cap;      /* rows allocated */
    char **cells; /* nrows x ncols, row-major, owned */
} table_t;

void table_init(table_t *t, int ncols);

/* Append a row of ncols cells (copied; NULL or "" is printed as "-"). -1 when out of memory. */
int table_row(table_t *t, ...);

/* Every row, each cell but the last padded to its column's width. */
void table_print(const table_t *t, FILE *out);

void table_free(table_t *t);

#endif
