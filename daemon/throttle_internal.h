/* throttle_internal: what the throttle modules share — the detected machine, a group's state,
 * the file helpers and the pure share -> setting mappings. The daemon sees only throttle.h. */
#ifndef COSCHED_THROTTLE_INTERNAL_H
#define COSCHED_THROTTLE_INTERNAL_H

#include "throttle.h"

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

/* The directories a group uses; "" = not used. */
typedef enum { DIR_MB, DIR_CG2, DIR_CPU1, DIR_FREEZER1, DIR_COUNT } throttle_dir_t;

struct throttle_group {
    throttle_t *t;
    char name[THROTTLE_NAME_MAX];
    int ncpus;
    knob_t primary;
    knob_t duty_knob;       /* KNOB_FREEZER, KNOB_SIGSTOP, or KNOB_COUNT: none allowed */
    bool freezer_v2;        /* which freezer the duty knob writes */
    char dir[DIR_COUNT][THROTTLE_LONG_PATH];
    char join[DIR_COUNT][THROTTLE_LONG_PATH]; /* the file join_self writes, per used dir */
    throttle_member_t *members;
    size_t nmembers, cap;
    double share;
    /* duty cycling: the group runs duty x duty_period of each period, paused the rest */
    double duty, phase_start, deadline;
    bool cycling, paused; /* paused: the phase we are in (a failed freeze still moves on) */
    bool ever_paused;     /* so destroy resumes whatever a failed thaw may have left paused */
    char last_error[THROTTLE_DESC_MAX];
};

static inline bool throttle_allowed(const throttle_config_t *cfg, knob_t k)
{
    return cfg->knobs_allowed == 0 || (cfg->knobs_allowed & (1u << k));
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

/* throttle_duty.c */
int throttle_duty_resume(throttle_group_t *g, char *err, size_t errlen);
int throttle_duty_set(throttle_group_t *g, double duty, double now, char *err, size_t errlen);
void throttle_duty_signal_member(throttle_member_t *m, int sig);
int throttle_freezer_write(throttle_group_t *g, bool frozen, char *err, size_t errlen);

/* throttle.c */
bool throttle_valid_name(const char *name);

#endif
