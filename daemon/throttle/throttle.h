/* throttle: the knobs that hold a co-tenant to a share (0..1) of the machine it would otherwise
 * use — resctrl memory-bandwidth allocation, cgroup CPU quota, the freezer, SIGSTOP/SIGCONT —
 * detected once, applied per co-tenant group. No clock and no event loop inside: the caller
 * passes monotonic seconds and calls throttle_group_tick when throttle_group_next_deadline says.
 * Nothing here blocks or sleeps. docs/throttle.md says what each share becomes on each knob. */
#ifndef COSCHED_THROTTLE_H
#define COSCHED_THROTTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* In order of preference: the first one a group can use is its primary knob. */
typedef enum {
    KNOB_RESCTRL_MB, /* resctrl group, schemata "MB:<dom>=<percent>" (memory bandwidth) */
    KNOB_CPU_MAX,    /* cgroup v2 cpu.max "<quota> <period>" */
    KNOB_CFS_QUOTA,  /* cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us */
    KNOB_FREEZER,    /* duty cycling with cgroup v2 cgroup.freeze or v1 freezer.state */
    KNOB_SIGSTOP,    /* duty cycling with SIGSTOP / SIGCONT of the group's processes */
    KNOB_CORES,      /* the spatial knob: a multi-threaded group narrowed to fewer of its cores, at
                      * full speed (sched_setaffinity); not a primary knob but a layer before one,
                      * used only where knobs_allowed names it (docs/throttle.md, "Fewer cores") */
    KNOB_COUNT
} knob_t;

#define THROTTLE_PATH_MAX 512

/* A root set to "none" is not used at all (e.g. cgroup2_root "none": no cpu.max, and the
 * freezer only through cgroup v1). */
typedef struct throttle_config {
    char resctrl_root[THROTTLE_PATH_MAX]; /* "" = /sys/fs/resctrl */
    char cgroup2_root[THROTTLE_PATH_MAX]; /* "" = the cgroup2 mount found in /proc/self/mountinfo */
    char cgroup1_root[THROTTLE_PATH_MAX]; /* "" = the v1 mounts found there; else DIR/cpu, DIR/freezer */
    char subtree[64];                     /* the daemon's groups live in <root>/<subtree>/<name>
                                           * (resctrl, which cannot nest: <root>/<subtree>-<name>) */
    unsigned knobs_allowed;               /* bit (1u << knob_t); 0 = all but KNOB_CORES */
    double duty_period;                   /* seconds of one run/stop cycle (duty-cycling knobs) */
    char journal_dir[THROTTLE_PATH_MAX];  /* where attached groups record what they hold; "" = nowhere */
} throttle_config_t;

typedef struct throttle throttle_t; /* what this machine offers, detected once */
typedef struct throttle_group throttle_group_t;

/* Defaults: every root auto-detected, subtree "cosched", all knobs, duty_period 0.1 s. */
void throttle_config_defaults(throttle_config_t *cfg);

/* Detect the knobs: which roots exist, are writable and have the controller (resctrl: info/MB;
 * cgroup v2: "cpu" in the subtree's cgroup.controllers, cgroup.freeze; v1: cpu and freezer
 * mounts). Creates <root>/<subtree> where needed. Never fails: SIGSTOP always works (NULL only
 * when out of memory). The groups keep a pointer to it: free it after the last group. */
throttle_t *throttle_detect(const throttle_config_t *cfg);
/* Removes the <root>/<subtree> directories that are empty by then. */
void throttle_free(throttle_t *t);

/* Undo what a daemon that died left: first what its journal says it held in Slurm's cgroups
 * (quotas restored, its freezes thawed, the processes it stopped continued: exactly those), then
 * <root>/<subtree>: every group thawed, its processes moved to the root (at full quota and
 * bandwidth), its directory removed. Call before making groups. */
void throttle_sweep(throttle_t *t);

/* Whether a knob is available (and allowed), and a one-line description for status and logs, e.g.
 * "cgroup v1 cpu at /sys/fs/cgroup/cpu/cosched" or "not available: /sys/fs/resctrl is not mounted". */
bool throttle_has(const throttle_t *t, knob_t knob);
const char *throttle_describe(const throttle_t *t, knob_t knob);
const char *throttle_knob_name(knob_t knob); /* "resctrl-mb", "cpu.max", "cfs-quota", "freezer", "sigstop" */
int throttle_knob_parse(const char *name, knob_t *out);

