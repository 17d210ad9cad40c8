/* guard: the slowdown guard's control law for one training job — from its step times to the share
 * (0..1) of the machine its co-tenants may use. A pure state machine: steps and ticks in, a share
 * and the action taken out; no clock and no I/O, so tests drive it with a simulated trainer.
 * The law and its parameters are documented in docs/guard.md. */
#ifndef COSCHED_GUARD_H
#define COSCHED_GUARD_H

#include <stdbool.h>

#include "blame.h"
#include "stats.h"

#define GUARD_MAX_WINDOW 256

/* How GPU windows are judged (progress.gpu_judge): as steps are (the median of 1/b, the first
 * way), or by the ratio of mean busy fractions, the estimator fitted to them (docs/guard.md). */
typedef enum { GUARD_GPU_MEAN, GUARD_GPU_MEDIAN } guard_gpu_judge_t;

typedef struct guard_params {
    double budget;            /* allowed slowdown: 0.05 = 5 % */
    double margin;            /* relax only while the upper bound is under budget - margin */
    int min_samples;          /* steps at one share before it is judged */
    int settle_steps;         /* steps ignored after a change: they straddle it */
    int max_window;           /* the newest steps at one share that are judged (<= GUARD_MAX_WINDOW) */
    double decrease;          /* throttle: share x decrease (fast down) */
    double increase;          /* relax: share + increase (slow up) */
    double min_share;         /* a throttle below this pauses the co-tenants (share 0) */
    double relax_interval;    /* seconds a share must hold before it is relaxed */
    double max_backoff;       /* failed relaxations stretch that interval up to this factor */
    int baseline_steps;       /* steps in a baseline */
    double baseline_max_age;  /* seconds: an older baseline is measured again */
    double baseline_max_cost; /* at most this fraction of co-tenant time paused for baselines */
    double pause_timeout;     /* seconds a pause waits for steps before giving up */
    double idle_release;      /* seconds without steps after which the co-tenants are let go */
    int law;                  /* 3: law 2 on a host whose speed switches (baselines measured again
                                 when shown wrong, probes judged next to their time, relaxations
                                 on full windows); 2: intervals that allow for autocorrelated
                                 steps, a longer baseline for them, a baseline carried along the
                                 trainer's drift, and attribution if asked; 1: the first version
                                 (2 and 1 for comparison) */
    bool attribution;         /* hold only the co-tenants that hurt, found by probing (blame.h);
                                 false: the first version's one share for all (law 1 forces it) */
    double reprobe_interval;  /* seconds a harmless verdict holds before it may be probed again */
    int gpu_judge;            /* guard_gpu_judge_t: how observations that are GPU windows are judged */
} guard_params_t;

typedef enum {
    GUARD_IDLE,       /* no co-tenant active: every step is a baseline step */
    GUARD_LEARNING,   /* co-tenants paused to take the first baseline */
    GUARD_WATCHING,   /* judging the share against the baseline */
    GUARD_REFRESHING, /* co-tenants paused to measure the baseline again (drift) */
} guard_phase_t;

typedef enum {
    GUARD_NONE,
    GUARD_THROTTLE, /* over budget: share x decrease (or 0 under min_share) */
    GUARD_REVERT,   /* over budget right after a relaxation: back to the share that held */
    GUARD_RELAX,    /* well under budget for long enough: share + increase */
    GUARD_PAUSE,    /* share 0 while a baseline is taken */
    GUARD_RESUME,   /* baseline taken (or the pause abandoned): the share before the pause */
    GUARD_RELEASE,  /* no steps for idle_release seconds: share 1 */
    GUARD_PROBE,    /* over budget beside several co-tenants: half of the candidates paused */
    GUARD_DOUBT,    /* over budget with nobody left to hold: the harmless are suspects again */
    GUARD_NACTIONS
} guard_action_t;

