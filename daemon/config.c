/* config: coschedd's settings — built-in defaults, the YAML file read over them with libyaml's
 * document API (so every error can name FILE:LINE:COL), the cross-field checks, and operators. */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "bounds.h"
#include "throttle.h"

/* Where the injected step reporter is installed (daemon/meson.build: PREFIX/lib/cosched/autoreport,
 * as libcosched/meson.build installs it); autoreport.dir overrides it. */
#ifndef COSCHED_AUTOREPORT_DIR
#define COSCHED_AUTOREPORT_DIR "/usr/lib/cosched/autoreport"
#endif

/* A configuration file is a few hundred bytes; anything this large is a mistake, not a config. */
#define CONFIG_MAX_FILE (1 << 20)
/* The longest path a Unix socket can bind: sun_path is 108 bytes with the terminating NUL. */
#define CONFIG_MAX_SOCKET_PATH 107

/* The placement policies topology/plan.c knows (plan_policy_name); kept here so that reading a
 * config does not pull hwloc into every program that links it. */
static const char *const policy_names[] = {"exclusive", "shared", "l3", "cores"};

void config_defaults(config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    /* PROTO_DEFAULT_SOCKET in proto.h; spelled out so that config does not depend on jansson. */
    snprintf(cfg->socket_path, sizeof cfg->socket_path, "%s", "/run/coschedd/coschedd.sock");
    snprintf(cfg->state_dir, sizeof cfg->state_dir, "%s", CONFIG_DEFAULT_STATE_DIR);
    snprintf(cfg->policy, sizeof cfg->policy, "%s", "exclusive");
    cfg->slowdown_budget = 0.05;
    cfg->baseline_steps = 20;
    cfg->window_steps = 50;
    cfg->push_interval = 15;
    cfg->client_timeout = 5;
    cfg->connections_per_user = 64; /* a 64-task job's TaskProlog calls, served together */
    cfg->waiting_per_user = 192;
    cfg->requests_per_user = 5000;
    cfg->guard_enabled = true;
    cfg->guard_knobs = ((1u << KNOB_COUNT) - 1) & ~(1u << KNOB_CORES); /* cores: asked for (docs/throttle.md) */
    guard_params_defaults(&cfg->guard);
    cfg->duty_period = 0.1;
    snprintf(cfg->scontrol, sizeof cfg->scontrol, "scontrol");
    cfg->close_after = 60;
    cfg->reopen_after = 1800;
    cfg->requeues_per_owner = 10;
    cfg->run_retention = 7 * 86400;
    cfg->progress_source = PROGRESS_AUTO;
    cfg->gpu_window = 1;
    cfg->gpu_idle_below = 0.02;
    cfg->gpu_retry = 30;
    snprintf(cfg->pmu_event, sizeof cfg->pmu_event, "instructions");
    cfg->autoreport_enabled = true;
}

/* ---- the key table: every key the file may hold, where it goes and what it accepts ---- */

enum value_kind {
    VALUE_STRING,          /* any scalar, stored in a char array of `size` bytes */
    VALUE_POLICY,          /* a string that must be one of policy_names */
    VALUE_NUMBER,          /* a plain scalar read as a double, within [min, max] */
    VALUE_INTEGER,         /* a plain scalar read as an int, within [min, max] */
    VALUE_USERS,           /* a sequence of user names or ids */
    VALUE_GROUPS,          /* a sequence of group names or ids */
    VALUE_SECTION,         /* a nested mapping with its own keys */
    VALUE_BOOL,            /* true or false */
    VALUE_KNOBS,           /* a sequence of knob names (throttle_knob_name), stored as a bit mask */
    VALUE_ENV_NAMES,       /* a sequence of environment variable names (runs.keep_environment) */
    VALUE_SOURCE,          /* a progress source name (progress_source_name), stored as progress_source_t */
    VALUE_PARTITIONS,      /* a mapping of Slurm partition names to progress sources */
    VALUE_GPU_JUDGE,       /* mean or median (guard_gpu_judge_t): how GPU windows are judged */
    VALUE_SWITCHES,        /* a mapping of Slurm partition names to true or false (autoreport.partitions) */
    VALUE_PRIVATE,         /* off, redact or hide (private_jobs_t) */
    VALUE_PARTITION_NAMES, /* a sequence of Slurm partition names (guard.requeue_partitions) */
};

/* What a string value must look like; config_validate checks the same after the flags. */
enum string_rule {
    ANY_STRING,
    ABSOLUTE_PATH,          /* socket, state_dir */
    ABSOLUTE_PATH_OR_EMPTY, /* textfile: "" = none */
    ROOT_PATH,              /* guard roots: "" = detect, "none" = do not use, else absolute */
    PMU_EVENT,              /* progress.pmu_event: instructions or task-clock */
    GROUP_NAME,             /* guard.subtree, slurm_node, harvest_feature: "" or letters, digits, '.', '_', '-' */
    HTTP_URL_OR_EMPTY,      /* push_url: "" = no push */
};

struct key {
    const char *name;
    enum value_kind kind;
    size_t offset, size;       /* where in config_t, and the array size for strings */
    double min, max;           /* inclusive bounds of numbers */
    bool min_exclusive;        /* intervals must be > 0, not >= 0 */
    const struct key *section; /* keys of a VALUE_SECTION, ended by a NULL name */
    enum string_rule rule;
    bool at_start; /* read only at start: a reload keeps the running value and says so */
};

#define FIELD(f) .offset = offsetof(config_t, f), .size = sizeof(((config_t *)0)->f)
#define STRING_KEY_(n, f, r, start)                                                                                    \
    {                                                                                                                  \
        .name = n, .kind = VALUE_STRING, FIELD(f), .rule = r, .at_start = start                                        \
    }
#define NUMBER_KEY_(n, f, lo, hi, excl, start)                                                                         \
    {                                                                                                                  \
        .name = n, .kind = VALUE_NUMBER, FIELD(f), .min = lo, .max = hi, .min_exclusive = excl, .at_start = start      \
    }
#define STRING_KEY(n, f, r) STRING_KEY_(n, f, r, false)
#define NUMBER_KEY(n, f, lo, hi, excl) NUMBER_KEY_(n, f, lo, hi, excl, false)
/* Keys whose value is taken once, when coschedd starts (the socket it binds, the knobs it
 * probes, the GPU libraries it loads): docs/coschedd.yaml.md marks them "Fixed at start". */
