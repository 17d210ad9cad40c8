/* run: what every mode shares while it runs: the output stream, the placement, MPI rank,
 * the totals for the summary line, and the dispatch from a mode to its runner (the lines the
 * modes print with it are phase_line.h's). */
#ifndef COSCHED_NOISE_RUN_H
#define COSCHED_NOISE_RUN_H

#include <stddef.h>
#include <jansson.h>

#include "noise_clock.h"
#include "opts.h"
#include "out.h"
#include "place.h"

struct noise_ctx {
    struct noise_out *out;
    struct noise_place *place;
    int rank, nranks;        /* MPI rank and size; 0 and 1 when MPI is not in use */
    const char *config_name; /* config set of the current pattern step, or NULL */
    long step;               /* index of the current pattern step, or -1 */
    /* What busy and idle modes pace by, end on and time their phase with, and what a pattern's
     * --duration is counted on; NULL (as in the worker): noise_now and noise_sleep. A test
     * gives a fake one to check the duty cycle and the cap without the scheduler in them. */
    const struct noise_clock *clock;
    /* Totals for the summary line. */
    double bytes, ops;
    long phases;
};

/* Run o->mode once, as a benchmark or as noise for o->duration. 0, or -1 with err set. */
int noise_run_mode(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen);

/* The mode runners behind noise_run_mode. */
int noise_stream_run(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen);
/* Free the arrays a pattern's memory steps keep for each other (noise_pattern_run calls it). */
void noise_stream_release(void);
int noise_ior_run(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen);
int noise_pingpong_run(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen);
int noise_spin_run(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen);

#endif