typedef struct guard {
    guard_params_t p;
    guard_phase_t phase;
    double share;                    /* what co-tenants may use now */
    double share_before_pause;       /* restored by RESUME */
    double good_share;               /* the share before the latest relaxation */
    bool relaxed;                    /* the latest change was a relaxation */
    double backoff;                  /* relax interval factor, 1 .. max_backoff */
    double changed_at;               /* when the share last changed */
    int skip;                        /* steps still to ignore after a change */
    double window[GUARD_MAX_WINDOW]; /* steps at this share, a ring of the newest */
    int nwindow, window_next;
    int judged_steps;   /* steps at this share so far (the window keeps the newest) */
    int baseline_taken; /* solo steps counted in this pause */
    int baseline_len;   /* steps in the baseline: baseline_steps, more for autocorrelated steps */
#define GUARD_DRIFT_POINTS 4
    double baseline_median; /* the last baseline a pause took (0: none yet), and when */
    double baseline_median_at;
    double drift_t[GUARD_DRIFT_POINTS], drift_v[GUARD_DRIFT_POINTS]; /* the last baselines: when, what */
    int ndrift;
    double drift;       /* the trainer's own relative change per second, fitted to them */
    double baseline_at; /* when the baseline was last taken (-1: never) */
    double pause_started, last_pause_seconds, next_refresh_at;
    bool last_pause_taken;                 /* the last pause yielded a baseline (else it was abandoned) */
    double paused_seconds, active_seconds; /* co-tenant time paused for baselines, and in all */
    double last_step_at, last_step_seconds, last_seen;
    int solo_run; /* solo steps in a row */
    bool last_step_solo;
    slowdown_t judged;    /* the latest judgement of the window against the baseline */
    blame_t blame;        /* which co-tenants hurt (attribution) */
    slowdown_t probe_ref; /* the steps right before the probe under way, judged */
    bool in_phase;        /* the trainer is in another phase than training: not judged */
    bool gpu;             /* the observations are GPU windows (1/b), not steps */
    unsigned long actions[GUARD_NACTIONS];
    unsigned long refreshes;
} guard_t;

void guard_params_defaults(guard_params_t *p);
void guard_init(guard_t *g, const guard_params_t *p, double now);

/* A step of `seconds` ended at `now`. cotenants_active: whether any co-tenant has work on the
 * node; baseline_possible: whether pausing this guard's co-tenants would leave the trainer alone
 * (not so while a co-tenant the guard does not hold runs: one pinned by an operator). The guard
 * decides whether the step is a baseline step and adds it to `steps`, then may change its share;
 * returns the action taken. */
guard_action_t guard_step(guard_t *g, step_stats_t *steps, double seconds, double now, bool cotenants_active,
                          bool baseline_possible);

/* New parameters (a reload); what was learned is kept, the window at the current share starts over. */
void guard_set_params(guard_t *g, const guard_params_t *p, double now);

/* Whether the observations are GPU windows (1/b of the job's GPUs): then they are judged as
 * p.gpu_judge says. Set when the job's source is chosen; guard_init forgets it. */
void guard_observe_gpu(guard_t *g, bool gpu);

/* The share applied to the co-tenants changed for another reason (another trainer's guard): the
 * steps judged so far were taken at another share. */
void guard_restart_window(guard_t *g, double now);

/* Time passing without steps: a pause that gets no steps (for pause_timeout, or four steps'
 * time) is abandoned, a trainer that stopped reporting (for idle_release, or eight steps' time)
 * lets its co-tenants go. */
guard_action_t guard_tick(guard_t *g, double now, bool cotenants_active);

/* The trainer announced a phase: training (judged) or another (evaluation, checkpoint: its steps
 * are no measure of slowdown). Out of training the share holds as it is — neither judged, nor
 * relaxed, nor released for want of steps — a pause or a probe under way ends without a result;
 * back in training the judging starts afresh. */
void guard_set_phase(guard_t *g, bool training, double now);

/* What this trainer's guard lets co-tenant `id` have: 0 while a baseline is taken or a probe
 * pauses it, 1 once shown harmless, else the share. */
double guard_share_for(const guard_t *g, const char *id);

/* The fraction of co-tenant time spent paused for baselines so far. */
double guard_pause_cost(const guard_t *g);

const char *guard_phase_name(guard_phase_t phase);
const char *guard_action_name(guard_action_t action);

#endif
