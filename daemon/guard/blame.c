/* blame: finding the co-tenant that hurts a trainer by pausing halves of the candidates. */
#include "blame.h"

#include <stdio.h>
#include <string.h>

void blame_init(blame_t *b, double stale_after)
{
    memset(b, 0, sizeof *b);
    b->stale_after = stale_after;
}

const char *blame_verdict_name(blame_verdict_t v)
{
    static const char *const names[] = {"suspect", "harmless", "guilty"};
    return v <= BLAME_GUILTY ? names[v] : "?";
}

static blame_entry_t *find(blame_t *b, const char *id)
{
    for (int i = 0; i < b->n; i++)
        if (strcmp(b->e[i].id, id) == 0)
            return &b->e[i];
    return NULL;
}

const blame_entry_t *blame_find(const blame_t *b, const char *id)
{
    return find((blame_t *)b, id);
}

void blame_cancel(blame_t *b)
{
    b->probing = false;
    for (int i = 0; i < b->n; i++)
        b->e[i].candidate = b->e[i].paused = false;
}

void blame_sync_begin(blame_t *b)
{
    for (int i = 0; i < b->n; i++)
        b->e[i].seen = false;
}

void blame_sync_one(blame_t *b, const char *id, double rate)
{
    blame_entry_t *e = find(b, id);
    if (!e) {
        if (b->n == BLAME_MAX)
            return; /* beyond the table: held with the guard's share, as a suspect would be */
        e = &b->e[b->n++];
        memset(e, 0, sizeof *e);
        snprintf(e->id, sizeof e->id, "%s", id);
        e->verdict = BLAME_SUSPECT;
        e->cost = -1; /* unknown until a probe shows it */
    }
    e->seen = true;
    e->rate = rate > 0 ? rate : 0;
}

bool blame_sync_end(blame_t *b)
{
    int kept = 0;
    bool lost_candidate = false;
    for (int i = 0; i < b->n; i++) {
        if (b->e[i].seen)
            b->e[kept++] = b->e[i];
        else
            lost_candidate |= b->e[i].candidate;
    }
    b->n = kept;
    if (!(b->probing && lost_candidate))
        return false;
    blame_cancel(b); /* the probe's halves no longer mean what they did */
    return true;
}

static bool is_candidate(const blame_t *b, const blame_entry_t *e, double now)
{
    return e->verdict != BLAME_HARMLESS || now - e->since >= b->stale_after;
}

/* Probe order: the known guilty first, then by what each reports moving (memory traffic is the
 * usual harm), then as registered. */
static int by_suspicion(const void *pa, const void *pb)
{
    const blame_entry_t *a = pa, *c = pb;
    if ((a->verdict == BLAME_GUILTY) != (c->verdict == BLAME_GUILTY))
        return a->verdict == BLAME_GUILTY ? -1 : 1;
    return a->rate > c->rate ? -1 : a->rate < c->rate ? 1 : 0;
}

