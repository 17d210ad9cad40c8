/* throttle_internal: what the throttle modules share — the detected machine, a group's state,
 * the file helpers and the pure share -> setting mappings. The daemon sees only throttle.h. */
#ifndef COSCHED_THROTTLE_INTERNAL_H
#define COSCHED_THROTTLE_INTERNAL_H

#include "throttle.h"

#include <sched.h>

enum {
    THROTTLE_CPU_PERIOD_US = 100000,  /* the kernel's default CFS period */
    THROTTLE_CPU_MIN_QUOTA_US = 1000, /* the kernel refuses a smaller quota (EINVAL) */
    THROTTLE_MB_MAX_DOMAINS = 64,
    THROTTLE_LONG_PATH = 2 * THROTTLE_PATH_MAX + 128, /* a root, the subtree, a name, a file */
    THROTTLE_DESC_MAX = THROTTLE_LONG_PATH + 160,
    THROTTLE_NAME_MAX = 64,
};

/* A cgroup hierarchy: where it is mounted and the daemon's <mount>/<subtree> in it. */
typedef struct throttle_cgroup_root {
    char mount[THROTTLE_PATH_MAX];
    char subtree[THROTTLE_LONG_PATH]; /* "" = not usable */
} throttle_cgroup_root_t;

typedef struct throttle_resctrl {
    char root[THROTTLE_PATH_MAX];
    unsigned min_percent, gran_percent;
    int domains[THROTTLE_MB_MAX_DOMAINS];
    int ndomains;
} throttle_resctrl_t;

struct throttle {
    throttle_config_t cfg;
    bool has[KNOB_COUNT];
    char desc[KNOB_COUNT][THROTTLE_DESC_MAX];
    throttle_resctrl_t mb;
    throttle_cgroup_root_t cg2, cpu1, freezer1;
    bool cg2_freeze; /* the v2 subtree has cgroup.freeze */
};

typedef struct throttle_member {
    pid_t pid;
    bool leader; /* seen leading its process group: signalled as kill(-pid) */
} throttle_member_t;

/* A process the spatial knob narrowed, and the CPUs it had before (given back on the way out):
 * each thread's own (an application may pin its threads one by one), and their union for the
 * threads born since. */
typedef struct throttle_thread_cpus {
    pid_t tid;
    cpu_set_t cpus;
} throttle_thread_cpus_t;
typedef struct throttle_narrowed {
    pid_t pid;
    unsigned long long ticks;
    cpu_set_t full;
    throttle_thread_cpus_t *threads;
    size_t nthreads;
} throttle_narrowed_t;

/* The directories a group uses; "" = not used. */
typedef enum { DIR_MB, DIR_CG2, DIR_CPU1, DIR_FREEZER1, DIR_COUNT } throttle_dir_t;

/* Sets of pids and of paths, for an attached group's bookkeeping. */
typedef struct throttle_pids {
    pid_t *v;
    size_t n, cap;
} throttle_pids_t;
typedef struct throttle_list {
    char **items;
    size_t n, cap;
} throttle_list_t;

/* What an attached group (a job Slurm started) knows and holds beyond a group of its own. */
typedef struct throttle_ext {
    throttle_slurm_job_t job;
    char saved_quota[64];              /* what cpu.max (v2) or cpu.cfs_quota_us (v1) of Slurm's held before */
    char saved_period[64];             /* v1: cpu.cfs_period_us of Slurm's */
    throttle_pids_t pids;              /* the job's processes, as last seen */
    throttle_pids_t stopped;           /* of those, the ones cosched has stopped now */
    unsigned long long *stopped_ticks; /* their start times, for the journal */
    bool *stopped_seen;                /* seen stopped since: running again means someone continued it */
    throttle_list_t tasks;             /* v2: the job's task cgroups (leaves below step_<s>/user) */
    throttle_list_t frozen;            /* of those, the ones cosched has frozen now */
    bool suspended;                    /* Slurm has suspended the job */
    bool let_go;                       /* a signal to act on: nothing is held (throttle_group_watch) */
    double let_go_until;               /* held again then at the latest */
    throttle_pids_t let_go_pids;       /* the processes with the signal: held again once they are gone */
    unsigned long long *let_go_ticks;  /* their start times */
    char let_go_reason[256];           /* why, for job get */
    double delivery_next;              /* no let-go only to take a signal before then (one a window) */
    unsigned long lets_go_whole;       /* let go whole: its job ending */
    unsigned long lets_go_delivery;    /* let go only to take a signal */
    char journal[THROTTLE_LONG_PATH];
} throttle_ext_t;

/* What differs between the two kinds of group — the daemon's own (throttle_group.c) and one
 * attached to a job Slurm started (throttle_external.c) — called through g->ops, so that the
 * code common to both asks no group which kind it is. */