#define STRING_KEY_AT_START(n, f, r) STRING_KEY_(n, f, r, true)
#define NUMBER_KEY_AT_START(n, f, lo, hi, excl) NUMBER_KEY_(n, f, lo, hi, excl, true)
#define INTEGER_KEY(n, f, lo, hi)                                                                                      \
    {                                                                                                                  \
        .name = n, .kind = VALUE_INTEGER, FIELD(f), .min = lo, .max = hi                                               \
    }

static const struct key operator_keys[] = {
    {.name = "uids", .kind = VALUE_USERS},
    {.name = "groups", .kind = VALUE_GROUPS},
    {.name = NULL},
};

static const struct key stats_keys[] = {
    INTEGER_KEY("baseline_steps", baseline_steps, 1, 1000000),
    INTEGER_KEY("window_steps", window_steps, 1, 1000000),
    {.name = NULL},
};

static const struct key metrics_keys[] = {
    STRING_KEY("push_url", push_url, HTTP_URL_OR_EMPTY),
    NUMBER_KEY("push_interval", push_interval, 0, 86400, true),
    STRING_KEY("textfile", textfile, ABSOLUTE_PATH_OR_EMPTY),
    {.name = NULL},
};

#define BOOL_KEY(n, f)                                                                                                 \
    {                                                                                                                  \
        .name = n, .kind = VALUE_BOOL, FIELD(f)                                                                        \
    }

/* The guard's law (docs/guard.md); its budget is the top-level slowdown_budget. */
static const struct key guard_keys[] = {
    {.name = "enabled", .kind = VALUE_BOOL, FIELD(guard_enabled), .at_start = true},
    {.name = "knobs", .kind = VALUE_KNOBS, FIELD(guard_knobs), .at_start = true},
    STRING_KEY_AT_START("resctrl_root", resctrl_root, ROOT_PATH),
    STRING_KEY_AT_START("cgroup2_root", cgroup2_root, ROOT_PATH),
    STRING_KEY_AT_START("cgroup1_root", cgroup1_root, ROOT_PATH),
    NUMBER_KEY_AT_START("duty_period", duty_period, 0.01, 10, false),
    STRING_KEY_AT_START("subtree", guard_subtree, GROUP_NAME),
    NUMBER_KEY("margin", guard.margin, 0, 1, false),
    INTEGER_KEY("min_samples", guard.min_samples, 3, GUARD_MAX_WINDOW),
    INTEGER_KEY("settle_steps", guard.settle_steps, 0, 100),
    INTEGER_KEY("max_window", guard.max_window, 3, GUARD_MAX_WINDOW),
    NUMBER_KEY("decrease", guard.decrease, 0, 0.95, true),
    NUMBER_KEY("increase", guard.increase, 0, 1, true),
    NUMBER_KEY("min_share", guard.min_share, 0, 0.5, false),
    NUMBER_KEY("relax_interval", guard.relax_interval, 0, 3600, false),
    NUMBER_KEY("max_backoff", guard.max_backoff, 1, 1024, false),
    INTEGER_KEY("baseline_steps", guard.baseline_steps, 3, STATS_MAX_WINDOW),
    NUMBER_KEY("baseline_max_age", guard.baseline_max_age, 1, 1e6, false),
    NUMBER_KEY("baseline_max_cost", guard.baseline_max_cost, 0, 0.5, false),
    NUMBER_KEY("pause_timeout", guard.pause_timeout, 0, 3600, true),
    NUMBER_KEY("idle_release", guard.idle_release, 0, 86400, true),
    INTEGER_KEY("law", guard.law, 1, 3),
    BOOL_KEY("attribution", guard.attribution),
    NUMBER_KEY("reprobe_interval", guard.reprobe_interval, 1, 1e6, false),
    NUMBER_KEY("requeue_after", requeue_after, 0, 1e7, false),
    {.name = "requeue_partitions", .kind = VALUE_PARTITION_NAMES},
    INTEGER_KEY("requeues_per_owner", requeues_per_owner, 1, 100000),
    STRING_KEY("scontrol", scontrol, ANY_STRING),
    STRING_KEY("slurm_node", slurm_node, GROUP_NAME),
    STRING_KEY("harvest_feature", harvest_feature, GROUP_NAME),
    BOOL_KEY("extend_time_limit", extend_time_limit),
    NUMBER_KEY("close_after", close_after, 0, 1e7, false),
    NUMBER_KEY("reopen_after", reopen_after, 0, 1e9, false),
    STRING_KEY("slurm_conf", slurm_conf, ABSOLUTE_PATH_OR_EMPTY),
    {.name = NULL},
};

/* What runs get and how long they are kept (docs/coschedd.md "Runs"). */
static const struct key runs_keys[] = {
    NUMBER_KEY("retention", run_retention, 0, 1e9, false),
    {.name = "keep_environment", .kind = VALUE_ENV_NAMES},
    {.name = NULL},
};

/* Where trainers' progress comes from (docs/guard.md, "Progress without instrumentation"). */
static const struct key progress_keys[] = {
    {.name = "source", .kind = VALUE_SOURCE, FIELD(progress_source)},
    {.name = "partitions", .kind = VALUE_PARTITIONS},
    NUMBER_KEY_AT_START("gpu_window", gpu_window, 0.2, 60, false),
    NUMBER_KEY("gpu_idle_below", gpu_idle_below, 0, 0.5, false),
    {.name = "gpu_judge", .kind = VALUE_GPU_JUDGE, FIELD(guard.gpu_judge)},
    NUMBER_KEY_AT_START("gpu_retry", gpu_retry, 0.1, 3600, false),
    STRING_KEY_AT_START("nvml_library", nvml_library, ANY_STRING),
    STRING_KEY_AT_START("rocm_smi_library", rocm_smi_library, ANY_STRING),
    STRING_KEY_AT_START("pmu_event", pmu_event, PMU_EVENT),
    {.name = NULL},
};

