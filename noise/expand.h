/* expand: walk a pattern tree step by step. An iterator rather than a list, because
 * `repeat: forever` has no end; the same seed always draws the same random steps. */
#ifndef COSCHED_NOISE_EXPAND_H
#define COSCHED_NOISE_EXPAND_H

#include <stdint.h>

#include "pattern.h"

struct noise_expand_frame {
    const struct noise_node *node;
    size_t next;  /* SEQUENCE: next child; STEP: 1 once produced */
    long done;    /* SEQUENCE: rounds completed */
    uint64_t rng; /* RANDOM: generator state */
    double left;  /* RANDOM: seconds still to draw */
};

struct noise_expand {
    struct noise_expand_frame stack[NOISE_MAX_DEPTH + 2];
    int depth;
};

void noise_expand_init(struct noise_expand *e, const struct noise_node *root);

/* The next step into *out: 1, or 0 when the pattern is over. */
int noise_expand_next(struct noise_expand *e, struct noise_step *out);

/* SplitMix64 (Steele, Lea, Flood 2014): tiny, fully specified, the same on every platform,
 * which is what "the same sequence for the same seed" needs. */
uint64_t noise_splitmix64(uint64_t *state);

#endif