typedef struct throttle_group_ops {
    /* Create the knobs: g->primary (KNOB_COUNT: none can hold it) and g->duty_knob; notes: the
     * knobs passed over, and why. */
    void (*choose_knobs)(throttle_group_t *g, char *notes, size_t len);
    /* Pause or resume the group by its duty knob (not KNOB_COUNT). */
    int (*hold)(throttle_group_t *g, bool pause, char *err, size_t errlen);
    /* The group's processes now, added to out. */
    void (*pids)(const throttle_group_t *g, throttle_pids_t *out);
    /* Nothing is held until a let-go ends (a signal to act on, throttle_group_watch). */
    bool (*let_go)(const throttle_group_t *g);
    /* Let go what the kind holds its own way, before destroy undoes the knobs both share. */
    void (*release)(throttle_group_t *g);
} throttle_group_ops_t;

struct throttle_group {
    throttle_t *t;
    const throttle_group_ops_t *ops; /* its kind */
    char name[THROTTLE_NAME_MAX];
    int ncpus;
    knob_t primary;
    knob_t duty_knob; /* KNOB_FREEZER, KNOB_SIGSTOP, or KNOB_COUNT: none allowed */
    bool freezer_v2;  /* which freezer the duty knob writes */
    char dir[DIR_COUNT][THROTTLE_LONG_PATH];
    char join[DIR_COUNT][THROTTLE_LONG_PATH]; /* the file join_self writes, per used dir */
    bool borrowed[DIR_COUNT]; /* the directory is Slurm's (attached): written to, restored, never removed */
    throttle_member_t *members;
    size_t nmembers, cap;
    double share;
    /* duty cycling: the group runs duty x duty_period of each period, paused the rest */
    double duty, phase_start, deadline;
    bool cycling, paused; /* paused: the phase we are in (a failed freeze still moves on) */
    bool ever_paused;     /* so destroy resumes whatever a failed thaw may have left paused */
    char last_error[THROTTLE_DESC_MAX];
    throttle_ext_t *ext; /* an attached group (throttle_group_attach); NULL for the daemon's own */
    /* the spatial knob (throttle_cores.c) */
    double cores_kept;             /* fraction of its cores kept; 1 = none narrowed */
    throttle_narrowed_t *narrowed; /* the processes narrowed now, with what they had */
    size_t nnarrowed, capnarrowed;
    char cores_note[192]; /* why it is not narrowed, when the knob is allowed */
    char cores_journal[THROTTLE_LONG_PATH];
};

static inline bool throttle_allowed(const throttle_config_t *cfg, knob_t k)
{
    if (cfg->knobs_allowed == 0) /* the spatial knob only where it is asked for (docs/throttle.md) */
        return k != KNOB_CORES;
    return (cfg->knobs_allowed & (1u << k)) != 0;
}

/* Leave-overs of a daemon that died: thawed, emptied into the root, removed. */
void throttle_cgroup_sweep(throttle_t *t);
void throttle_resctrl_sweep(throttle_t *t);
/* One process out of the group's cgroups, back to each hierarchy's root. */
void throttle_cgroup_release_pid(throttle_group_t *g, pid_t pid);

