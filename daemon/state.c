/* state: jobs, allocations and runs in state_dir/state.json, written atomically (temp file,
 * fsync, rename, fsync of the directory) whenever the loop finds the state dirty, and read back
 * at start. A file that cannot be read is moved aside with a log line, never silently dropped. */
#include "state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cpulist.h"
#include "fileio.h"
#include "harvest_gate.h"
#include "jobs.h"
#include "log.h"
#include "runs.h"
#include "slurm_cgroup.h"

#define STATE_FORMAT "coschedd-state"
enum { KEEP_ENDED_RUNS = 200 };

/* "0-5,12" from a bitmap (the hwloc list syntax taskset and srun read too). */
static json_t *cpulist_json(hwloc_const_bitmap_t set)
{
    char *text = cpulist_format(set);
    json_t *v = json_string(text ? text : "");
    free(text);
    return v;
}

static json_t *rank_state(const plan_rank_t *r)
{
    json_t *o = json_pack("{s:i, s:o, s:o}", "numa", (int)r->numa, "cpus", cpulist_json(r->cpus), "mems",
                          cpulist_json(r->mems));
    if (r->gpu >= 0)
        json_object_set_new(o, "gpu", json_integer(r->gpu));
    return o;
}

/* Where Slurm keeps a job's processes, a directory per hierarchy ("" where it has none). */
static json_t *slurm_cgroup_state(const throttle_slurm_job_t *c)
{
    json_t *o = json_object();
    for (size_t i = 0; i < SLURM_CGROUP_FIELDS; i++)
        json_object_set_new(o, slurm_cgroup_fields[i].name,
                            json_string((const char *)c + slurm_cgroup_fields[i].offset));
    return o;
}

static json_t *job_state(const job_t *j)
{
    json_t *ranks = json_array();
    for (int r = 0; r < j->nranks; r++)
        json_array_append_new(ranks, rank_state(&j->ranks[r]));
    json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:f, s:{s:i, s:i, s:i, s:i}, s:o}", "id", j->id, "uid",
                          (json_int_t)j->uid, "role", job_role_name(j->role), "policy", plan_policy_name(j->policy),
                          "registered", j->registered, "request", "ranks_per_gpu", j->ranks_per_gpu, "cores_per_rank",
                          j->cores_per_rank, "cores", j->cores, "cpu_ranks", j->cpu_ranks, "ranks", ranks);
    json_object_set_new(o, "isolation", json_string(plan_isolation_name(j->isolation)));
    if (j->budget > 0)
        json_object_set_new(o, "budget", json_real(j->budget));
    if (j->steps.explicit_baseline > 0)
        json_object_set_new(o, "baseline_step_seconds", json_real(j->steps.explicit_baseline));
    if (j->share_override >= 0)
        json_object_set_new(o, "share_override", json_real(j->share_override));
    char *allowed = j->allowed ? cpulist_format(j->allowed) : NULL;
    if (allowed)
        json_object_set_new(o, "allowed_cpus", json_string(allowed));
    free(allowed);
    if (j->external)
        json_object_set_new(o, "external", json_true());
    if (j->share_cores)
        json_object_set_new(o, "share_cores", json_true());
    if (j->role == ROLE_TRAINER) {
        json_object_set_new(o, "progress", json_string(progress_source_name(j->progress_requested)));
        if (j->steps_reported)
            json_object_set_new(o, "steps_reported", json_true());
    }
    if (j->partition[0])
        json_object_set_new(o, "partition", json_string(j->partition));
    if (j->autoreport != AUTOREPORT_DEFAULT)
        json_object_set_new(o, "autoreport", json_boolean(j->autoreport == AUTOREPORT_ON));
    if (j->has_slurm_cgroup)
        json_object_set_new(o, "slurm_cgroup", slurm_cgroup_state(&j->slurm_cgroup));
    return o;
}