/* Pause the first half (rounded up) of the candidates, in order of suspicion. */
static void pause_half(blame_t *b)
{
    blame_entry_t *order[BLAME_MAX];
    int n = 0;
    for (int i = 0; i < b->n; i++) {
        b->e[i].paused = false;
        if (b->e[i].candidate)
            order[n++] = &b->e[i];
    }
    /* A stable order by suspicion: insertion sort keeps registration order among equals. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && by_suspicion(order[j], order[j - 1]) < 0; j--) {
            blame_entry_t *t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < (n + 1) / 2; i++)
        order[i]->paused = true;
}

bool blame_start_probe(blame_t *b, double share, double slowdown, double now)
{
    if (b->probing || now < b->quiet_until)
        return false;
    int n = 0, guilty = 0;
    for (int i = 0; i < b->n; i++) {
        b->e[i].candidate = is_candidate(b, &b->e[i], now);
        n += b->e[i].candidate;
        guilty += b->e[i].candidate && b->e[i].verdict == BLAME_GUILTY;
    }
    if (n < 2 || guilty == n) {
        blame_cancel(b);
        return false;
    }
    b->probing = true;
    b->probe_share = share;
    b->probe_from = slowdown;
    for (int i = 0; i < b->n; i++)
        b->e[i].probe_share = b->e[i].verdict == BLAME_HARMLESS ? 1 : share;
    pause_half(b);
    return true;
}

static void judge(blame_entry_t *e, blame_verdict_t v, double now)
{
    e->verdict = v;
    e->since = now;
    e->candidate = e->paused = false;
}

/* What a probe shows of one candidate's cost: alone in the paused half, what pausing it took
 * away; alone in the running half, what was left. */
static void estimate_costs(blame_t *b, double slowdown)
{
    blame_entry_t *paused = NULL, *running = NULL;
    int npaused = 0, nrunning = 0;
    for (int i = 0; i < b->n; i++) {
        blame_entry_t *e = &b->e[i];
        if (!e->candidate)
            continue;
        if (e->paused) {
            paused = e;
            npaused++;
        } else {
            running = e;
            nrunning++;
        }
    }
    if (npaused == 1) {
        paused->cost = b->probe_from - slowdown > 0 ? b->probe_from - slowdown : 0;
        paused->cost_share = paused->probe_share;
        paused->cost_bound = false;
    }
    if (nrunning == 1) {
        running->cost = slowdown > 0 ? slowdown : 0;
        running->cost_share = running->probe_share;
        running->cost_bound = true;
    }
}

/* clear: whether the half that does not hold the harm may be cleared (else it stays suspect) */
static bool probe_result(blame_t *b, bool recovered, bool clear, double slowdown, double now)
{
    if (!b->probing)
        return false;
    b->probes++;
    estimate_costs(b, slowdown);
    /* Recovered: the harm is among the paused; the others did no harm at the share they ran at.
     * Not recovered: the harm is among the others; the paused may be harmless (one culprit) or
     * not (several): cleared only while the others ran near full share, where one culprit is the
     * likelier reading; a doubt undoes it if not. Those not cleared stay suspects. */
    int left = 0;
    for (int i = 0; i < b->n; i++) {
        blame_entry_t *e = &b->e[i];
        if (!e->candidate)
            continue;
        if (e->paused == recovered) {
            left++;
            continue;
        }
        double evidence = recovered ? e->probe_share : b->probe_share;
        if (clear && evidence >= BLAME_CLEAR_MIN)
            judge(e, BLAME_HARMLESS, now);
        else
            e->candidate = e->paused = false; /* out of this probe, still a suspect */
    }
    if (left <= 1) {
        for (int i = 0; i < b->n; i++)
            if (b->e[i].candidate)
                judge(&b->e[i], BLAME_GUILTY, now);
        blame_cancel(b);
        return false;
    }
    pause_half(b);
    return true;
}

bool blame_probe_result(blame_t *b, bool recovered, double slowdown, double now)
{
    return probe_result(b, recovered, true, slowdown, now);
}

bool blame_probe_partly(blame_t *b, double slowdown, double now)
{
    return probe_result(b, true, false, slowdown, now);
}

int blame_doubt(blame_t *b, double now)
{
    int n = 0;
    for (int i = 0; i < b->n; i++)
        if (b->e[i].verdict == BLAME_HARMLESS) {
            judge(&b->e[i], BLAME_SUSPECT, now);
            n++;
        }
    blame_cancel(b);
    if (n > 0)
        b->quiet_until = now + b->stale_after;
    return n;
}

double blame_share(const blame_t *b, const char *id, double share)
{
    const blame_entry_t *e = find((blame_t *)b, id);
    if (!e)
        return share;
    if (b->probing && e->paused)
        return 0;
    return e->verdict == BLAME_HARMLESS ? 1 : share;
}

double blame_cleared_at(const blame_t *b)
{
    double at = -1;
    for (int i = 0; i < b->n; i++)
        if (b->e[i].verdict == BLAME_HARMLESS && b->e[i].since > at)
            at = b->e[i].since;
    return at;
}

int blame_held(const blame_t *b)
{
    int n = 0;
    for (int i = 0; i < b->n; i++)
        n += b->e[i].verdict != BLAME_HARMLESS;
    return n;
}

bool blame_any_free(const blame_t *b)
{
    for (int i = 0; i < b->n; i++)
        if (b->e[i].verdict == BLAME_HARMLESS && !(b->probing && b->e[i].paused))
            return true;
    return false;
}
