/* experiment_block_size: the blocks' length from time; see experiment_block_size.h. */
#include "experiment_block_size.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static const double LONGEST_S = 120.0; /* a step of 24 s still gets four whole steps, one of 60 s one */

/* bench/noise_transient.py on the project's 2-core VM (2026-11-29, 16 switches each way, 5 ms
 * bins): memory noise's effect (+38 %, -27 %) was complete in the first 5 ms after a switch; io's
 * (+-4 %) took 0.5-0.8 s (the page cache, then its write-back); cpu and network noise on the other
 * core had no effect on the probe to time. The steps that begin this long after a change are kept
 * (the one under way at the change is never kept: it began before). */
static const struct {
    const char *kind;
    double seconds;
} SETTLE[] = {
    {"memory", 0.01},
    {"cpu", 0.01},
    {"network", 0.05},
    {"io", 0.8},
};

double exp_noise_settle_seconds(const char *noise)
{
    for (size_t i = 0; i < sizeof SETTLE / sizeof SETTLE[0]; i++)
        if (noise && strcmp(noise, SETTLE[i].kind) == 0)
            return SETTLE[i].seconds;
    return 0.8;
}

exp_block_size_t exp_block_size(double step_s, double settle_s, double shortest_s)
{
    double step = step_s > 0 ? step_s : 0.025, drop = fmax(0, settle_s);
    exp_block_size_t b = {.drop = drop};
    b.seconds = fmin(LONGEST_S, fmax(shortest_s, drop + (EXP_BLOCK_FEWEST_STEPS + 1) * step));
    b.steps = (int)fmax(1, floor((b.seconds - drop) / step - 1 + 0.5));
    return b;
}

double exp_seconds_to_precision(double half_width, int npairs, double block_s, double target)
{
    if (!(half_width > 0) || !isfinite(half_width) || npairs <= 0 || !(target > 0))
        return -1;
    double pairs = npairs * (half_width / target) * (half_width / target);
    pairs = fmax(pairs, EXP_PRECISE_PAIRS);
    return pairs <= npairs ? 0 : pairs * 2 * block_s;
}
