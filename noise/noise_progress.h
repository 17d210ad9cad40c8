/* noise_progress: the "progress" lines of a noise phase: every --report-every seconds, the bytes
 * and operations done since the previous line, so a reader sees a long run as it goes. */
#ifndef COSCHED_NOISE_PROGRESS_H
#define COSCHED_NOISE_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

#include "opts.h"
#include "run.h"

/* One worker's running totals. Only that worker writes them, so adding is a relaxed load
 * and store (no locked instruction); the reporting thread reads them relaxed. A cache line
 * each, so one worker's stores never take a line away from another. */
struct noise_meter {
    _Alignas(64) _Atomic uint64_t bytes;
    _Atomic uint64_t ops;
};

/* By the meter's single writer only. */
static inline void noise_meter_add(struct noise_meter *m, uint64_t bytes, uint64_t ops)
{
    atomic_store_explicit(&m->bytes, atomic_load_explicit(&m->bytes, memory_order_relaxed) + bytes,
                          memory_order_relaxed);
    atomic_store_explicit(&m->ops, atomic_load_explicit(&m->ops, memory_order_relaxed) + ops, memory_order_relaxed);
}

struct noise_progress {
    struct noise_ctx *ctx;
    const struct noise_opts *o;
    const char *phase;
    const struct noise_meter *meters; /* summed for each line; may be NULL (idle) */
    int nmeters;
    const struct noise_clock *clock; /* the times below are its; NULL (as init sets it): noise_now */
    double origin;                   /* the clock's time when the phase started */
    double due;                      /* when the next line is due; 0: reporting is off */
    double last;                     /* when the previous line was printed (origin at first) */
    uint64_t last_bytes, last_ops;   /* meter sums at the previous line */
};

/* Reporting is on for noise (o->duration > 0) with o->report_every > 0; lines fall due at
 * origin + k x report_every. Meters are attached later (noise_team_run does it). */
void noise_progress_init(struct noise_progress *p, struct noise_ctx *ctx, const struct noise_opts *o, const char *phase,
                         double origin);

/* Print one line if one is due at `now` (the progress clock's time): the increments since the
 * previous line. Lines that fell due while the caller could not print are merged into this one. */
void noise_progress_poll(struct noise_progress *p, double now);

/* Sleep until `end` (the progress clock's time) or a stop, printing lines as they fall due:
 * for the modes whose only thread has nothing else to do (idle, an odd rank out). */
void noise_progress_sleep_until(struct noise_progress *p, double end);

#endif