static json_t *run_state(const run_t *r)
{
    return json_pack("{s:i, s:s, s:i, s:i, s:I, s:O, s:s, s:i, s:f, s:f, s:s, s:I, s:I, s:I, s:f, s:f}", "id", r->id,
                     "job", r->job, "rank", r->rank, "pid", (int)r->pid, "start_ticks", (json_int_t)r->start_ticks,
                     "argv", r->argv, "state", run_state_name(r->state), "exit_code", r->exit_code, "started",
                     r->started, "ended", r->ended, "stdout", r->out_path, "stdout_offset", (json_int_t)r->out_offset,
                     "steps", (json_int_t)r->steps, "lines", (json_int_t)r->lines, "bytes", r->bytes_total,
                     "phase_bytes", r->phase_bytes);
}

/* Ended runs beyond the most recent KEEP_ENDED_RUNS are forgotten with their output files. */
static void prune_runs(daemon_t *d)
{
    int ended = 0;
    for (run_t **p = &d->runs; *p;) {
        run_t *r = *p;
        if (r->state != RUN_RUNNING && ++ended > KEEP_ENDED_RUNS) {
            *p = r->next;
            run_remove_output(r);
            run_free(r);
        } else {
            p = &r->next;
        }
    }
}

int state_save(daemon_t *d)
{
    prune_runs(d);
    json_t *jobs = json_array(), *runs = json_array();
    bool whole = true; /* an entry jansson cannot pack must fail the save, not vanish from it */
    for (const job_t *j = d->jobs; j; j = j->next)
        whole = json_array_append_new(jobs, job_state(j)) == 0 && whole;
    for (const run_t *r = d->runs; r; r = r->next)
        whole = json_array_append_new(runs, run_state(r)) == 0 && whole;
    json_t *doc = json_pack("{s:s, s:i, s:f, s:i, s:o, s:o}", "format", STATE_FORMAT, "version", STATE_VERSION, "saved",
                            clock_now_unix(), "next_run_id", d->next_run_id, "jobs", jobs, "runs", runs);
    json_t *gate = harvest_gate_state(d); /* only while closed: older daemons ignore the key */
    if (gate)
        json_object_set_new(doc, "harvest_gate", gate);
    char *text = whole ? json_dumps(doc, JSON_INDENT(1)) : NULL;
    json_decref(doc);

    char path[4200], err[4400];
    snprintf(path, sizeof path, "%s/state.json", d->cfg.state_dir);
    char *line = NULL;
    if (text && asprintf(&line, "%s\n", text) < 0)
        line = NULL;
    int saved = text ? ENOMEM : EINVAL; /* no text: an entry could not be encoded */
    free(text);
    int rc = -1;
    if (line) {
        rc = fileio_write_atomic(path, line, strlen(line), 0600, err, sizeof err);
        saved = errno;
        free(line);
    }
    if (rc < 0) {
        log_err("cannot save state to %s: %s (the state in memory is kept)", path, strerror(saved));
        snprintf(d->state_save_error, sizeof d->state_save_error, "%s", strerror(saved));
        d->state_save_errors_total++;
        return -1;
    }
    d->state_saves_total++;
    d->state_save_error[0] = '\0';
    d->state_dirty = false;
    return 0;
}

void state_save_if_dirty(daemon_t *d)
{
    if (d->state_dirty)
        state_save(d);
}

/* A set as written by version 2 ("0-5,12") or by version 1 ([0,1,2,3,4,5,12]). */
static hwloc_bitmap_t bitmap_from_json(json_t *v)
{
    if (json_is_string(v)) {
        char err[128];
        return cpulist_parse(json_string_value(v), 0, err, sizeof err);
    }
    if (!json_is_array(v))
        return NULL;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > 65535) {
            hwloc_bitmap_free(set);
            return NULL;
        }
        hwloc_bitmap_set(set, (unsigned)json_integer_value(x));
    }
    return set;
}

static void free_ranks(plan_rank_t *rs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        hwloc_bitmap_free(rs[i].cpus);
        hwloc_bitmap_free(rs[i].mems);
    }
    free(rs);
}

