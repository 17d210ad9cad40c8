/* cotenants: what the guard decides, applied to the co-tenant jobs — a throttle group per
 * co-tenant that has processes, held to the lowest share any trainer's guard allows (or to what
 * an operator set), through the best knob the machine offers. */
#ifndef COSCHED_COTENANTS_H
#define COSCHED_COTENANTS_H

#include "daemon.h"

/* Detect the knobs (logged, shown in status) and let go of whatever a daemon that died left
 * throttled; the guard is off when the configuration says so. */
void cotenants_init(daemon_t *d);

/* Resume every co-tenant and remove every group: at shutdown, nothing stays throttled. */
void cotenants_shutdown(daemon_t *d);

/* Which co-tenant jobs have work on the node (a running run, or registered as external), found
 * in one pass over runs and one over jobs: any; one that follows the guard; one the guards do not
 * hold (pinned above 0 by an operator, or external before job confine found its cgroup:
 * processes the daemon cannot reach; while one is at work no baseline can be taken). */
typedef struct cotenant_activity {
    bool any, guarded, unheld;
} cotenant_activity_t;

cotenant_activity_t cotenants_activity(const daemon_t *d);

/* One co-tenant job at work: a run of it is alive, or it is external (a Slurm job's tasks, which
 * the daemon neither starts nor sees end): from registration to release. */
bool cotenant_active(const daemon_t *d, const job_t *cotenant);

/* A co-tenant the guard holds at its minimum share (guard.min_share), not pinned by an operator:
 * what the escalation waits on and the metrics count. */
bool cotenant_at_minimum(const daemon_t *d, const job_t *cotenant);

/* A Slurm job id as the prolog passes it: 123, an array task 123_4, a het component 123+1. */
bool cotenants_slurm_job_id(const char *id);

/* This node's name in Slurm: guard.slurm_node, else the host name up to its first dot (as slurmd
 * names it). */
void cotenants_slurm_node(const daemon_t *d, char *out, size_t len);

/* The job's throttle group, made when first needed; NULL (logged) when none can be made. */
throttle_group_t *cotenant_group(daemon_t *d, job_t *cotenant);

/* Let go of a co-tenant's group (it resumes at once): before its release. */
void cotenant_release(daemon_t *d, job_t *cotenant);

/* Let go whole of a held co-tenant Slurm shows ending (why: what it had, and what Slurm said),
 * for at most Slurm's KillWait and a margin, with a log line; nothing when it is not held. */
void cotenant_let_go_whole(daemon_t *d, job_t *cotenant, double now, const char *why);

/* After a restart: running co-tenant runs join their groups again, resumed and re-applied. */
void cotenants_adopt_runs(daemon_t *d);

/* The share the guards hold the co-tenants they suspect to: the lowest over trainer jobs, 1
 * without any (a co-tenant found harmless keeps 1: guard_share_for). */
double cotenants_guard_share(const daemon_t *d);

/* Tell each guard which co-tenants are at work, recompute every co-tenant's share and apply the
 * changes; re-arm the duty-cycle timer. */
void cotenants_update(daemon_t *d, double now);

/* Arm the one-shot timer (d->throttle_fd) for the earliest duty-cycle switch or Slurm's answer. */
void cotenants_arm_timer(daemon_t *d);

/* The duty-cycle timer fired: switch the groups that are due. */
void cotenants_tick(daemon_t *d, double now);

/* Once a second: co-tenants Slurm started, held where they are — their new processes taken in,
 * Slurm's suspension respected, a job Slurm shows ending let go to act on its signal (ending.h),
 * a job whose cgroup is gone let go. */
void cotenants_watch(daemon_t *d, double now);

#endif