/* A group per co-tenant (name: a job id, [A-Za-z0-9._-], at most 63 characters). ncpus: CPUs the
 * group may use at share 1 (sets the CPU quota; <= 0: all online CPUs). Creates the resctrl /
 * cgroup directories its knobs need (an existing one, left by an earlier daemon, is taken over)
 * and sets them to share 1. A knob whose creation fails (resctrl without a free CLOSID) is passed
 * over for the next: on success err holds "" or why earlier knobs were passed over; on failure
 * NULL with the reasons in err (nothing left behind). */
throttle_group_t *throttle_group_create(throttle_t *t, const char *name, int ncpus, char *err, size_t errlen);

/* The CPUs the group's processes may use changed (a co-tenant's runs on some of its ranks only):
 * a CPU quota is sized again for them, at the same share. */
int throttle_group_set_ncpus(throttle_group_t *g, int ncpus, double now, char *err, size_t errlen);

/* Put a process (all its threads) under the group's knobs. The SIGSTOP knob only knows the
 * processes added here; a process that leads its process group is signalled as the group. */
int throttle_group_add_pid(throttle_group_t *g, pid_t pid, char *err, size_t errlen);
/* Let a process go (it ended, or is being stopped): out of the group's cgroups, back to each
 * hierarchy's root (which thaws it), resumed if SIGSTOP holds it, forgotten. */
void throttle_group_remove_pid(throttle_group_t *g, pid_t pid);

/* For a child between fork and exec, before it drops privileges: join the group's cgroups /
 * resctrl group with only getpid/open/write/close on paths computed at create time
 * (async-signal-safe), so that everything it starts is born inside. 0 or -1 (errno). */
int throttle_group_join_self(const throttle_group_t *g);

/* Hold the group to share s (0 = paused, 1 = unthrottled). When the primary knob cannot go as
 * low as s (resctrl's minimum bandwidth, the 1 ms minimum CPU quota, share 0), the rest is duty
 * cycling with the freezer or SIGSTOP: effective share = primary x duty. now: monotonic seconds. */
int throttle_group_set_share(throttle_group_t *g, double share, double now, char *err, size_t errlen);
double throttle_group_share(const throttle_group_t *g);
knob_t throttle_group_knob(const throttle_group_t *g); /* the primary knob */
bool throttle_group_duty_cycling(const throttle_group_t *g);
bool throttle_group_paused(const throttle_group_t *g); /* frozen / stopped right now */
/* Memory traffic the group's tasks caused since its resctrl group was made (resctrl MBM,
 * mbm_total_bytes over every L3 domain): 0, or -1 without a resctrl group or MBM. */
int throttle_group_memory_bytes(const throttle_group_t *g, unsigned long long *bytes);

/* The spatial knob: the fraction of its cores the group keeps (1 = not narrowed), and why it is
 * not narrowed when the knob is allowed ("" when it is, or when share is 1). */
double throttle_group_cores_kept(const throttle_group_t *g);
const char *throttle_group_cores_note(const throttle_group_t *g);

/* Duty cycling: the next monotonic time throttle_group_tick must run (0 = none pending), and
 * the tick that stops or resumes the group when due. A tick that cannot freeze or thaw keeps
 * the reason for throttle_group_last_error ("" when the last tick went well). */
double throttle_group_next_deadline(const throttle_group_t *g);
void throttle_group_tick(throttle_group_t *g, double now);
const char *throttle_group_last_error(const throttle_group_t *g);

/* Undo everything (resume, unlimited quota, full bandwidth), move the processes to the root of
 * each hierarchy (not the cgroup they came from) and remove the group's directories. An attached
 * group gives Slurm's cgroups back as it found them. */
void throttle_group_destroy(throttle_group_t *g);

/* Where a job Slurm started keeps its processes: its job_<id> cgroup in each hierarchy, as
 * `cosched job confine` found them from one of its tasks; "" = not there. */
typedef struct throttle_slurm_job {
    char cgroup2[THROTTLE_PATH_MAX];  /* v2 (cgroup/v2): .../slurmstepd.scope/job_<id> */
    char freezer1[THROTTLE_PATH_MAX]; /* v1 freezer (proctrack/cgroup) */
    char cpuset1[THROTTLE_PATH_MAX];  /* v1 cpuset (task/cgroup) */
    char cpu1[THROTTLE_PATH_MAX];     /* v1 cpu, when Slurm keeps the job there too (jobacct_gather/cgroup,
                                       * cpu and cpuacct mounted together) */
} throttle_slurm_job_t;

/* A group for a co-tenant Slurm started, held where Slurm put it (docs/throttle.md, "Co-tenants
 * Slurm started"): cgroup v2 cpu.max on its job cgroup and cgroup.freeze on its task leaves
 * (never on what Slurm freezes itself, nor on slurmstepd); cgroup v1 the CFS quota on its cpu
 * cgroup, or on a group of cosched's its tasks are moved to, and SIGSTOP; resctrl MB with its
 * tasks moved to the group. Nothing is written before the journal records how to undo it. */