static plan_rank_t *ranks_from_json(json_t *ranks, const char *id, char *why, size_t whylen)
{
    size_t n = json_array_size(ranks);
    plan_rank_t *rs = calloc(n, sizeof *rs);
    if (!rs) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(ranks, i);
        json_t *gpu = json_object_get(r, "gpu"), *numa = json_object_get(r, "numa");
        rs[i].rank = (int)i;
        rs[i].gpu = json_is_integer(gpu) ? (int)json_integer_value(gpu) : -1;
        rs[i].numa = json_is_integer(numa) ? (unsigned)json_integer_value(numa) : 0;
        rs[i].cpus = bitmap_from_json(json_object_get(r, "cpus"));
        rs[i].mems = bitmap_from_json(json_object_get(r, "mems"));
        if (!rs[i].cpus || !rs[i].mems || hwloc_bitmap_iszero(rs[i].cpus)) {
            snprintf(why, whylen, "job %s rank %zu has no valid cpus/mems", id, i);
            free_ranks(rs, n);
            return NULL;
        }
    }
    return rs;
}

/* The request a job was registered with: version 2 keeps it under "request", version 1 flat. */
static int request_int(json_t *job, const char *key)
{
    json_t *request = json_object_get(job, "request");
    return (int)json_integer_value(json_object_get(request ? request : job, key));
}

static void restore_settings(daemon_t *d, job_t *j, json_t *o)
{
    j->ranks_per_gpu = request_int(o, "ranks_per_gpu");
    j->cpu_ranks = request_int(o, "cpu_ranks"); /* absent (an older state file): 0, on GPUs */
    j->cores_per_rank = request_int(o, "cores_per_rank");
    j->cores = request_int(o, "cores");
    j->registered = json_number_value(json_object_get(o, "registered"));
    j->budget = json_number_value(json_object_get(o, "budget"));
    j->guard.p.budget = job_budget(d, j);
    j->steps.explicit_baseline = json_number_value(json_object_get(o, "baseline_step_seconds"));
    plan_isolation_t isolation;
    if (plan_isolation_parse(json_string_value(json_object_get(o, "isolation")), &isolation) == 0)
        j->isolation = isolation; /* else (version 1) the policy's own level, as job_adopt set it */
    json_t *override = json_object_get(o, "share_override");
    if (json_is_number(override) && json_number_value(override) >= 0 && json_number_value(override) <= 1)
        j->share_override = json_number_value(override);
    j->external = json_is_true(json_object_get(o, "external"));
    j->share_cores = json_is_true(json_object_get(o, "share_cores"));
    progress_source_t source;
    if (progress_source_parse(json_string_value(json_object_get(o, "progress")), &source) == 0)
        j->progress_requested = source;
    j->steps_reported = json_is_true(json_object_get(o, "steps_reported"));
    const char *partition = json_string_value(json_object_get(o, "partition"));
    if (partition && config_partition_valid(partition))
        snprintf(j->partition, sizeof j->partition, "%s", partition);
    json_t *autoreport = json_object_get(o, "autoreport");
    if (json_is_boolean(autoreport))
        j->autoreport = json_is_true(autoreport) ? AUTOREPORT_ON : AUTOREPORT_OFF;
}

/* Where Slurm keeps a job's processes: each path as job confine found it, or not at all (one that
 * is too long, relative, holds spaces or "..", or is no job_<id> directory is not Slurm's). */
static void restore_slurm_cgroup(job_t *j, json_t *o)
{
    json_t *c = json_object_get(o, "slurm_cgroup");
    if (!json_is_object(c))
        return;
    throttle_slurm_job_t found = {0};
    for (size_t i = 0; i < SLURM_CGROUP_FIELDS; i++) {
        const char *v = json_string_value(json_object_get(c, slurm_cgroup_fields[i].name));
        if (!v || strlen(v) >= THROTTLE_PATH_MAX)
            return;
        snprintf((char *)&found + slurm_cgroup_fields[i].offset, THROTTLE_PATH_MAX, "%s", v);
    }
    if (!throttle_slurm_job_valid(&found))
        return;
    j->slurm_cgroup = found;
    j->has_slurm_cgroup = true;
    j->slurm_cpu_seen = -1; /* counted by the daemon before: the first reading is the start */
}

/* The allocation a job was registered within (absent: none); an unreadable one is an error, not
 * "the whole node": that would let other jobs be planned onto its cores. */