/* What one user may have of the control socket (docs/coschedd.md, LIMITS PER USER). */
static const struct key limits_keys[] = {
    INTEGER_KEY("connections_per_user", connections_per_user, 1, 1024),
    INTEGER_KEY("waiting_per_user", waiting_per_user, 0, 1024),
    NUMBER_KEY("requests_per_second_per_user", requests_per_user, 0, 1e6, false),
    {.name = NULL},
};

/* The injected step reporter (docs/autoreport.md, docs/slurm.md). */
static const struct key autoreport_keys[] = {
    BOOL_KEY("enabled", autoreport_enabled),
    {.name = "partitions", .kind = VALUE_SWITCHES},
    STRING_KEY("dir", autoreport_dir, ABSOLUTE_PATH_OR_EMPTY),
    {.name = NULL},
};

static const struct key top_keys[] = {
    STRING_KEY_AT_START("socket", socket_path, ABSOLUTE_PATH),
    STRING_KEY_AT_START("state_dir", state_dir, ABSOLUTE_PATH),
    STRING_KEY_AT_START("topology", topology, ANY_STRING),
    {.name = "policy", .kind = VALUE_POLICY, FIELD(policy)},
    {.name = "operators", .kind = VALUE_SECTION, .section = operator_keys},
    NUMBER_KEY("slowdown_budget", slowdown_budget, BOUNDS_BUDGET_MIN, BOUNDS_BUDGET_MAX, true),
    {.name = "stats", .kind = VALUE_SECTION, .section = stats_keys},
    {.name = "metrics", .kind = VALUE_SECTION, .section = metrics_keys},
    NUMBER_KEY("client_timeout", client_timeout, 0, 3600, true),
    {.name = "limits", .kind = VALUE_SECTION, .section = limits_keys},
    {.name = "private_jobs", .kind = VALUE_PRIVATE, FIELD(private_jobs)},
    {.name = "guard", .kind = VALUE_SECTION, .section = guard_keys},
    {.name = "runs", .kind = VALUE_SECTION, .section = runs_keys},
    {.name = "progress", .kind = VALUE_SECTION, .section = progress_keys},
    {.name = "autoreport", .kind = VALUE_SECTION, .section = autoreport_keys},
    {.name = NULL},
};

/* ---- reading the file ---- */

/* One load in progress: the file, its parsed document and the copy being filled in. */
struct load {
    const char *path;
    const char *text;
    size_t length;
    yaml_document_t *doc;
    config_t *next;
    char *err;
    size_t errlen;
};

