/* daemon: coschedd's state in one place — configuration, topology, jobs with their allocations,
 * runs, and the event loop's descriptors. Every module takes a daemon_t; there are no globals. */
#ifndef COSCHED_DAEMON_H
#define COSCHED_DAEMON_H

#include <stdbool.h>
#include <sys/types.h>
#include <jansson.h>

#include "config.h"
#include "plan.h"
#include "push.h"
#include "stats.h"
#include "topo.h"

#define JOB_ID_MAX 64

typedef enum { ROLE_TRAINER, ROLE_COTENANT } job_role_t;

typedef struct job {
    char id[JOB_ID_MAX];
    uid_t uid;
    job_role_t role;
    plan_policy_t policy;
    int ranks_per_gpu, cores_per_rank, cores; /* as requested */
    int nranks;
    plan_rank_t *ranks;    /* the allocation: cpus / mems per rank */
    hwloc_bitmap_t cpus;   /* union of the ranks' cpus */
    double registered;     /* unix time */
    step_stats_t steps;    /* trainer progress (runs' stdout or report) */
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
    int exit_code;                  /* RUN_EXITED: status; RUN_KILLED: signal */
    double started, ended;          /* unix time */
    bool stop_requested;
    double stop_deadline;           /* monotonic: SIGKILL after this */
    /* stdout goes to a file the daemon tails, so runs survive a daemon restart */
    char out_path[4352];
    int out_fd, out_wd;             /* the file and its inotify watch */
    long long out_offset;
    char line[8192];
    size_t line_len;
    int pid_fd;                     /* pidfd: readable when the process ends */
    /* progress seen on stdout */
    unsigned long lines, steps;
    double last_step_time;
    double bytes_total;             /* noise workers: bytes moved */
    double phase_bytes;             /* of which counted from this phase's progress lines */
    double rate_bytes_per_s;        /* latest achieved rate */
    struct run *next;
} run_t;

typedef struct client client_t;

/* epoll tags (data.u64): fixed descriptors, then one range per kind of object. */
#define EV_LISTEN 1
#define EV_SIGNAL 2
#define EV_TIMER 3
#define EV_INOTIFY 4
#define EV_OUTPUT_PAUSE 5
#define EV_RUN_BASE (1ULL << 40)
#define EV_CLIENT_BASE (1ULL << 41)

typedef struct daemon {
    config_t cfg;
    char config_path[4096];
    bool config_required;
    topo_t *topo;
    job_t *jobs;
    run_t *runs;
    int next_run_id;
    client_t *clients;
    int nclients;
    int epoll_fd, listen_fd, signal_fd, timer_fd, inotify_fd;
    int output_pause_fd; /* one-shot timer: when to listen to inotify again */
    bool listen_from_systemd;
    bool stopping;
    double started;
    pusher_t *pusher;
    unsigned long requests_total, request_errors_total, frames_rejected_total;
    unsigned long state_saves_total;
    char hostname[256];
} daemon_t;

/* The current time as a double of seconds (CLOCK_REALTIME, for records) and monotonic. */
double now_unix(void);
double now_mono(void);

/* Persist jobs and runs atomically; logs and returns -1 on failure (state in memory is kept). */
int state_save(daemon_t *d);

/* Restore from state_dir/state.json; a corrupt file is moved aside and logged. */
int state_restore(daemon_t *d);

/* Forget every job and run in memory (the file is not touched). */
void state_clear(daemon_t *d);

/* Liveness of a restored or running process: same pid and same start time. */
bool process_is(pid_t pid, unsigned long long start_ticks);
unsigned long long process_start_ticks(pid_t pid);

#endif
