/* experiment_window: what a noise moved in a window of time, from its reports — its progress lines
 * (the bytes since the one before) and at its end its phase line (its total) — summed over its
 * processes: the guarded configuration's noise throughput. A noise the guard holds prints nothing
 * until it is let go; one held through the window moved nothing in it, which is 0 MB/s, not unknown.
 * Pure: lines in, a figure out; experiment_guarded.c feeds it. */
#ifndef COSCHED_EXPERIMENT_WINDOW_H
#define COSCHED_EXPERIMENT_WINDOW_H

#include <stdbool.h>

#include <jansson.h>

typedef struct exp_window_process {
    double last_elapsed;   /* its last report's seconds into its run */
    double reported_bytes; /* what its progress lines added up to */
    bool in_window;        /* a report of it began in the window */
    bool ended;            /* its phase line, the last report, was read */
} exp_window_process_t;

typedef struct exp_window {
    double from, to;               /* the window, Unix seconds: from the guard's settle to the noise's stop */
    int runs, per_run;             /* noise runs, and processes in each (an MPI noise run has two) */
    int current;                   /* the run whose lines are fed now */
    double bytes, seconds;         /* summed over the processes */
    exp_window_process_t *process; /* [2 x runs]: run k's processes are 2k and 2k + 1 */
} exp_window_t;

/* A window over runs noise runs of per_run processes each; from and to are set before the lines
 * are fed. 0, or -1 when out of memory. */
int exp_window_init(exp_window_t *w, int runs, int per_run);
void exp_window_free(exp_window_t *w);

/* One line of run w->current (an exp_follow callback): a report whose interval began in the window
 * counts, bytes and seconds. Other lines, and any after the phase line, are ignored. */
void exp_window_line(json_t *line, void *arg);

/* The throughput in the window, MB/s summed over the processes, once every line was fed: a process
 * that reported nothing from the window's start to its end was held all along (a running one
 * reports every fraction of a second) and adds the window's length at 0 bytes. -1 when the window
 * is empty. */
double exp_window_mbs(const exp_window_t *w);

#endif