static int fail_at(struct load *ld, yaml_mark_t mark, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail_at(struct load *ld, yaml_mark_t mark, const char *fmt, ...)
{
    int n = snprintf(ld->err, ld->errlen, "%s:%zu:%zu: ", ld->path, mark.line + 1, mark.column + 1);
    if (n >= 0 && (size_t)n < ld->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ld->err + n, ld->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const char *kind_of(const yaml_node_t *node)
{
    switch (node->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    default: return "a scalar";
    }
}

static const char *scalar_text(const yaml_node_t *node)
{
    return (const char *)node->data.scalar.value;
}

/* A plain `key:` with nothing after it, or ~ / null, means "empty" for strings (push_url: ~). */
static bool is_null(const yaml_node_t *node)
{
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *s = scalar_text(node);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static int set_string(struct load *ld, const struct key *k, const char *name, yaml_node_t *value)
{
    if (value->type != YAML_SCALAR_NODE)
        return fail_at(ld, value->start_mark, "%s must be a string, not %s", name, kind_of(value));
    const char *s = is_null(value) ? "" : scalar_text(value);
    size_t len = is_null(value) ? 0 : value->data.scalar.length;
    if (strlen(s) != len)
        return fail_at(ld, value->start_mark, "%s contains a NUL byte", name);
    if (len >= k->size)
        return fail_at(ld, value->start_mark, "%s is too long (%zu bytes, at most %zu)", name, len, k->size - 1);
    if ((k->rule == ABSOLUTE_PATH || (k->rule == ABSOLUTE_PATH_OR_EMPTY && *s)) && *s != '/')
        return fail_at(ld, value->start_mark, "%s '%s' must be an absolute path", name, s);
    if (k->rule == GROUP_NAME &&
        (strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != len || !strcmp(s, ".") ||
         !strcmp(s, "..")))
        return fail_at(ld, value->start_mark, "%s '%s' may hold only letters, digits, '.', '_' and '-'", name, s);
    if (k->rule == ROOT_PATH && *s && *s != '/' && strcmp(s, "none") != 0)
        return fail_at(ld, value->start_mark, "%s '%s' must be an absolute path, \"\" (find it) or none", name, s);
    if (k->rule == PMU_EVENT && strcmp(s, "instructions") && strcmp(s, "task-clock"))
        return fail_at(ld, value->start_mark, "%s '%s' is not instructions or task-clock", name, s);
    if (k->rule == HTTP_URL_OR_EMPTY && *s && strncmp(s, "http://", 7) && strncmp(s, "https://", 8))
        return fail_at(ld, value->start_mark, "%s '%s' must start with http:// or https://", name, s);
    if (k->kind == VALUE_POLICY) {
        bool known = false;
        for (size_t i = 0; i < sizeof policy_names / sizeof policy_names[0]; i++)
            known |= !strcmp(s, policy_names[i]);
        if (!known)
            return fail_at(ld, value->start_mark, "%s '%s' is not one of exclusive, shared, l3, cores", name, s);
    }
    memcpy((char *)ld->next + k->offset, s, len + 1);
    return 0;
}

/* Numbers must be plain scalars: a quoted "15" is a string in YAML, and accepting it would hide
 * a file written by a tool that quotes everything it does not understand. */
static int read_number(struct load *ld, const struct key *k, const char *name, yaml_node_t *value, double *out)
{
    if (value->type != YAML_SCALAR_NODE || value->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || is_null(value))
        return fail_at(ld, value->start_mark, "%s must be a number, not %s", name,
                       value->type != YAML_SCALAR_NODE ? kind_of(value)
                       : is_null(value)                ? "empty"
                                                       : "a quoted string");
    const char *s = scalar_text(value);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v))
        return fail_at(ld, value->start_mark, "%s must be a number, not '%s'", name, s);
    bool too_low = k->min_exclusive ? v <= k->min : v < k->min;
    if (too_low || v > k->max || errno == ERANGE)
        return fail_at(ld, value->start_mark, "%s %s is out of range (%s%g to %g)", name, s,
                       k->min_exclusive ? "more than " : "", k->min, k->max);
    *out = v;
    return 0;
}

static int set_number(struct load *ld, const struct key *k, const char *name, yaml_node_t *value)
{
    double v = 0;
    if (read_number(ld, k, name, value, &v) < 0)
        return -1;
    if (k->kind == VALUE_INTEGER) {
        if (v != floor(v) || strpbrk(scalar_text(value), ".eExX"))
            return fail_at(ld, value->start_mark, "%s must be a whole number, not '%s'", name, scalar_text(value));
        *(int *)((char *)ld->next + k->offset) = (int)v;
    } else {
        *(double *)((char *)ld->next + k->offset) = v;
    }
    return 0;
}

/* A numeric id: digits only, below the (uid_t)-1 that means "no id". */
static bool parse_id(const char *s, unsigned long *id)
{
    if (!*s || strspn(s, "0123456789") != strlen(s))
        return false;
    errno = 0;
    unsigned long v = strtoul(s, NULL, 10);
    if (errno == ERANGE || v >= UINT32_MAX)
        return false;
    *id = v;
    return true;
}

/* operators.uids / operators.groups: names are resolved now, so a typo fails at start-up rather
 * than silently locking an operator out. */
static int set_ids(struct load *ld, const struct key *k, const char *name, yaml_node_t *value)
{
    bool users = k->kind == VALUE_USERS;
    bool empty = value->type == YAML_SCALAR_NODE && is_null(value); /* "uids:" alone = none */
    if (value->type != YAML_SEQUENCE_NODE && !empty)
        return fail_at(ld, value->start_mark, "%s must be a list of %s names or ids, not %s", name,
                       users ? "user" : "group", kind_of(value));
    yaml_node_item_t *first = empty ? NULL : value->data.sequence.items.start;
    yaml_node_item_t *end = empty ? NULL : value->data.sequence.items.top;
    int n = 0;
    for (yaml_node_item_t *it = first; it < end; it++) {
        yaml_node_t *item = yaml_document_get_node(ld->doc, *it);
        if (item->type != YAML_SCALAR_NODE || is_null(item))
            return fail_at(ld, item->start_mark, "%s: each entry must be a %s name or id, not %s", name,
                           users ? "user" : "group", item->type != YAML_SCALAR_NODE ? kind_of(item) : "empty");
        if (n == CONFIG_MAX_OPERATORS)
            return fail_at(ld, item->start_mark, "%s: more than %d entries", name, CONFIG_MAX_OPERATORS);
        const char *s = scalar_text(item);
        unsigned long id;
        if (!parse_id(s, &id)) {
            char buf[16384];
            bool found = false;
            int rc;
            if (users) {
                struct passwd pw, *res = NULL;
                rc = getpwnam_r(s, &pw, buf, sizeof buf, &res);
                if (res) {
                    id = pw.pw_uid;
                    found = true;
                }
            } else {
                struct group gr, *res = NULL;
                rc = getgrnam_r(s, &gr, buf, sizeof buf, &res);
                if (res) {
                    id = gr.gr_gid;
                    found = true;
                }
            }
            /* "No such name" comes back as 0 or as one of these, depending on the NSS module. */
            if (!found && rc && rc != ENOENT && rc != ESRCH && rc != EBADF && rc != EPERM)
                return fail_at(ld, item->start_mark, "%s: cannot look up %s '%s': %s", name, users ? "user" : "group",
                               s, strerror(rc));
            if (!found)
                return fail_at(ld, item->start_mark, "%s: no such %s '%s'", name, users ? "user" : "group", s);
        }
        if (users)
            ld->next->operator_uids[n++] = (uid_t)id;
        else
            ld->next->operator_gids[n++] = (gid_t)id;
    }
    if (users)
        ld->next->n_operator_uids = n;
    else
        ld->next->n_operator_gids = n;
    return 0;
}

static int read_bool(struct load *ld, const char *name, yaml_node_t *value, bool *out)
{
    const char *s = value->type == YAML_SCALAR_NODE ? scalar_text(value) : "";
    bool plain = value->type == YAML_SCALAR_NODE && value->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    bool yes = plain && (!strcmp(s, "true") || !strcmp(s, "True")),
         no = plain && (!strcmp(s, "false") || !strcmp(s, "False"));
    if (!yes && !no)
        return fail_at(ld, value->start_mark, "%s must be true or false", name);
    *out = yes;
    return 0;
}

/* guard.knobs: the knobs the guard may use (the order of preference is fixed: docs/guard.md). */
static int set_knobs(struct load *ld, const struct key *k, const char *name, yaml_node_t *value)
{
    if (value->type != YAML_SEQUENCE_NODE || value->data.sequence.items.start == value->data.sequence.items.top)
        return fail_at(ld, value->start_mark, "%s must be a non-empty list of knob names", name);
    unsigned mask = 0;
    for (yaml_node_item_t *it = value->data.sequence.items.start; it < value->data.sequence.items.top; it++) {
        yaml_node_t *item = yaml_document_get_node(ld->doc, *it);
        knob_t found;
        if (item->type != YAML_SCALAR_NODE || throttle_knob_parse(scalar_text(item), &found) < 0)
            return fail_at(ld, item->start_mark,
                           "%s: '%s' is not a knob (resctrl-mb, cpu.max, cfs-quota, freezer, "
                           "sigstop)",
                           name, item->type == YAML_SCALAR_NODE ? scalar_text(item) : "?");
        mask |= 1u << found;
    }
    *(unsigned *)((char *)ld->next + k->offset) = mask;
    return 0;
}

/* runs.keep_environment: names of the daemon's own variables that runs get too (a sanitizer's
 * options, a site's proxy); nothing else of root's environment reaches a run. */
static int set_env_names(struct load *ld, const char *name, yaml_node_t *value)
{
    if (value->type == YAML_SCALAR_NODE && is_null(value)) { /* keep_environment: ~ — none */
        ld->next->n_run_keep_env = 0;
        return 0;
    }
    if (value->type != YAML_SEQUENCE_NODE)
        return fail_at(ld, value->start_mark, "%s must be a list of environment variable names", name);
    int n = 0;
    for (yaml_node_item_t *it = value->data.sequence.items.start; it < value->data.sequence.items.top; it++) {
        yaml_node_t *item = yaml_document_get_node(ld->doc, *it);
        const char *s = item->type == YAML_SCALAR_NODE ? scalar_text(item) : "";
        size_t len = strlen(s);
        bool valid = len > 0 && len < CONFIG_ENV_NAME_MAX && !(s[0] >= '0' && s[0] <= '9') &&
                     strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == len;
        if (!valid)
            return fail_at(ld, item->start_mark, "%s: '%s' is not an environment variable name", name, s);
        if (n == CONFIG_MAX_KEEP_ENV)
            return fail_at(ld, item->start_mark, "%s: at most %d names", name, CONFIG_MAX_KEEP_ENV);
        memcpy(ld->next->run_keep_env[n++], s, len + 1);
    }
    ld->next->n_run_keep_env = n;
    return 0;
}

/* guard.requeue_partitions: [harvest, preempt]; ~ or [] for none. */
static int set_partition_names(struct load *ld, const char *name, yaml_node_t *value)
{
    if (value->type == YAML_SCALAR_NODE && is_null(value)) {
        ld->next->n_requeue_partitions = 0;
        return 0;
    }
    if (value->type != YAML_SEQUENCE_NODE)
        return fail_at(ld, value->start_mark, "%s must be a list of Slurm partition names", name);
    int n = 0;
    for (yaml_node_item_t *it = value->data.sequence.items.start; it < value->data.sequence.items.top; it++) {
        yaml_node_t *item = yaml_document_get_node(ld->doc, *it);
        const char *s = item->type == YAML_SCALAR_NODE ? scalar_text(item) : "";
        if (!config_partition_valid(s))
            return fail_at(ld, item->start_mark,
                           "%s: '%s' is not a partition name (1-63 letters, digits, '.', '_', '-')", name, s);
        if (n == CONFIG_MAX_PARTITIONS)
            return fail_at(ld, item->start_mark, "%s: at most %d partitions", name, CONFIG_MAX_PARTITIONS);
        snprintf(ld->next->requeue_partitions[n++], sizeof ld->next->requeue_partitions[0], "%s", s);
    }
    ld->next->n_requeue_partitions = n;
    return 0;
}

/* progress.source, and each value of progress.partitions. */
static int read_source(struct load *ld, const char *name, yaml_node_t *value, progress_source_t *out)
{
    const char *s = value->type == YAML_SCALAR_NODE ? scalar_text(value) : "";
    if (value->type != YAML_SCALAR_NODE || progress_source_parse(s, out) < 0)
        return fail_at(ld, value->start_mark, "%s '%s' is not a progress source (auto, steps, gpu, pmu, none)", name,
                       value->type == YAML_SCALAR_NODE ? s : kind_of(value));
    return 0;
}

static const char *const private_jobs_names[] = {
    [PRIVATE_JOBS_OFF] = "off",
    [PRIVATE_JOBS_REDACT] = "redact",
    [PRIVATE_JOBS_HIDE] = "hide",
};

int config_private_jobs_parse(const char *name, private_jobs_t *out)
{
    for (size_t i = 0; i < sizeof private_jobs_names / sizeof private_jobs_names[0]; i++)
        if (name && strcmp(name, private_jobs_names[i]) == 0) {
            *out = (private_jobs_t)i;
            return 0;
        }
    return -1;
}

const char *config_private_jobs_name(private_jobs_t setting)
{
    return private_jobs_names[setting];
}

/* private_jobs: off, redact or hide. A YAML `off` is a plain scalar like any other here. */
static int read_private_jobs(struct load *ld, const char *name, yaml_node_t *value, private_jobs_t *out)
{
    const char *s = value->type == YAML_SCALAR_NODE ? scalar_text(value) : "";
    if (value->type != YAML_SCALAR_NODE || config_private_jobs_parse(s, out) < 0)
        return fail_at(ld, value->start_mark, "%s '%s' is not off, redact or hide", name,
                       value->type == YAML_SCALAR_NODE ? s : kind_of(value));
    return 0;
}

/* progress.gpu_judge: mean (the estimator fitted to busy fractions) or median (as steps). */
static int read_gpu_judge(struct load *ld, const char *name, yaml_node_t *value, int *out)
{
    const char *s = value->type == YAML_SCALAR_NODE ? scalar_text(value) : "";
    if (value->type == YAML_SCALAR_NODE && strcmp(s, "mean") == 0)
        *out = GUARD_GPU_MEAN;
    else if (value->type == YAML_SCALAR_NODE && strcmp(s, "median") == 0)
        *out = GUARD_GPU_MEDIAN;
    else
        return fail_at(ld, value->start_mark, "%s '%s' is not a way to judge GPU windows (mean, median)", name,
                       value->type == YAML_SCALAR_NODE ? s : kind_of(value));
    return 0;
}

bool config_partition_valid(const char *s)
{
    size_t len = strlen(s);
    return len > 0 && len < CONFIG_PARTITION_MAX &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == len;
}

/* One key of a per-partition mapping (progress.partitions, autoreport.partitions): a partition
 * name, not given before in the same mapping, within the table's room; NULL after an error. */
static const char *partition_key(struct load *ld, const char *name, yaml_node_t *map, yaml_node_pair_t *pair, int n)
{
    yaml_node_t *key = yaml_document_get_node(ld->doc, pair->key);
    const char *partition = key->type == YAML_SCALAR_NODE ? scalar_text(key) : "";
    if (!config_partition_valid(partition)) {
        fail_at(ld, key->start_mark, "%s: '%s' is not a partition name (letters, digits, '.', '_', '-')", name,
                partition);
        return NULL;
    }
    for (yaml_node_pair_t *before = map->data.mapping.pairs.start; before < pair; before++)
        if (!strcmp(scalar_text(yaml_document_get_node(ld->doc, before->key)), partition)) {
            fail_at(ld, key->start_mark, "%s: partition '%s' is given twice", name, partition);
            return NULL;
        }
    if (n == CONFIG_MAX_PARTITIONS) {
        fail_at(ld, key->start_mark, "%s: at most %d partitions", name, CONFIG_MAX_PARTITIONS);
        return NULL;
    }
    return partition;
}

/* A per-partition mapping's value must be a mapping, or empty (none listed). */
static int partition_map(struct load *ld, const char *name, yaml_node_t *value, const char *values)
{
    if (value->type == YAML_SCALAR_NODE && is_null(value))
        return 0;
    if (value->type != YAML_MAPPING_NODE)
        return fail_at(ld, value->start_mark, "%s must be a mapping of partition names to %s", name, values);
    return 1;
}

/* progress.partitions: {gpu: gpu, cpu: pmu}, as the prolog passes $SLURM_JOB_PARTITION. */
static int set_partitions(struct load *ld, const char *name, yaml_node_t *value)
{
    int rc = partition_map(ld, name, value, "progress sources");
    int n = 0;
    for (yaml_node_pair_t *pair = rc > 0 ? value->data.mapping.pairs.start : NULL;
         pair && pair < value->data.mapping.pairs.top; pair++) {
        const char *partition = partition_key(ld, name, value, pair, n);
        config_partition_t *p = &ld->next->partitions[n];
        if (!partition || read_source(ld, name, yaml_document_get_node(ld->doc, pair->value), &p->source) < 0)
            return -1;
        snprintf(p->name, sizeof p->name, "%s", partition);
        n++;
    }
    if (rc >= 0)
        ld->next->n_partitions = n;
    return rc < 0 ? -1 : 0;
}

/* autoreport.partitions: {gpu: true, cpu: false}. */
static int set_autoreport_partitions(struct load *ld, const char *name, yaml_node_t *value)
{
    int rc = partition_map(ld, name, value, "true or false");
    int n = 0;
    for (yaml_node_pair_t *pair = rc > 0 ? value->data.mapping.pairs.start : NULL;
         pair && pair < value->data.mapping.pairs.top; pair++) {
        const char *partition = partition_key(ld, name, value, pair, n);
        config_autoreport_partition_t *p = &ld->next->autoreport_partitions[n];
        if (!partition || read_bool(ld, name, yaml_document_get_node(ld->doc, pair->value), &p->enabled) < 0)
            return -1;
        snprintf(p->name, sizeof p->name, "%s", partition);
        n++;
    }
    if (rc >= 0)
        ld->next->n_autoreport_partitions = n;
    return rc < 0 ? -1 : 0;
}

static int read_mapping(struct load *ld, yaml_node_t *map, const struct key *keys, const char *section);

static int set_value(struct load *ld, const struct key *k, const char *name, yaml_node_t *value)
{
    switch (k->kind) {
    case VALUE_STRING:
    case VALUE_POLICY: return set_string(ld, k, name, value);
    case VALUE_NUMBER:
    case VALUE_INTEGER: return set_number(ld, k, name, value);
    case VALUE_USERS:
    case VALUE_GROUPS: return set_ids(ld, k, name, value);
    case VALUE_BOOL: return read_bool(ld, name, value, (bool *)((char *)ld->next + k->offset));
    case VALUE_KNOBS: return set_knobs(ld, k, name, value);
    case VALUE_ENV_NAMES: return set_env_names(ld, name, value);
    case VALUE_SOURCE: return read_source(ld, name, value, (progress_source_t *)((char *)ld->next + k->offset));
    case VALUE_PARTITION_NAMES: return set_partition_names(ld, name, value);
    case VALUE_PRIVATE: return read_private_jobs(ld, name, value, (private_jobs_t *)((char *)ld->next + k->offset));
    case VALUE_PARTITIONS: return set_partitions(ld, name, value);
    case VALUE_GPU_JUDGE: return read_gpu_judge(ld, name, value, (int *)((char *)ld->next + k->offset));
    case VALUE_SWITCHES: return set_autoreport_partitions(ld, name, value);
    case VALUE_SECTION:
        if (value->type == YAML_SCALAR_NODE && is_null(value))
            return 0; /* "metrics:" with every key under it commented out */
        if (value->type != YAML_MAPPING_NODE)
            return fail_at(ld, value->start_mark, "%s must be a mapping of keys, not %s", name, kind_of(value));
        return read_mapping(ld, value, k->section, name);
    }
    return -1;
}

/* A key's name as the file spells it: "guard.knobs" for knobs in guard, "socket" at the top. */
static void qualify(char *buf, size_t len, const char *section, const char *name)
{
    snprintf(buf, len, "%s%s%s", section ? section : "", section ? "." : "", name);
}

static void list_keys(const struct key *keys, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const struct key *k = keys; k->name && used < len; k++) {
        int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", k->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* One mapping of the file against its table: each key known, given once, with a value of its kind. */
static int read_mapping(struct load *ld, yaml_node_t *map, const struct key *keys, const char *section)
{
    yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
    for (yaml_node_pair_t *pair = pairs; pair < map->data.mapping.pairs.top; pair++) {
        yaml_node_t *key = yaml_document_get_node(ld->doc, pair->key);
        yaml_node_t *value = yaml_document_get_node(ld->doc, pair->value);
        if (key->type != YAML_SCALAR_NODE)
            return fail_at(ld, key->start_mark, "a key must be a name, not %s", kind_of(key));
        const char *name = scalar_text(key);
        for (yaml_node_pair_t *before = pairs; before < pair; before++) {
            yaml_node_t *other = yaml_document_get_node(ld->doc, before->key);
            if (other->type == YAML_SCALAR_NODE && !strcmp(scalar_text(other), name))
                return fail_at(ld, key->start_mark, "duplicate key '%s' (first given at line %zu)", name,
                               other->start_mark.line + 1);
        }
        const struct key *k = keys;
        while (k->name && strcmp(k->name, name))
            k++;
        if (!k->name) {
            char valid[256];
            list_keys(keys, valid, sizeof valid);
            return fail_at(ld, key->start_mark, "unknown key '%s'%s%s%s; valid keys are: %s", name,
                           section ? " in '" : "", section ? section : "", section ? "'" : "", valid);
        }
        char qualified[64];
        qualify(qualified, sizeof qualified, section, k->name);
        if (set_value(ld, k, qualified, value) < 0)
            return -1;
    }
    return 0;
}

/* libyaml's reader errors give a byte offset, not a mark: count lines to the same FILE:LINE:COL. */
static yaml_mark_t mark_at_offset(const struct load *ld, size_t offset)
{
    yaml_mark_t mark = {0, 0, 0};
    for (size_t i = 0; i < offset && i < ld->length; i++) {
        if (ld->text[i] == '\n') {
            mark.line++;
            mark.column = 0;
        } else {
            mark.column++;
        }
    }
    return mark;
}

static int syntax_error(struct load *ld, const yaml_parser_t *parser)
{
    if (parser->error == YAML_MEMORY_ERROR)
        return fail_at(ld, parser->problem_mark, "out of memory while parsing");
    if (parser->error == YAML_READER_ERROR)
        return fail_at(ld, mark_at_offset(ld, parser->problem_offset), "YAML syntax error: %s", parser->problem);
    if (parser->context)
        return fail_at(ld, parser->problem_mark, "YAML syntax error: %s (%s at line %zu column %zu)", parser->problem,
                       parser->context, parser->context_mark.line + 1, parser->context_mark.column + 1);
    return fail_at(ld, parser->problem_mark, "YAML syntax error: %s", parser->problem ? parser->problem : "unknown");
}

/* Parse the text into ld->next: exactly one document whose root is a mapping (or empty). */
static int parse_text(struct load *ld)
{
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(ld->err, ld->errlen, "%s: cannot initialise the YAML parser", ld->path);
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)ld->text, ld->length);
    int rc = -1;
    if (!yaml_parser_load(&parser, &doc)) {
        syntax_error(ld, &parser);
        goto out_parser;
    }
    ld->doc = &doc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || (root->type == YAML_SCALAR_NODE && is_null(root)))
        rc = 0; /* only comments, or an empty document: the defaults stand */
    else if (root->type != YAML_MAPPING_NODE)
        rc = fail_at(ld, root->start_mark, "the file must be a mapping of keys (socket: ..., policy: ...), not %s",
                     kind_of(root));
    else
        rc = read_mapping(ld, root, top_keys, NULL);
    if (rc == 0) {
        /* A second document would be silently ignored by a one-document reader; refuse it instead. */
        if (!yaml_parser_load(&parser, &extra)) {
            rc = syntax_error(ld, &parser);
        } else {
            if (yaml_document_get_root_node(&extra))
                rc = fail_at(ld, extra.start_mark, "a second YAML document starts here; the file must hold one");
            yaml_document_delete(&extra);
        }
    }
    yaml_document_delete(&doc);
out_parser:
    yaml_parser_delete(&parser);
    return rc;
}