static int restore_allowed(job_t *j, json_t *o, char *why, size_t whylen)
{
    json_t *v = json_object_get(o, "allowed_cpus");
    if (!v)
        return 0;
    char err[128];
    j->allowed = json_is_string(v) ? cpulist_parse(json_string_value(v), 0, err, sizeof err) : NULL;
    if (!j->allowed) {
        snprintf(why, whylen, "job %s has a malformed allowed_cpus", j->id);
        return -1;
    }
    return 0;
}

static int restore_job(daemon_t *d, json_t *o, int version, char *why, size_t whylen)
{
    const char *id = NULL, *role = NULL, *policy = NULL;
    json_int_t uid = -1;
    json_t *ranks = NULL;
    json_error_t jerr;
    if (json_unpack_ex(o, &jerr, 0, "{s:s, s:I, s:s, s:s, s:o}", version == 1 ? "job" : "id", &id, "uid", &uid, "role",
                       &role, "policy", &policy, "ranks", &ranks) < 0 ||
        !job_id_valid(id) || uid < 0 || !json_is_array(ranks) || json_array_size(ranks) == 0) {
        snprintf(why, whylen, "a job entry is malformed (%s)", jerr.text);
        return -1;
    }
    plan_policy_t pol;
    job_role_t r;
    if (plan_policy_parse(policy, &pol) < 0 || job_role_parse(role, &r) < 0) {
        snprintf(why, whylen, "job %s has an unknown role or policy", id);
        return -1;
    }
    if (job_find(d, id)) {
        snprintf(why, whylen, "job %s appears twice", id);
        return -1;
    }
    plan_rank_t *rs = ranks_from_json(ranks, id, why, whylen);
    if (!rs)
        return -1;
    size_t n = json_array_size(ranks);
    job_t *j = job_adopt(d, id, (uid_t)uid, r, pol, rs, (int)n);
    free_ranks(rs, n);
    if (!j) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    restore_settings(d, j, o);
    restore_slurm_cgroup(j, o);
    return restore_allowed(j, o, why, whylen);
}

static int restore_run(daemon_t *d, json_t *o, char *why, size_t whylen)
{
    json_int_t id, rank, pid, ticks, offset = 0, steps = 0, lines = 0;
    int exit_code = 0;
    const char *job, *state, *out;
    double started = 0, ended = 0, bytes = 0, phase_bytes = 0;
    json_t *argv;
    json_error_t jerr;
    if (json_unpack_ex(o, &jerr, 0, "{s:I, s:s, s:I, s:I, s:I, s:o, s:s, s?i, s?F, s?F, s:s, s?I, s?I, s?I, s?F, s?F}",
                       "id", &id, "job", &job, "rank", &rank, "pid", &pid, "start_ticks", &ticks, "argv", &argv,
                       "state", &state, "exit_code", &exit_code, "started", &started, "ended", &ended, "stdout", &out,
                       "stdout_offset", &offset, "steps", &steps, "lines", &lines, "bytes", &bytes, "phase_bytes",
                       &phase_bytes) < 0 ||
        !json_is_array(argv) || id < 1 || id > 0x7fffffff || pid < 1) {
        snprintf(why, whylen, "a run entry is malformed (%s)", jerr.text);
        return -1;
    }
    run_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    r->id = (int)id;
    r->cpu_seen = -1; /* adopted: its CPU time so far was counted by the daemon before */
    snprintf(r->job, sizeof r->job, "%s", job);
    r->rank = (int)rank;
    r->pid = (pid_t)pid;
    r->start_ticks = (unsigned long long)ticks;
    r->argv = json_incref(argv);
    if (run_state_parse(state, &r->state) < 0)
        r->state = RUN_LOST;
    r->exit_code = exit_code;
    r->started = started;
    r->ended = ended;
    snprintf(r->out_path, sizeof r->out_path, "%s", out);
    r->out_offset = offset;
    r->steps = (unsigned long)steps;
    r->lines = (unsigned long)lines;
    r->bytes_total = bytes;
    r->phase_bytes = phase_bytes;
    r->out_fd = r->pid_fd = r->out_wd = -1;
    /* keep the saved order (newest first) */
    run_t **tail = &d->runs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = r;
    if (r->id >= d->next_run_id)
        d->next_run_id = r->id + 1;
    return 0;
}

