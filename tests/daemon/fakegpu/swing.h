/* swing: the per-window swing of a GPU's busy fraction at a constant true speed, as the H200 of
 * docs/guard.md showed it (0.47 .. 0.74 over a 22 s lead-in, around 0.6): an AR(1) series of
 * relative deviations, reproducible from a seed. Shared by the fake NVML (which replays it) and the
 * guard's simulator (tests/daemon/test_gpu_source.c), so both see the same series. */
#ifndef COSCHED_SWING_H
#define COSCHED_SWING_H

#include <math.h>
#include <stdint.h>

/* The H200's: relative sd 0.11 per 1 s window with lag-1 autocorrelation 0.3 gives a range of
 * about 0.25 over 22 windows around 0.6 (the test checks it against 0.47 .. 0.74). */
#define SWING_H200_SD 0.11
#define SWING_H200_AR 0.3

typedef struct swing {
    uint64_t rng;
    double sd, ar, x; /* relative sd and lag-1 autocorrelation of the series; its last value */
    long index;       /* windows drawn so far */
} swing_t;

static inline double swing_uniform(swing_t *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return (double)(s->rng >> 11) / 9007199254740992.0;
}

static inline void swing_init(swing_t *s, uint64_t seed, double sd, double ar)
{
    s->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    s->sd = sd;
    s->ar = ar < 0 ? 0 : ar > 0.99 ? 0.99 : ar;
    s->x = 0;
    s->index = 0;
    for (int i = 0; i < 4; i++)
        swing_uniform(s); /* nearby seeds start far apart */
}

/* The next window's factor on the busy fraction: 1 + an AR(1) deviation whose marginal sd is sd
 * (kept within 0.3 .. 1.7: a busy fraction is bounded). */
static inline double swing_next(swing_t *s)
{
    double u = swing_uniform(s), v = swing_uniform(s);
    double g = sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
    s->x = s->ar * s->x + sqrt(1 - s->ar * s->ar) * s->sd * g;
    s->index++;
    double f = 1 + s->x;
    return f < 0.3 ? 0.3 : f > 1.7 ? 1.7 : f;
}

#endif
