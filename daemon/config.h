/* config: coschedd's settings — built-in defaults, then the YAML file, then command-line flags.
 * Every key and its default is documented in docs/coschedd.yaml.md; keep the two in step. */
#ifndef COSCHED_CONFIG_H
#define COSCHED_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "guard.h"
#include "progress_source.h"

/* SYSCONFDIR/cosched/coschedd.yaml of the install (meson: /etc for the /usr prefix). */
#ifndef COSCHED_SYSCONFDIR
#define COSCHED_SYSCONFDIR "/etc"
#endif
#define CONFIG_DEFAULT_PATH COSCHED_SYSCONFDIR "/cosched/coschedd.yaml"
#define CONFIG_DEFAULT_STATE_DIR "/var/lib/coschedd"
#define CONFIG_MAX_OPERATORS 64
#define CONFIG_MAX_KEEP_ENV 32
#define CONFIG_ENV_NAME_MAX 64
#define CONFIG_MAX_PARTITIONS 64
#define CONFIG_PARTITION_MAX 64

/* progress.partitions: a Slurm partition's default progress source. */
typedef struct config_partition {
    char name[CONFIG_PARTITION_MAX];
    progress_source_t source;
} config_partition_t;

/* autoreport.partitions: whether a Slurm partition's trainers get the injected step reporter. */
typedef struct config_autoreport_partition {
    char name[CONFIG_PARTITION_MAX];
    bool enabled;
} config_autoreport_partition_t;

/* private_jobs: what ordinary users see of other users' jobs (docs/security.md, "Private data"). */
typedef enum { PRIVATE_JOBS_OFF, PRIVATE_JOBS_REDACT, PRIVATE_JOBS_HIDE } private_jobs_t;

typedef struct config {
    char socket_path[108];                     /* socket: sun_path is 108 bytes */
    char state_dir[4096];                      /* state_dir */
    char topology[4096];                       /* topology: hwloc XML file, "" = this machine */
    char policy[16];                           /* policy: exclusive | shared | l3 (validated) */
    uid_t operator_uids[CONFIG_MAX_OPERATORS]; /* operators.uids: user ids or names, resolved */
    int n_operator_uids;
    gid_t operator_gids[CONFIG_MAX_OPERATORS]; /* operators.groups: group ids or names, resolved */
    int n_operator_gids;
    double slowdown_budget;      /* slowdown_budget: fraction, e.g. 0.05 = 5 % (default 0.05) */
    int baseline_steps;          /* stats.baseline_steps: steps that make a baseline (default 20) */
    int window_steps;            /* stats.window_steps: recent steps compared with it (default 50) */
    char push_url[1024];         /* metrics.push_url: Pushgateway base URL, "" = no push */
    double push_interval;        /* metrics.push_interval: seconds (default 15) */
    char textfile[4096];         /* metrics.textfile: node_exporter textfile path, "" = none */
    double client_timeout;       /* client_timeout: seconds a client may take per frame (default 5) */
    int connections_per_user;    /* limits.connections_per_user: a uid's connections served at once (64) */
    int waiting_per_user;        /* limits.waiting_per_user: more of them kept waiting, unread (192) */
    double requests_per_user;    /* limits.requests_per_second_per_user: 0 = no limit (200; bucket: twice) */
    private_jobs_t private_jobs; /* private_jobs: off | redact | hide (default off) */
    bool guard_enabled;          /* guard.enabled: the slowdown guard throttles co-tenants (default true) */
    guard_params_t guard;        /* guard.*: the control law's parameters (its budget: slowdown_budget) */
    unsigned guard_knobs;        /* guard.knobs: bit (1u << knob_t) per knob allowed (default: all) */
    char resctrl_root[512];      /* guard.resctrl_root: "" = /sys/fs/resctrl */
    char cgroup2_root[512];      /* guard.cgroup2_root: "" = the cgroup2 mount */
    char cgroup1_root[512];      /* guard.cgroup1_root: "" = the v1 mounts (DIR/cpu, DIR/freezer) */
    double duty_period;          /* guard.duty_period: seconds of one run/stop cycle (default 0.1) */
    char guard_subtree[64];      /* guard.subtree: where its groups live; "" = from state_dir */
    double requeue_after;        /* guard.requeue_after: seconds a co-tenant Slurm started may sit at the
                                  * minimum share before it is requeued (0 = never: left held) */
    char requeue_partitions[CONFIG_MAX_PARTITIONS][64]; /* guard.requeue_partitions: co-tenants' partitions the
                                                         * site lets escalation requeue (default none) */
    int n_requeue_partitions;
    int requeues_per_owner;   /* guard.requeues_per_owner: requeues a day on one trainer owner's word (10) */
    char scontrol[256];       /* guard.scontrol: the scontrol to run (default "scontrol", from PATH) */
    char slurm_node[64];      /* guard.slurm_node: this node's name in Slurm, left out of a requeued job's
                               * nodes ("" = the host name up to its first dot, as slurmd names it) */
    char harvest_feature[64]; /* guard.harvest_feature: the node feature harvest jobs ask for, taken from
                               * the node while its trainer is over budget ("" = no gate) */
    bool extend_time_limit;   /* guard.extend_time_limit: hand a held co-tenant its lost minutes back */
    double close_after;       /* guard.close_after: seconds a co-tenant sits at the minimum before the gate closes */
    double reopen_after;      /* guard.reopen_after: seconds closed before it may open with its trainers
                               * still there (0 = only once they end) */
    char slurm_conf[4096];    /* guard.slurm_conf: where Slurm's KillWait is read ("" = $SLURM_CONF, else
                               * /etc/slurm/slurm.conf); it bounds a held co-tenant's let-go */
    double run_retention;     /* runs.retention: seconds an ended run and its output are kept (0 = forever) */
    char run_keep_env[CONFIG_MAX_KEEP_ENV][CONFIG_ENV_NAME_MAX]; /* runs.keep_environment: names passed on */
    int n_run_keep_env;
    progress_source_t progress_source;                    /* progress.source: for jobs registered without one (auto) */
    config_partition_t partitions[CONFIG_MAX_PARTITIONS]; /* progress.partitions: per Slurm partition */
    int n_partitions;
    double gpu_window;      /* progress.gpu_window: seconds per GPU observation (default 1) */
    double gpu_idle_below;  /* progress.gpu_idle_below: a window less busy is no observation (0.02) */
    double gpu_retry;       /* progress.gpu_retry: seconds before a failed library or lost GPU is tried again (30) */
    char nvml_library[256]; /* progress.nvml_library: "" = libnvidia-ml.so.1 */
    char rocm_smi_library[256]; /* progress.rocm_smi_library: "" = librocm_smi64.so.1, .7, .6, .5 */
    char pmu_event[16];         /* progress.pmu_event: instructions (or task-clock, a stand-in for tests) */
    bool autoreport_enabled;    /* autoreport.enabled: the site's switch for the injection (default true) */
    config_autoreport_partition_t autoreport_partitions[CONFIG_MAX_PARTITIONS]; /* autoreport.partitions */
    int n_autoreport_partitions;
    char autoreport_dir[4096]; /* autoreport.dir: the directory put first on trainers' PYTHONPATH
                                * ("" = where this build installs it: config_autoreport_dir) */
    double watchdog_interval;  /* set from $WATCHDOG_USEC at run time, not from the file */
} config_t;