void state_clear(daemon_t *d)
{
    while (d->jobs) {
        job_t *j = d->jobs;
        d->jobs = j->next;
        job_free(j);
    }
    while (d->runs) {
        run_t *r = d->runs;
        d->runs = r->next;
        run_free(r);
    }
    d->next_run_id = 1;
}

static void move_aside(const char *path, const char *why)
{
    char aside[4300], stamp[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", localtime_r(&t, &tm));
    snprintf(aside, sizeof aside, "%s.corrupt-%s", path, stamp);
    if (rename(path, aside) == 0)
        log_err("state file %s is unusable (%s): moved aside to %s; starting with no jobs", path, why, aside);
    else
        log_err("state file %s is unusable (%s) and cannot be moved aside: %s", path, why, strerror(errno));
}

/* A save killed before its rename leaves its temporary file; the state.json beside it is the
 * last whole one. */
static void remove_unfinished_saves(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    int removed = 0;
    for (struct dirent *e; (e = readdir(dp));)
        if (strncmp(e->d_name, ".state.json.", 12) == 0 && unlinkat(dirfd(dp), e->d_name, 0) == 0)
            removed++;
    closedir(dp);
    if (removed)
        log_warn("removed %d unfinished state save%s (the daemon died while saving); state.json is the last whole one",
                 removed, removed == 1 ? "" : "s");
}

int state_restore(daemon_t *d)
{
    char path[4200], why[512] = "";
    remove_unfinished_saves(d->cfg.state_dir);
    snprintf(path, sizeof path, "%s/state.json", d->cfg.state_dir);
    d->next_run_id = 1;
    json_error_t jerr;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        if (access(path, F_OK) != 0)
            return 0; /* first start */
        snprintf(why, sizeof why, "line %d: %s", jerr.line, jerr.text);
        move_aside(path, why);
        return 0;
    }
    json_int_t version = 0, next = 1;
    json_t *jobs = NULL, *runs = NULL;
    const char *format = NULL;
    int rc = json_unpack_ex(doc, &jerr, 0, "{s:I, s?s, s:I, s:o, s:o}", "version", &version, "format", &format,
                            "next_run_id", &next, "jobs", &jobs, "runs", &runs);
    bool known = version == 1 || (version == STATE_VERSION && format && strcmp(format, STATE_FORMAT) == 0);
    if (rc < 0 || !known || !json_is_array(jobs) || !json_is_array(runs)) {
        snprintf(why, sizeof why, "not a %s file of version 1 or %d: %s", STATE_FORMAT, STATE_VERSION,
                 rc < 0 ? jerr.text : "bad shape");
        rc = -1;
    }
    size_t i;
    json_t *v;
    /* job_adopt prepends: walk backwards to keep the saved order */
    for (size_t k = json_is_array(jobs) ? json_array_size(jobs) : 0; rc == 0 && k > 0; k--)
        if (restore_job(d, json_array_get(jobs, k - 1), (int)version, why, sizeof why) < 0)
            rc = -1;
    if (rc == 0)
        json_array_foreach(runs, i, v)
            if (rc == 0 && restore_run(d, v, why, sizeof why) < 0)
                rc = -1;
    if (rc == 0 && next > d->next_run_id && next <= 0x7fffffff)
        d->next_run_id = (int)next;
    if (rc == 0 && json_is_object(json_object_get(doc, "harvest_gate")))
        harvest_gate_restore(d, json_object_get(doc, "harvest_gate"), clock_now_mono());
    json_decref(doc);
    if (rc < 0) {
        state_clear(d);
        move_aside(path, why);
        return 0;
    }
    if (version != STATE_VERSION)
        state_mark_dirty(d); /* written back in the current schema */
    int njobs = 0, nruns = 0;
    for (job_t *j = d->jobs; j; j = j->next)
        njobs++;
    for (run_t *r = d->runs; r; r = r->next)
        nruns++;
    log_info("restored %d job%s and %d run%s from %s", njobs, njobs == 1 ? "" : "s", nruns, nruns == 1 ? "" : "s",
             path);
    return 0;
}
