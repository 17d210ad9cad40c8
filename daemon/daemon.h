/* daemon: coschedd's state in one place — configuration, topology, jobs with their allocations,
 * runs, the guard's knobs and the event loop's descriptors. Every module takes a daemon_t; there
 * are no globals. Modules change the state and mark it dirty; the loop saves it once. */
#ifndef COSCHED_DAEMON_H
#define COSCHED_DAEMON_H

#include <stdbool.h>
#include <sys/types.h>
#include <jansson.h>

#include "client_limits.h"
#include "clock.h"
#include "config.h"
#include "ending_record.h"
#include "escalation_record.h"
#include "harvest_gate_law.h"
#include "time_credit_record.h"
#include "gpu_sampler.h"
#include "guard.h"
#include "history.h"
#include "plan.h"
#include "pmu.h"
#include "slurm_conf.h"
#include "progress_source.h"
#include "push.h"
#include "stats.h"
#include "step_series.h"
#include "throttle.h"
#include "topo.h"

#define JOB_ID_MAX 64

typedef enum { ROLE_TRAINER, ROLE_COTENANT } job_role_t;

/* A co-tenant's share changed: when (unix time), to what, and whether an operator set it. */
typedef struct share_change {
    double time, share;
    bool by_operator;
} share_change_t;

#define JOB_SHARE_CHANGES 64 /* the latest kept per job: a timeline's throttle events */

/* What job register asked of the injected step reporter (docs/autoreport.md); zero: nothing. */
typedef enum { AUTOREPORT_DEFAULT, AUTOREPORT_ON, AUTOREPORT_OFF } autoreport_request_t;

typedef struct job {
    char id[JOB_ID_MAX];
    uid_t uid;
    job_role_t role;
    plan_policy_t policy;
    plan_isolation_t isolation;               /* what its placement keeps apart from the other role's jobs */
    int ranks_per_gpu, cores_per_rank, cores; /* as requested */
    int cpu_ranks;                            /* a trainer on cores alone, no GPU (0: on GPUs) */
    int nranks;
    plan_rank_t *ranks;     /* the allocation: cpus / mems per rank */
    hwloc_bitmap_t cpus;    /* union of the ranks' cpus */
    hwloc_bitmap_t allowed; /* the allocation it was registered within (a Slurm job's cpuset); NULL: any */
    bool external;          /* its processes are started outside coschedd (a Slurm job's tasks) */
    bool share_cores;       /* a co-tenant placed on cores other co-tenants may hold (oversubscribed) */
    json_t *warnings;       /* the planner's, at registration (a rank away from its GPU); not saved */
    double registered;      /* unix time */
    /* trainer */
    double budget;                        /* slowdown budget; 0 = the configured slowdown_budget */
    step_stats_t steps;                   /* progress: step times, or GPU windows' observations (progress_source.h) */
    guard_t guard;                        /* the control law that protects it */
    history_t history;                    /* its recent steps, timestamped, for the plot; not saved */
    progress_source_t progress_requested; /* auto, or what an operator or the site picked */
    progress_source_t progress_source;    /* what feeds its guard now (PROGRESS_NSOURCES: not chosen yet) */
    char progress_reason[256];            /* why: in job get, stats and cosched guard */
    char partition[CONFIG_PARTITION_MAX]; /* the Slurm partition it came from; "" = none given */
    autoreport_request_t autoreport;      /* the injected step reporter: the site's default, or asked on / off */
    bool steps_reported;                  /* it has reported a step: auto then takes its steps */
    unsigned long steps_ignored;          /* steps reported while another source judges it */
    step_series_t series;                 /* which rank's reports, and which way in, make its steps */
    char phase[32];                       /* what the job says it does: "train" (judged) or another
                                             phase (evaluation, checkpoint: not judged) */
    unsigned long steps_in_phase;         /* steps and windows left out while not training */
    double gpu_busy;                      /* its GPUs' mean busy fraction in the latest window; < 0: none */
    unsigned long gpu_windows;            /* windows of its GPUs observed */
    pmu_counter_t *pmu;                   /* its processes' instructions (pmu source); NULL: not counting */
    double pmu_count, pmu_at;             /* the count at the last tick, and when (monotonic) */
    char pmu_error[256];                  /* the last counter that could not be opened, said once */
    /* where Slurm keeps its processes (job confine found it from inside one of its tasks) */
    throttle_slurm_job_t slurm_cgroup;
    bool has_slurm_cgroup;
    double slurm_cpu_seen; /* CPU seconds of that cgroup, as last counted (accounting.c); < 0: not yet */
    /* co-tenant */
    throttle_group_t *throttle; /* its knobs; NULL until it has processes to hold */
    char hold_error[320];       /* why it is not held now though it should be ("" = nothing wrong) */
    double share;               /* what it may use now: 1 = unthrottled, 0 = paused */
    double share_override;      /* < 0: follow the guard; else set by an operator (guard.set) */
    share_change_t share_changes[JOB_SHARE_CHANGES]; /* oldest first; not saved */
    int nshare_changes;
    escalation_t escalation;      /* a co-tenant Slurm started, held at the minimum too long: requeued */
    ending_t ending;              /* a co-tenant Slurm started with news: is it ending? (cotenants/ending.c) */
    time_credit_t time_credit;    /* a co-tenant Slurm started: the time it was held, handed back */
    unsigned long long mbm_bytes; /* its resctrl group's memory traffic at mbm_at (MBM) */
    double mbm_at;                /* monotonic seconds; 0 = not read yet */
    double mbm_rate;              /* bytes/s between the last two readings; 0 = none */
    struct job *next;
} job_t;