throttle_group_t *throttle_group_attach(throttle_t *t, const char *name, int ncpus, const throttle_slurm_job_t *job,
                                        char *err, size_t errlen);
bool throttle_group_attached(const throttle_group_t *g);

/* Memory protection of jobs Slurm confines (docs/slurm.md, "Memory"): a trainer's cgroup v2
 * job cgroup gets memory.low = its memory.max; on cgroup v1 a co-tenant's memory cgroup gets
 * memory.soft_limit_in_bytes = 0 instead. 1 done, 0 nothing to do here, -1 failed; `what` says
 * which, or why. */
int throttle_protect_trainer_memory(const throttle_slurm_job_t *job, char *what, size_t len);
int throttle_yield_cotenant_memory(const throttle_slurm_job_t *job, char *what, size_t len);

/* Paths a group may be attached to: absolute, no spaces, no "." or ".." component, each one a
 * job_<id> directory, at least one of cgroup2, freezer1, cpuset1 given. */
bool throttle_slurm_job_valid(const throttle_slurm_job_t *job);

/* An attached group let go for a while (its job ending, docs/throttle.md "Signals"): nothing of
 * it is held — no pause, no quota, no bandwidth limit, no narrowed cores — and a share set
 * meanwhile is applied when the let-go ends. */
bool throttle_group_let_go(const throttle_group_t *g);
/* Let go whole of a held attached group whose job Slurm shows ending (the caller asked it after
 * the watch's news): until every process the job has now is gone, or for let_go_max seconds. why
 * goes into the reason. false when there was nothing to let go (not held, already let go, or
 * suspended by Slurm). */
bool throttle_group_let_go_whole(throttle_group_t *g, double now, double let_go_max, const char *why);
/* How often it was let go since it was attached: whole (its job ending) and only to take a
 * signal (at most one each THROTTLE_DELIVERY_WINDOW seconds). */
void throttle_group_let_go_counts(const throttle_group_t *g, unsigned long *whole, unsigned long *delivery);
/* Why no more than one let-go to take a signal per window: docs/throttle.md, "Signals". */
enum { THROTTLE_DELIVERY_WINDOW = 10 };
/* Why it is let go, and until when at most ("a signal waits on process 4711; for at most 70 s");
 * NULL when it is not. */
const char *throttle_group_let_go_reason(const throttle_group_t *g);

/* Where a filesystem is mounted, from a mountinfo file (proc(5)): the first mount of fstype
 * ("cgroup2", "cgroup", "resctrl") whose super options hold option (a v1 controller: "cpu" matches
 * "cpu,cpuacct" but not "cpuset"; NULL: any), and the root of the mount within its filesystem
 * ("/" but inside a cgroup namespace; root may be NULL). 0, or -1 when there is none. */
int throttle_mount_find_root(const char *mountinfo, const char *fstype, const char *option, char *out, size_t len,
                             char *root, size_t rootlen);

/* What an attached group saw of its job. */
typedef struct throttle_watch {
    int joined;        /* processes (and v2 task cgroups) that came since the last look */
    bool suspended;    /* Slurm holds the job suspended: cosched neither pauses nor resumes it */
    bool let_go;       /* let go whole now: one of its processes is exiting (why: in let_go_detail) */
    bool held_again;   /* a let-go ended (why: in let_go_detail): held at its share again */
    bool gone;         /* the job's cgroup is gone: the job ended */
    bool news;         /* a signal waits, or someone continued what cosched stopped: whether the job
                        * is ending only Slurm can say (why: in news_detail) */
    bool delivered;    /* let go only to take the signal, and held again at once */
    int stopped_again; /* processes someone else continued, stopped again */
    char detail[THROTTLE_PATH_MAX + 128];
    char let_go_detail[160];
    char news_detail[96];
} throttle_watch_t;

/* Once a second for an attached group: take in the job's new processes and task cgroups (and
 * hold them as the others are), see whether Slurm suspended the job, and look at its signals. A
 * signal waiting, a process cosched stopped that someone continued (stopped again at once), or a
 * process exiting is news: only a signal is let through, at most once per
 * THROTTLE_DELIVERY_WINDOW, and the caller asks Slurm whether the job ends
 * (throttle_group_let_go_whole). A whole let-go ends when its processes are gone or its bound has
 * passed, then the job is held at its share again. */
void throttle_group_watch(throttle_group_t *g, double now, throttle_watch_t *out);

#endif
