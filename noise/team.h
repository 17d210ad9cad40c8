/* team: the worker threads of one run, one pinned to each CPU the worker was given,
 * with a barrier for the timed benchmark loops. */
#ifndef COSCHED_NOISE_TEAM_H
#define COSCHED_NOISE_TEAM_H

#include <stddef.h>
#include <hwloc.h>
#include <jansson.h>

#include "noise_progress.h"
#include "place.h"

struct noise_team;

struct noise_member {
    struct noise_team *team;
    int index;                 /* 0 .. count-1 */
    int count;                 /* threads in the team */
    int cpu;                   /* the CPU it is pinned to */
    void *arg;                 /* shared by all members */
    hwloc_bitmap_t seen;       /* CPUs sched_getcpu() reported */
    int page_numa;             /* NUMA domain of a page it touched, or -1 */
    struct noise_meter *meter; /* its running bytes and ops, for progress lines */
};

typedef void (*noise_member_fn)(struct noise_member *m);

/* Summed over the members, from /proc/thread-self/schedstat: seconds on a CPU and seconds
 * runnable but waiting for one. Their sum is the CPU time the work asked for, which the
 * duty cycle sets whatever else runs on the machine; the wait alone says how starved it was. */
struct noise_team_time {
    double run, wait;
};

/* Start nthreads (0: one per CPU of place->cpus) members running fn(arg), wait for all,
 * and record where they ran in place. With progress (may be NULL) reporting on, the calling
 * thread prints its lines from the members' meters while it waits; otherwise it only joins.
 * Returns 0, or -1 with err set when a thread cannot be started or pinned (then fn runs nowhere). */
int noise_team_run(struct noise_place *place, long nthreads, noise_member_fn fn, void *arg,
                   struct noise_team_time *time, struct noise_progress *progress, char *err, size_t errlen);

/* The same two figures as a JSON object {"run_seconds":..,"runqueue_seconds":..}. */
json_t *noise_team_time_json(const struct noise_team_time *time);

/* All members wait here for each other, asleep: for phases that may take seconds. */
void noise_team_barrier(struct noise_member *m);

/* All members wait here for each other, spinning for about a millisecond before they yield
 * the CPU: for timed passes of a few milliseconds, where waking a sleeping thread (tens of
 * microseconds on a VM whose idle vCPU halts) would be part of the measured time. */
void noise_team_sync(struct noise_member *m);

/* Record the CPU the calling member is on now. */
void noise_member_note_cpu(struct noise_member *m);

#endif