/* throttle_fs.c: files under /sys, with errors that name the path and the value. */
int throttle_fs_write(const char *path, const char *text, char *err, size_t errlen);
int throttle_fs_write_ids(const char *path, const pid_t *ids, size_t n, char *err, size_t errlen);
ssize_t throttle_fs_read(const char *path, char *buf, size_t len);
int throttle_fs_read_uint(const char *path, unsigned *out);
int throttle_fs_mkdir(const char *path, char *err, size_t errlen);
int throttle_fs_move_ids(const char *from, const char *to, char *err, size_t errlen);
bool throttle_fs_exists(const char *path);
/* A message built from other messages: cut short rather than refused when it does not fit. */
void throttle_msg(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int throttle_fs_path(char *out, size_t len, const char *dir, const char *file);

/* throttle_mounts.c: the mount point of a filesystem type (and, for cgroup v1, controller) in a
 * mountinfo file; 0 or -1. */
int throttle_mount_find(const char *mountinfo, const char *fstype, const char *option, char *out, size_t len);

/* throttle_resctrl.c */
void throttle_resctrl_detect(throttle_t *t);
unsigned throttle_resctrl_percent(double share, unsigned min_percent, unsigned gran_percent);
int throttle_resctrl_schemata(const throttle_resctrl_t *mb, unsigned percent, char *out, size_t len);
int throttle_resctrl_create(throttle_group_t *g, char *err, size_t errlen);
int throttle_resctrl_set(throttle_group_t *g, double share, double *achieved, char *err, size_t errlen);
int throttle_resctrl_add_pid(throttle_group_t *g, pid_t pid, char *err, size_t errlen);
void throttle_resctrl_remove(throttle_group_t *g);

/* throttle_cgroup.c */
void throttle_cgroup_detect(throttle_t *t);
int throttle_cgroup_create(throttle_group_t *g, throttle_dir_t which, char *err, size_t errlen);
void throttle_cgroup_remove(throttle_group_t *g, throttle_dir_t which);
void throttle_cgroup_free(throttle_t *t);

/* throttle_quota.c */
long long throttle_cpu_quota_us(double share, int ncpus); /* -1 = unlimited */
int throttle_quota_init(throttle_group_t *g, knob_t knob, char *err, size_t errlen);
int throttle_quota_set(throttle_group_t *g, double share, double *achieved, char *err, size_t errlen);
int throttle_quota_restore(throttle_group_t *g, char *err, size_t errlen);

/* throttle_group.c: a group of a kind, its knobs not chosen yet (NULL: out of memory, said in
 * err); then its knobs chosen by its kind — false when none can hold it, and then the group is
 * destroyed (what its kind made undone) and notes say why. */
throttle_group_t *throttle_group_alloc(throttle_t *t, const char *name, int ncpus, const throttle_group_ops_t *ops,
                                       char *err, size_t errlen);
bool throttle_group_choose_knobs(throttle_group_t *g, char *notes, size_t len);

/* throttle_group.c: every knob of the group at a share — the cores, then the primary knob, then
 * duty cycling for what they do not reach — without changing the share the group is held to
 * (a let-go lifts everything with share 1 and puts back g->share after). */
int throttle_group_apply(throttle_group_t *g, double share, double now, char *err, size_t errlen);

/* throttle_duty.c */
int throttle_duty_resume(throttle_group_t *g, char *err, size_t errlen);
int throttle_duty_set(throttle_group_t *g, double duty, double now, char *err, size_t errlen);
void throttle_duty_signal_member(throttle_member_t *m, int sig);
int throttle_freezer_write(throttle_group_t *g, bool frozen, char *err, size_t errlen);

/* throttle.c */
bool throttle_valid_name(const char *name);

/* throttle_sets.c: the sets an attached group keeps. */
int throttle_pids_add(throttle_pids_t *p, pid_t pid);
bool throttle_pids_has(const throttle_pids_t *p, pid_t pid);
void throttle_pids_free(throttle_pids_t *p);
int throttle_list_add(throttle_list_t *l, const char *text);
bool throttle_list_has(const throttle_list_t *l, const char *text);
void throttle_list_free(throttle_list_t *l);

/* throttle_slurm.c: reading a Slurm job's cgroups. */
void throttle_slurm_pids(const throttle_slurm_job_t *job, throttle_pids_t *pids);
void throttle_slurm_task_dirs(const throttle_slurm_job_t *job, throttle_list_t *dirs);
bool throttle_slurm_suspended(const throttle_slurm_job_t *job, char *where, size_t len);
bool throttle_slurm_present(const throttle_slurm_job_t *job);
bool throttle_process_signalled(pid_t pid);
bool throttle_process_exiting(pid_t pid);
bool throttle_process_stop_pending(pid_t pid);

/* The signals part of throttle_group_watch (throttle_signals.c): a let-go that ends, an exit that
 * lets the job go whole, a continued process stopped again, a signal let through. */
void throttle_signals_watch(throttle_group_t *g, double now, throttle_watch_t *out);

/* throttle_journal.c: what an attached group holds, recorded before it holds it. */
int throttle_journal_write(const throttle_group_t *g, char *err, size_t errlen);
void throttle_journal_remove(const throttle_group_t *g);
void throttle_journal_undo(const char *journal_dir);

/* throttle_cores.c: the spatial knob. set narrows each process of a multi-threaded group to the
 * first ceil(share x n) of the n CPUs its threads had (kept: the largest fraction any process
 * keeps; 1 when none is narrowed), or gives them back when share is 1 or the group is not one to
 * narrow; refresh narrows processes that came since; restore gives back everything, forget one
 * process. What it narrows is recorded in journal_dir/cores@<name> first (throttle_journal.c). */
void throttle_cores_init(throttle_group_t *g);
int throttle_cores_set(throttle_group_t *g, double share, double *kept, char *err, size_t errlen);
void throttle_cores_refresh(throttle_group_t *g);
void throttle_cores_restore(throttle_group_t *g);
void throttle_cores_forget(throttle_group_t *g, pid_t pid);
void throttle_cores_undo_line(const char *pid, const char *ticks, const char *tid, const char *cpus);
/* The pids in one cgroup.procs (slurmstepd left out). */
void throttle_read_procs(const char *path, throttle_pids_t *pids);

/* throttle_fs.c: a file's whole new content, or its old one, never half (temp file and rename;
 * no fsync: it guards against the daemon's death, which leaves the page cache whole). */
int throttle_fs_replace(const char *path, const char *text, char *err, size_t errlen);

#endif