typedef enum { RUN_RUNNING, RUN_EXITED, RUN_KILLED, RUN_LOST } run_state_t;

typedef struct run {
    int id;
    char job[JOB_ID_MAX];
    int rank;
    pid_t pid;
    unsigned long long start_ticks; /* /proc/PID/stat starttime: tells a reused pid apart */
    json_t *argv;                   /* array of strings, as given */
    run_state_t state;
    int exit_code;         /* RUN_EXITED: status; RUN_KILLED: signal */
    double started, ended; /* unix time */
    bool stop_requested;
    double stop_deadline;       /* monotonic: SIGKILL after this */
    throttle_group_t *throttle; /* the co-tenant group it belongs to (owned by the job) */
    /* stdout goes to a file the daemon tails, so runs survive a daemon restart */
    char out_path[4352];
    int out_fd, out_wd; /* the file and its inotify watch */
    long long out_offset;
    char line[8192];
    size_t line_len;
    int pid_fd; /* pidfd: readable when the process ends */
    /* progress seen on stdout */
    unsigned long lines, steps;
    double last_step_time;
    double bytes_total;       /* noise workers: bytes moved */
    double phase_bytes;       /* of which counted from this phase's progress lines */
    double rate_bytes_per_s;  /* latest achieved rate */
    double cpu_seen, cpu_now; /* CPU seconds of its process group, as last counted (accounting.c);
                               * cpu_seen < 0: not read yet, the first reading only sets it */
    struct run *next;
} run_t;

/* The node's counters (accounting.c): no job in them, so they outlive every release. Seconds. */
typedef struct node_counters {
    double cotenant_cpu_seconds;               /* co-tenants' runs' CPU time */
    double cotenant_seconds;                   /* co-tenant jobs at work, summed */
    double cotenant_at_minimum_seconds;        /* of which held at the guard's minimum share */
    double trainer_seconds;                    /* trainer jobs registered, summed */
    double trainer_lost_seconds;               /* step time above baseline with a co-tenant at work */
    double trainer_over_budget_seconds;        /* trainers whose slowdown was above their budget */
    double trainer_no_progress_source_seconds; /* trainers with no progress source while a co-tenant worked */
    double at;                                 /* monotonic time of the last tick; 0: none yet */
} node_counters_t;

typedef struct client client_t;

/* epoll tags (data.u64): fixed descriptors, then one range per kind of object. */
#define EV_LISTEN 1
#define EV_SIGNAL 2
#define EV_TIMER 3
#define EV_INOTIFY 4
#define EV_OUTPUT_PAUSE 5
#define EV_THROTTLE 6
#define EV_GPU 7
#define EV_CLIENT_RATE 8
#define EV_RUN_BASE (1ULL << 40)
#define EV_CLIENT_BASE (1ULL << 41)

/* Requeues through Slurm charged to one trainer owner, in the day since `since` (monotonic
 * seconds): cotenants/requeue_limits.c holds each owner to guard.requeues_per_owner. */
typedef struct requeue_owner {
    uid_t uid;
    double since;
    int count;
} requeue_owner_t;
#define REQUEUE_OWNERS_MAX 64

typedef struct daemon {
    config_t cfg;
    char config_path[4096];
    bool config_required;
    topo_t *topo;
    job_t *jobs;
    run_t *runs;
    int next_run_id;
    bool state_dirty;                           /* changed since the last save */
    throttle_t *throttle;                       /* the knobs this machine offers (NULL: guard disabled) */
    gpu_sampler_t *gpus;                        /* the GPUs' busy time (NULL: no GPU, or its thread did not start) */
    gpu_state_t gpu_seen[GPU_SAMPLER_MAX_GPUS]; /* each GPU's state as last logged */
    char gpu_error[256];                        /* why there is no sampler, when there is none */
    bool pmu_ok;                                /* progress.pmu_event can be counted here */
    char pmu_why[256];                          /* how, or why not */
    double guard_share;                         /* the share the guards last let co-tenants have */
    slurm_conf_cache_t slurm_conf;              /* Slurm's KillWait, for the let-go of held co-tenants */
    harvest_gate_t gate;                        /* whether the node offers harvest jobs its feature */
    node_counters_t counters;
    client_t *clients;
    int nclients;
    client_limits_t client_limits; /* who holds how many of them (client_limits.c) */
    bool accept_paused;            /* out of descriptors: the listening socket left epoll */
    unsigned long accept_pauses_total;
    int epoll_fd, listen_fd, signal_fd, timer_fd, inotify_fd;
    int output_pause_fd; /* one-shot timer: when to listen to inotify again */
    int throttle_fd;     /* one-shot timer: the next duty-cycle switch */
    int client_rate_fd;  /* one-shot timer: the next token of a user whose request waits (control.c) */
    bool listen_from_systemd;
    bool stopping;
    double started;
    pusher_t *pusher;
    unsigned long requests_total, request_errors_total, frames_rejected_total;
    unsigned long requests_denied_total;                /* refused by the permission table (access.c) */
    requeue_owner_t requeue_owners[REQUEUE_OWNERS_MAX]; /* the trainer owners requeues were charged to */
    int n_requeue_owners;
    unsigned long state_saves_total, state_save_errors_total;
    char state_save_error[160]; /* why the last save failed; "" once one succeeds */
    int state_lock_fd;          /* holds state_dir/coschedd.lock */
    char hostname[256];
} daemon_t;

/* Something worth keeping changed: the loop saves it before the next reply goes out. */
static inline void state_mark_dirty(daemon_t *d)
{
    d->state_dirty = true;
}

#endif
