/* expand: depth-first walk over sequences, repeats and random blocks with an explicit stack
 * (bounded by NOISE_MAX_DEPTH, which pattern.c enforces). */
#include "expand.h"

#include <string.h>

uint64_t noise_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void push(struct noise_expand *e, const struct noise_node *n)
{
    struct noise_expand_frame *f = &e->stack[e->depth++];
    memset(f, 0, sizeof *f);
    f->node = n;
    if (n->kind == NOISE_NODE_RANDOM) {
        /* Re-seeded on every entry: a random block inside a repeat plays the same steps each round. */
        f->rng = n->random.seed;
        f->left = n->random.seconds;
    }
}

void noise_expand_init(struct noise_expand *e, const struct noise_node *root)
{
    e->depth = 0;
    push(e, root);
}

static enum noise_mode draw_mode(const struct noise_random *r, uint64_t *rng)
{
    double total = 0;
    for (int m = 0; m < NOISE_MODE_COUNT; m++)
        total += r->weights[m];
    /* 53 random bits make a uniform double in [0, 1). */
    double u = (double)(noise_splitmix64(rng) >> 11) * 0x1.0p-53 * total, sum = 0;
    int last = 0;
    for (int m = 0; m < NOISE_MODE_COUNT; m++) {
        if (r->weights[m] <= 0)
            continue;
        sum += r->weights[m];
        last = m;
        if (u < sum)
            return (enum noise_mode)m;
    }
    return (enum noise_mode)last;
}

int noise_expand_next(struct noise_expand *e, struct noise_step *out)
{
    while (e->depth > 0) {
        struct noise_expand_frame *f = &e->stack[e->depth - 1];
        const struct noise_node *n = f->node;
        switch (n->kind) {
        case NOISE_NODE_STEP:
            if (f->next == 0) {
                f->next = 1;
                *out = n->step;
                return 1;
            }
            e->depth--;
            break;
        case NOISE_NODE_SEQUENCE:
            if (f->next < n->nchildren && e->depth < (int)(sizeof e->stack / sizeof e->stack[0])) {
                push(e, &n->children[f->next++]);
                break;
            }
            f->done++;
            if (n->repeat == NOISE_FOREVER || f->done < n->repeat)
                f->next = 0;
            else
                e->depth--;
            break;
        case NOISE_NODE_RANDOM:
            /* A residue below a microsecond is rounding, not a step. */
            if (f->left > 1e-6) {
                memset(out, 0, sizeof *out);
                out->mode = draw_mode(&n->random, &f->rng);
                strcpy(out->config, n->random.configs[out->mode]);
                out->seconds = f->left < n->random.step_seconds ? f->left : n->random.step_seconds;
                f->left -= out->seconds;
                return 1;
            }
            e->depth--;
            break;
        }
    }
    return 0;
}
