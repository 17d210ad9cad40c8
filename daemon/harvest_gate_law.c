/* harvest_gate_law: when the node's harvest gate closes, is taken again and opens (harvest_gate_law.h),
 * as a pure function of the co-tenants' holds, the trainers present and a clock. */
#include <string.h>

#include "harvest_gate_law.h"

static const char *const state_names[] = {"open", "closing", "closed", "opening"};

const char *harvest_gate_state_name(gate_state_t s)
{
    return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "unknown";
}

void harvest_gate_init(harvest_gate_t *g)
{
    memset(g, 0, sizeof *g);
    g->state = GATE_OPEN;
    slurm_child_init(&g->scontrol);
}

gate_verdict_t harvest_gate_decide(harvest_gate_t *g, const gate_inputs_t *in, double now)
{
    if (!in->any_at_minimum)
        g->at_minimum_since = 0;
    else if (g->at_minimum_since == 0)
        g->at_minimum_since = now;
    if (g->state == GATE_CLOSING || g->state == GATE_OPENING || now < g->retry_at)
        return GATE_KEEP;
    if (g->state == GATE_OPEN)
        return in->any_at_minimum && now - g->at_minimum_since >= in->close_after ? GATE_CLOSE : GATE_KEEP;
    /* closed: open once nobody is held at the minimum and the trainers it closed for are gone,
     * or it has been closed for reopen_after */
    bool waited = in->reopen_after > 0 && now - g->closed_at >= in->reopen_after;
    if (!in->any_at_minimum && (!in->trainers_present || waited))
        return GATE_REOPEN;
    return now - g->asserted_at >= HARVEST_GATE_REASSERT ? GATE_REASSERT : GATE_KEEP;
}

double harvest_gate_backoff(harvest_gate_t *g, double now)
{
    double wait = slurm_child_retry_wait(&g->failures);
    g->retry_at = now + wait;
    return wait;
}
