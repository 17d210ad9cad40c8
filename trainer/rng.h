/* rng: counter-based random numbers (splitmix64) so every draw is a pure function of its keys;
 * shuffles and augmentation then need no state in checkpoints and agree across ranks. */
#ifndef COSCHED_TRAIN_RNG_H
#define COSCHED_TRAIN_RNG_H

#include <math.h>
#include <stdint.h>

static inline uint64_t train_rng_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A stream: state advanced by next(). */
typedef struct {
    uint64_t s;
} train_rng;

static inline train_rng train_rng_seed(uint64_t a, uint64_t b, uint64_t c)
{
    train_rng r = {train_rng_mix(a ^ train_rng_mix(b ^ train_rng_mix(c)))};
    return r;
}

static inline uint64_t train_rng_next(train_rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return train_rng_mix(r->s);
}

/* uniform in [0,1) */
static inline double train_rng_uniform(train_rng *r)
{
    return (train_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static inline uint64_t train_rng_below(train_rng *r, uint64_t n)
{
    return train_rng_next(r) % n;
}

static inline double train_rng_normal(train_rng *r)
{
    double u1 = train_rng_uniform(r), u2 = train_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
