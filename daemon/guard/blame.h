/* blame: which co-tenants hurt one trainer, found by probing (the guard's second version). When
 * the trainer is over budget beside several co-tenants, half of the candidates are paused while
 * the rest keep their share; if the trainer recovers the culprit is among the paused, else among
 * the others; halving again finds it in log2(n) probes. Co-tenants shown harmless keep share 1;
 * the guard's share then holds the guilty and the not yet judged only. Pure: no clock, no I/O.
 * docs/guard.md, "Which co-tenant hurts". */
#ifndef COSCHED_BLAME_H
#define COSCHED_BLAME_H

#include <stdbool.h>

#define BLAME_MAX 64
#define BLAME_ID_MAX 64

typedef enum {
    BLAME_SUSPECT,  /* not judged yet (or its verdict went stale): held with the guard's share */
    BLAME_HARMLESS, /* the trainer stayed over budget while it was paused, or recovered while
                       only others were: keeps share 1 */
    BLAME_GUILTY,   /* the trainer recovered while it alone (of the candidates) was paused */
} blame_verdict_t;

typedef struct blame_entry {
    char id[BLAME_ID_MAX];
    blame_verdict_t verdict;
    double since;       /* when the verdict was given (monotonic seconds) */
    double rate;        /* what it reported moving, bytes/s (0: nothing reported): probed first */
    double probe_share; /* the share it ran at while the probe under way judged it */
    double cost;        /* what it cost the trainer at cost_share, as a probe showed (< 0: unknown) */
    double cost_share;
    bool cost_bound; /* cost is an upper bound: others that were not candidates ran beside it */
    bool candidate;  /* in the probe under way */
    bool paused;     /* paused by that probe */
    bool seen;       /* still at work at the latest sync */
} blame_entry_t;

typedef struct blame {
    blame_entry_t e[BLAME_MAX];
    int n;
    bool probing;
    int probes;         /* probes judged, in all */
    double stale_after; /* seconds a harmless verdict holds before it may be probed again */
    double probe_share; /* the suspects' share while the probe under way runs */
    double probe_from;  /* the trainer's slowdown that started it */
    double quiet_until; /* no probe before this: the verdicts were just found wrong */
} blame_t;

/* A co-tenant is cleared (harmless, share 1) only on evidence taken while it ran at this share
 * or more: that it did no harm at share 0.1 says little about share 1. */
#define BLAME_CLEAR_MIN 0.5

void blame_init(blame_t *b, double stale_after);

/* The co-tenants at work now, with what each reports moving: new ones are suspects, departed
 * ones are forgotten (a probe that loses a candidate ends without a verdict). */
void blame_sync_begin(blame_t *b);
void blame_sync_one(blame_t *b, const char *id, double rate);
bool blame_sync_end(blame_t *b); /* true: a probe was cancelled (the shares changed) */

/* A probe ends without a verdict (a baseline pause, the co-tenants gone, a release). */
void blame_cancel(blame_t *b);

/* The trainer is over budget (its slowdown now) with its suspects at `share`: start a probe when
 * there are two candidates or more (suspects, the guilty, and harmless ones whose verdict is
 * stale), not all of them known guilty, and the verdicts were not just doubted. Returns whether
 * one started. */
bool blame_start_probe(blame_t *b, double share, double slowdown, double now);

/* The probe's judgement: recovered (within budget) or not, and the slowdown it judged. A
 * candidate paused alone gets as its cost the slowdown that went away; one left running alone,
 * the slowdown that stayed (a bound: co-tenants that were not candidates ran too). Returns true
 * while probing goes on (the next half is paused), false when it has ended (a verdict on every
 * candidate). */
bool blame_probe_result(blame_t *b, bool recovered, double slowdown, double now);

/* The paused took harm off, yet the trainer is still surely over budget: the harm is among the
 * paused, as recovered says, but the others are not cleared (a second culprit may be among them);
 * they stay suspects. Returns as blame_probe_result does. */
bool blame_probe_partly(blame_t *b, double slowdown, double now);

/* Over budget with nothing left to hold (no suspect or guilty co-tenant, or those at share 0):
 * the verdicts were wrong or the evidence changed; every harmless one is a suspect again, and no
 * probe starts for stale_after seconds (it would clear them on the same weak evidence). Returns
 * how many were. */
int blame_doubt(blame_t *b, double now);

/* What this trainer lets co-tenant `id` have, given the guard's share for suspects. */
double blame_share(const blame_t *b, const char *id, double share);

/* When the latest harmless verdict was given (-1: none is harmless). */
double blame_cleared_at(const blame_t *b);

/* How many at work are held by the guard's share (suspects and guilty, not harmless). */
int blame_held(const blame_t *b);

/* Whether any co-tenant at work runs free of the guard's share (harmless, or not paused by the
 * probe under way): then a step at share 0 is not a step alone. */
bool blame_any_free(const blame_t *b);

const blame_entry_t *blame_find(const blame_t *b, const char *id);
const char *blame_verdict_name(blame_verdict_t v);

#endif