/* Fill in the built-in defaults. */
void config_defaults(config_t *cfg);

/* Read a YAML file over the current values. A missing file is an error only when required
 * (an explicit --config); every problem is reported as "FILE:LINE:COL: what is wrong".
 * On error *cfg is left unchanged. */
int config_load(config_t *cfg, const char *path, bool required, char *err, size_t errlen);

/* Check cross-field rules (policy name, positive intervals, absolute paths...). */
int config_validate(const config_t *cfg, char *err, size_t errlen);

/* The keys read only at start (the socket, the guard's switch, knobs and roots, the GPU libraries,
 * the PMU event: "Fixed at start" in docs/coschedd.yaml.md) whose values differ between the
 * running configuration and next: how many, and their names as "guard.knobs and
 * progress.pmu_event" in names. */
int config_changed_at_start(const config_t *running, const config_t *next, char *names, size_t len);

/* Give next the running values of those keys: a reload leaves them to the next restart. */
void config_keep_at_start(config_t *next, const config_t *running);

/* A Slurm partition's name as progress.partitions and job register --partition take it. */
bool config_partition_valid(const char *name);

/* The progress source a job gets when it names none: its partition's, else progress.source. */
progress_source_t config_progress_default(const config_t *cfg, const char *partition);

/* Whether a trainer of this partition (NULL: none given) gets the injected step reporter by
 * default: never when autoreport.enabled is false, else unless its partition is listed false. */
bool config_autoreport_default(const config_t *cfg, const char *partition);

/* autoreport.dir, or where this build installs the step reporter. */
const char *config_autoreport_dir(const config_t *cfg);

/* private_jobs's names: off, redact, hide. */
int config_private_jobs_parse(const char *name, private_jobs_t *out);
const char *config_private_jobs_name(private_jobs_t setting);

/* Whether uid (with its primary gid and supplementary groups looked up by name) is an operator.
 * root always is. */
bool config_is_operator(const config_t *cfg, uid_t uid, gid_t gid);

#endif
