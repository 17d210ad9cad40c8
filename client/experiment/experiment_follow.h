/* experiment_follow: read a file another process is still writing, one JSON line at a time —
 * the trainer's step lines and the noise's phase lines while their runs go on. */
#ifndef COSCHED_EXPERIMENT_FOLLOW_H
#define COSCHED_EXPERIMENT_FOLLOW_H

#include <stdio.h>

#include <jansson.h>

typedef struct exp_follow {
    char path[4096];
    long offset; /* where the next unread line starts */
} exp_follow_t;

/* Call each(line, arg) for every whole line written since the last call that is a JSON object
 * (others are skipped; a line still being written waits for the next call). Returns the lines
 * read, or -1 when the file cannot be read (it may not exist yet). */
int exp_follow(exp_follow_t *f, void (*each)(json_t *line, void *arg), void *arg);

#endif
