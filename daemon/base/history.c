/* history: a trainer's recent progress as a ring of timestamped samples; see history.h for the
 * bound. */
#include "history.h"

#include <stddef.h>

void history_add(history_t *h, double when, double seconds, double baseline, double budget, double slowdown,
                 double share)
{
    history_sample_t *last = h->n ? &h->s[(h->next + HISTORY_SAMPLES - 1) % HISTORY_SAMPLES] : NULL;
    if (last && when >= last->time && when - last->time < HISTORY_INTERVAL) {
        last->steps++;
        last->seconds += (seconds - last->seconds) / last->steps;
    } else {
        last = &h->s[h->next];
        h->next = (h->next + 1) % HISTORY_SAMPLES;
        if (h->n < HISTORY_SAMPLES)
            h->n++;
        *last = (history_sample_t){.time = when, .seconds = seconds, .steps = 1};
    }
    last->baseline = baseline;
    last->budget = budget;
    last->slowdown = slowdown;
    last->share = share;
}

const history_sample_t *history_at(const history_t *h, int i)
{
    return &h->s[(h->next - h->n + i + HISTORY_SAMPLES) % HISTORY_SAMPLES];
}