static char *read_file(const char *path, size_t *length, char *err, size_t errlen, int *error)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *error = errno;
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(CONFIG_MAX_FILE + 1);
    if (!text) {
        *error = ENOMEM;
        snprintf(err, errlen, "%s: out of memory", path);
        fclose(f);
        return NULL;
    }
    errno = 0;
    size_t n = fread(text, 1, CONFIG_MAX_FILE + 1, f);
    *error = ferror(f) ? (errno ? errno : EIO) : 0; /* EISDIR for a directory */
    fclose(f);
    if (*error || n > CONFIG_MAX_FILE) {
        if (*error)
            snprintf(err, errlen, "%s: cannot read: %s", path, strerror(*error));
        else
            snprintf(err, errlen, "%s: larger than %d bytes, not a configuration file", path, CONFIG_MAX_FILE);
        *error = *error ? *error : EFBIG;
        free(text);
        return NULL;
    }
    text[n] = '\0';
    *length = n;
    return text;
}

int config_load(config_t *cfg, const char *path, bool required, char *err, size_t errlen)
{
    size_t length;
    int error;
    char *text = read_file(path, &length, err, errlen, &error);
    if (!text) {
        if (error == ENOENT && !required) {
            if (errlen)
                err[0] = '\0';
            return 0;
        }
        return -1;
    }
    /* Parse into a copy: a file that fails half-way must not leave half its values behind. */
    config_t next = *cfg;
    struct load ld = {path, text, length, NULL, &next, err, errlen};
    int rc = parse_text(&ld);
    free(text);
    if (rc == 0)
        *cfg = next;
    return rc;
}

