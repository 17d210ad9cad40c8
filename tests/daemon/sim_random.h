/* sim_random: the seeded random numbers of the guard's simulated trainers (test_guard,
 * test_blame, test_guard_slow): xorshift64, the same sequence on every machine. */
#ifndef COSCHED_SIM_RANDOM_H
#define COSCHED_SIM_RANDOM_H

#include <math.h>
#include <stdint.h>

/* Uniform in [0, 1). state must not be 0. */
static inline double sim_uniform(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static inline double sim_gaussian(uint64_t *state)
{
    double u = sim_uniform(state), v = sim_uniform(state);
    return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

#endif
