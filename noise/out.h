/* out: the JSON-lines stream a worker writes (stdout or --output FILE); one object per
 * line, flushed at once, because the daemon reads it live from the worker's stdout. */
#ifndef COSCHED_NOISE_OUT_H
#define COSCHED_NOISE_OUT_H

#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#define NOISE_SCHEMA_VERSION 1

struct noise_out {
    FILE *fp;
    int owned;
    int rank; /* added to every line when >= 0 (MPI runs) */
};

/* path NULL or "" means stdout. */
int noise_out_open(struct noise_out *out, const char *path, int rank, char *err, size_t errlen);

/* Write obj as one line and flush; takes over the reference to obj. */
void noise_out_emit(struct noise_out *out, json_t *obj);

void noise_out_close(struct noise_out *out);

#endif