/* ---- checks across fields, for the file and the command-line flags alike ---- */

static int invalid(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int invalid(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int config_validate(const config_t *cfg, char *err, size_t errlen)
{
    bool known = false;
    for (size_t i = 0; i < sizeof policy_names / sizeof policy_names[0]; i++)
        known |= !strncmp(cfg->policy, policy_names[i], sizeof cfg->policy);
    if (!known)
        return invalid(err, errlen, "policy '%.*s' is not one of exclusive, shared, l3, cores", (int)sizeof cfg->policy,
                       cfg->policy);
    size_t socket_len = strnlen(cfg->socket_path, sizeof cfg->socket_path);
    if (socket_len > CONFIG_MAX_SOCKET_PATH)
        return invalid(err, errlen, "socket path is longer than the %d bytes a Unix socket path holds",
                       CONFIG_MAX_SOCKET_PATH);
    if (cfg->socket_path[0] != '/')
        return invalid(err, errlen, "socket '%s' must be an absolute path", cfg->socket_path);
    if (cfg->state_dir[0] != '/')
        return invalid(err, errlen, "state_dir '%s' must be an absolute path", cfg->state_dir);
    if (!bounds_budget_ok(cfg->slowdown_budget))
        return invalid(err, errlen, "slowdown_budget %g is out of range (more than %g to %g)", cfg->slowdown_budget,
                       BOUNDS_BUDGET_MIN, BOUNDS_BUDGET_MAX);
    if (cfg->baseline_steps <= 0 || cfg->window_steps <= 0)
        return invalid(err, errlen, "stats.baseline_steps (%d) and stats.window_steps (%d) must be positive",
                       cfg->baseline_steps, cfg->window_steps);
    if (!(cfg->push_interval > 0) || !isfinite(cfg->push_interval))
        return invalid(err, errlen, "metrics.push_interval %g must be more than 0 seconds", cfg->push_interval);
    if (!(cfg->client_timeout > 0) || !isfinite(cfg->client_timeout))
        return invalid(err, errlen, "client_timeout %g must be more than 0 seconds", cfg->client_timeout);
    if (cfg->requests_per_user > 0 && cfg->requests_per_user < 1) /* a bucket of 2 x rate holds no token */
        return invalid(err, errlen, "limits.requests_per_second_per_user %g must be 0 (no limit) or at least 1",
                       cfg->requests_per_user);
    if (!(cfg->watchdog_interval >= 0) || !isfinite(cfg->watchdog_interval))
        return invalid(err, errlen, "watchdog interval %g must not be negative", cfg->watchdog_interval);
    if (cfg->push_url[0] && strncmp(cfg->push_url, "http://", 7) && strncmp(cfg->push_url, "https://", 8))
        return invalid(err, errlen, "metrics.push_url '%s' must start with http:// or https://", cfg->push_url);
    if (cfg->textfile[0] && cfg->textfile[0] != '/')
        return invalid(err, errlen, "metrics.textfile '%s' must be an absolute path", cfg->textfile);
    if (cfg->guard.min_samples > cfg->guard.max_window)
        return invalid(err, errlen, "guard.min_samples (%d) must not exceed guard.max_window (%d)",
                       cfg->guard.min_samples, cfg->guard.max_window);
    return 0;
}

progress_source_t config_progress_default(const config_t *cfg, const char *partition)
{
    for (int i = 0; partition && i < cfg->n_partitions; i++)
        if (!strcmp(cfg->partitions[i].name, partition))
            return cfg->partitions[i].source;
    return cfg->progress_source;
}

const char *config_autoreport_dir(const config_t *cfg)
{
    return cfg->autoreport_dir[0] ? cfg->autoreport_dir : COSCHED_AUTOREPORT_DIR;
}

bool config_autoreport_default(const config_t *cfg, const char *partition)
{
    if (!cfg->autoreport_enabled)
        return false;
    for (int i = 0; partition && i < cfg->n_autoreport_partitions; i++)
        if (!strcmp(cfg->autoreport_partitions[i].name, partition))
            return cfg->autoreport_partitions[i].enabled;
    return true;
}

/* ---- a reload: the keys read only at start keep their running values ---- */

/* Each key marked at_start, with its name as the file spells it ("guard.knobs"), in table order. */
typedef void at_start_fn(const struct key *k, const char *name, void *ctx);

static void each_key_at_start(at_start_fn *fn, void *ctx)
{
    for (const struct key *k = top_keys; k->name; k++) {
        if (k->at_start)
            fn(k, k->name, ctx);
        for (const struct key *sub = k->kind == VALUE_SECTION ? k->section : NULL; sub && sub->name; sub++) {
            char name[64]; /* sections hold keys, never sections */
            qualify(name, sizeof name, k->name, sub->name);
            if (sub->at_start)
                fn(sub, name, ctx);
        }
    }
}

static bool value_differs(const struct key *k, const config_t *a, const config_t *b)
{
    const char *x = (const char *)a + k->offset, *y = (const char *)b + k->offset;
    if (k->kind == VALUE_STRING)
        return strncmp(x, y, k->size) != 0; /* past the NUL a shorter value leaves a longer one's bytes */
    if (k->kind == VALUE_NUMBER)
        return *(const double *)x != *(const double *)y;
    return memcmp(x, y, k->size) != 0; /* a bool, the knob mask */
}

struct changes {
    const config_t *running, *next;
    int count, total; /* total: found by a first pass, so that the last name gets " and " */
    char *names;
    size_t len, used;
};

static void note_change(const struct key *k, const char *name, void *ctx)
{
    struct changes *c = ctx;
    if (!value_differs(k, c->running, c->next))
        return;
    c->count++;
    if (!c->names || c->used >= c->len)
        return;
    const char *sep = c->count == 1 ? "" : c->count == c->total ? " and " : ", ";
    int n = snprintf(c->names + c->used, c->len - c->used, "%s%s", sep, name);
    c->used += n > 0 ? (size_t)n : 0;
}

int config_changed_at_start(const config_t *running, const config_t *next, char *names, size_t len)
{
    struct changes c = {running, next, 0, 0, NULL, 0, 0};
    each_key_at_start(note_change, &c);
    c = (struct changes){running, next, 0, c.count, names, len, 0};
    if (len)
        names[0] = '\0';
    each_key_at_start(note_change, &c);
    return c.count;
}

struct keep {
    const config_t *running;
    config_t *next;
};

static void keep_value(const struct key *k, const char *name, void *ctx)
{
    (void)name;
    struct keep *kp = ctx;
    memcpy((char *)kp->next + k->offset, (const char *)kp->running + k->offset, k->size);
}

void config_keep_at_start(config_t *next, const config_t *running)
{
    struct keep kp = {running, next};
    each_key_at_start(keep_value, &kp);
}

/* ---- who may run privileged commands ---- */

static bool gid_listed(const config_t *cfg, gid_t gid)
{
    for (int i = 0; i < cfg->n_operator_gids; i++)
        if (cfg->operator_gids[i] == gid)
            return true;
    return false;
}

bool config_is_operator(const config_t *cfg, uid_t uid, gid_t gid)
{
    if (uid == 0)
        return true;
    for (int i = 0; i < cfg->n_operator_uids; i++)
        if (cfg->operator_uids[i] == uid)
            return true;
    if (cfg->n_operator_gids == 0)
        return false; /* spare the NSS lookups on every connection when no group is configured */
    if (gid_listed(cfg, gid))
        return true;

    /* SO_PEERCRED gives only the primary gid: the supplementary groups come from the group
     * database, looked up by the user's name. */
    char buf[16384];
    struct passwd pw, *found = NULL;
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || !found)
        return false;
    int ngroups = 64;
    gid_t *groups = NULL;
    for (;;) {
        gid_t *grown = realloc(groups, (size_t)ngroups * sizeof *groups);
        if (!grown) {
            free(groups);
            return false;
        }
        groups = grown;
        int n = ngroups;
        if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) >= 0) {
            ngroups = n;
            break;
        }
        /* n now holds the number needed; guard against a database that keeps growing */
        if (n <= ngroups || n > 65536) {
            free(groups);
            return false;
        }
        ngroups = n;
    }
    bool member = false;
    for (int i = 0; i < ngroups && !member; i++)
        member = gid_listed(cfg, groups[i]);
    free(groups);
    return member;
}
