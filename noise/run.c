/* run: the dispatch from a mode to its runner; the line a phase ends with is phase_line.c's. */
#include "run.h"

#include <stdio.h>

int noise_run_mode(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen)
{
    if (noise_opts_check(o, err, errlen) != 0)
        return -1;
    switch (o->mode) {
    case NOISE_MODE_STREAM: return noise_stream_run(o, ctx, err, errlen);
    case NOISE_MODE_IOR: return noise_ior_run(o, ctx, err, errlen);
    case NOISE_MODE_PINGPONG: return noise_pingpong_run(o, ctx, err, errlen);
    case NOISE_MODE_BUSY:
    case NOISE_MODE_IDLE: return noise_spin_run(o, ctx, err, errlen);
    default: snprintf(err, errlen, "unknown mode"); return -1;
    }
}
