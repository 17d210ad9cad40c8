/* metrics: render coschedd's state as Prometheus text. Label values are escaped as the format
 * requires (backslash, double quote, newline), job ids being user input. A job's id is the label
 * jobid: `job` is the scrape target's own label (and the Pushgateway's grouping key). */
#include "metrics.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cotenants.h"
#include "cotenant_exposure.h"
#include "harvest_gate.h"
#include "jobs.h"
#include "log.h"
#include "runs.h"
#include "wire.h"

typedef struct {
    char *buf;
    size_t len, cap;
} text_t;

static void add(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text_t *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (t->buf && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 4096;
        while (cap < t->len + (size_t)n + 1)
            cap *= 2;
        char *grown = realloc(t->buf, cap);
        if (!grown)
            return;
        t->buf = grown;
        t->cap = cap;
    }
}

static void header(text_t *t, const char *name, const char *type, const char *help)
{
    add(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label value escaping per the exposition format. */
static const char *esc(const char *s, char *out, size_t outlen)
{
    size_t o = 0;
    for (; *s && o + 3 < outlen; s++) {
        if (*s == '\\' || *s == '"') {
            out[o++] = '\\';
            out[o++] = *s;
        } else if (*s == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *s;
        }
    }
    out[o] = '\0';
    return out;
}

/* The node's counters: no job label, so a sum over nodes and an increase over a week hold
 * every job that came and went (accounting.c says how each is kept). */
static void node_metrics(text_t *t, const daemon_t *d)
{
    static const struct {
        const char *name, *help;
        size_t offset;
    } counters[] = {
        {"cosched_cotenant_cpu_seconds_total",
         "CPU time co-tenants used: their runs' process groups (/proc), a Slurm-started one's job cgroup.",
         offsetof(node_counters_t, cotenant_cpu_seconds)},
        {"cosched_cotenant_seconds_total", "Seconds co-tenant jobs were at work, summed over co-tenants.",
         offsetof(node_counters_t, cotenant_seconds)},
        {"cosched_cotenant_at_minimum_seconds_total",
         "Seconds co-tenant jobs at work were held at the guard's minimum share, summed over co-tenants.",
         offsetof(node_counters_t, cotenant_at_minimum_seconds)},
        {"cosched_trainer_seconds_total", "Seconds trainer jobs were registered, summed over trainers.",
         offsetof(node_counters_t, trainer_seconds)},
        {"cosched_trainer_lost_seconds_total",
         "Trainers' estimated seconds lost to co-tenants: step time above baseline while a co-tenant was at work.",
         offsetof(node_counters_t, trainer_lost_seconds)},
        {"cosched_trainer_over_budget_seconds_total", "Seconds trainers' slowdown was above their budget, summed.",
         offsetof(node_counters_t, trainer_over_budget_seconds)},
        {"cosched_trainer_no_progress_source_seconds_total",
         "Seconds trainers had no progress source while a co-tenant was at work, summed.",
         offsetof(node_counters_t, trainer_no_progress_source_seconds)},
    };
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
        header(t, counters[i].name, "counter", counters[i].help);
        add(t, "%s %.3f\n", counters[i].name, *(const double *)((const char *)&d->counters + counters[i].offset));
    }
}

static void job_metrics(text_t *t, const daemon_t *d)
{
    char e[160];
    header(t, "cosched_job_cpus", "gauge", "CPUs allocated to a job, per NUMA domain.");
    for (const job_t *j = d->jobs; j; j = j->next)
        for (int n = 0; n < d->topo->nnuma; n++) {
            hwloc_bitmap_t in = hwloc_bitmap_alloc();
            hwloc_bitmap_and(in, j->cpus, d->topo->numa[n].cpus);
            int w = hwloc_bitmap_weight(in);
            hwloc_bitmap_free(in);
            if (w > 0)
                add(t, "cosched_job_cpus{jobid=\"%s\",role=\"%s\",numa=\"%u\"} %d\n", esc(j->id, e, sizeof e),
                    job_role_name(j->role), d->topo->numa[n].os_index, w);
        }
    header(t, "cosched_job_steps_total", "counter", "Training steps reported for a job.");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER)
            add(t, "cosched_job_steps_total{jobid=\"%s\"} %lu\n", esc(j->id, e, sizeof e), j->steps.steps_total);
    /* Each family's samples must follow its own HELP/TYPE lines: one pass per family. */
    static const struct {
        const char *name, *help;
    } families[] = {
        {"cosched_job_step_seconds", "Median step time over the recent window."},
        {"cosched_job_baseline_step_seconds", "Median step time with no co-tenant running."},
        {"cosched_job_slowdown_ratio", "Recent median / baseline median - 1."},
    };
    for (int f = 0; f < 3; f++) {
        header(t, families[f].name, "gauge", families[f].help);
        for (const job_t *j = d->jobs; j; j = j->next) {
            if (j->role != ROLE_TRAINER)
                continue;
            slowdown_t s = stats_slowdown(&j->steps, d->cfg.baseline_steps, d->cfg.window_steps);
            double v = f == 0 ? s.window_median : f == 1 ? s.baseline_median : s.slowdown;
            int present = f == 0 ? s.window_n > 0 : f == 1 ? s.baseline_median > 0 : s.valid;
            if (present)
                add(t, "%s{jobid=\"%s\"} %.9g\n", families[f].name, esc(j->id, e, sizeof e), v);
        }
    }
}

/* The guard: what each co-tenant may use, and what each trainer's guard did. */
static void guard_metrics(text_t *t, const daemon_t *d)
{
    char e[160];
    header(t, "cosched_cotenant_allowed_share", "gauge",
           "Share (0..1) of its usual CPU time or memory bandwidth a co-tenant job may use now.");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_COTENANT)
            add(t, "cosched_cotenant_allowed_share{jobid=\"%s\",knob=\"%s\"} %.6g\n", esc(j->id, e, sizeof e),
                j->throttle ? throttle_knob_name(throttle_group_knob(j->throttle)) : "none", j->share);
    header(t, "cosched_cotenant_cores_kept", "gauge",
           "Fraction (0..1) of its cores a co-tenant job keeps under the cores knob (1: not narrowed).");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_COTENANT)
            add(t, "cosched_cotenant_cores_kept{jobid=\"%s\"} %.6g\n", esc(j->id, e, sizeof e),
                j->throttle ? throttle_group_cores_kept(j->throttle) : 1.0);
    header(t, "cosched_cotenant_at_minimum", "gauge",
           "1 while the guard holds a co-tenant job at its minimum share (guard.min_share), else 0.");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_COTENANT)
            add(t, "cosched_cotenant_at_minimum{jobid=\"%s\"} %d\n", esc(j->id, e, sizeof e),
                cotenant_at_minimum(d, j));
    header(t, "cosched_cotenant_requeues_total", "counter",
           "Co-tenant jobs Slurm started that the guard requeued through Slurm after guard.requeue_after at the "
           "minimum share.");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_COTENANT && j->external)
            add(t, "cosched_cotenant_requeues_total{jobid=\"%s\"} %lu\n", esc(j->id, e, sizeof e),
                j->escalation.requeues);
    header(t, "cosched_cotenant_lets_go_total", "counter",
           "Times a held co-tenant job Slurm started was let go: whole (Slurm shows it ending, or a process of it "
           "exits) or only to take a signal (at most once per 10 s), since it was held.");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_COTENANT && j->external && j->throttle) {
            unsigned long whole, delivery;
            throttle_group_let_go_counts(j->throttle, &whole, &delivery);
            add(t, "cosched_cotenant_lets_go_total{jobid=\"%s\",kind=\"whole\"} %lu\n", esc(j->id, e, sizeof e), whole);
            add(t, "cosched_cotenant_lets_go_total{jobid=\"%s\",kind=\"delivery\"} %lu\n", esc(j->id, e, sizeof e),
                delivery);
        }
    json_t *gate = harvest_gate_to_json(d, clock_now_mono()); /* NULL: no gate, nothing closed */
    if (gate) {
        const char *feature = json_string_value(json_object_get(gate, WIRE_R_FEATURE));
        const char *state = json_string_value(json_object_get(gate, WIRE_R_STATE));
        header(t, "cosched_harvest_gate_closed", "gauge",
               "1 while this node's harvest gate is closed: its feature (guard.harvest_feature) taken from Slurm, "
               "no new harvest job starts here.");
        add(t, "cosched_harvest_gate_closed{feature=\"%s\"} %d\n", esc(feature, e, sizeof e),
            strcmp(state, "open") != 0 && (strcmp(state, "closing") != 0 || d->gate.closed_at > 0));
        header(t, "cosched_harvest_gate_closures_total", "counter",
               "Times this node's harvest gate closed since coschedd started.");
        add(t, "cosched_harvest_gate_closures_total{feature=\"%s\"} %lu\n", esc(feature, e, sizeof e),
            d->gate.closures);
        json_decref(gate);
    }
    header(t, "cosched_guard_actions_total", "counter", "Actions of a trainer job's slowdown guard, by kind.");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER)
            for (int a = GUARD_THROTTLE; a < GUARD_NACTIONS; a++)
                add(t, "cosched_guard_actions_total{jobid=\"%s\",action=\"%s\"} %lu\n", esc(j->id, e, sizeof e),
                    guard_action_name((guard_action_t)a), j->guard.actions[a]);
    header(t, "cosched_guard_baseline_pause_seconds_total", "counter",
           "Co-tenant seconds spent paused so that a trainer's baseline could be measured.");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER)
            add(t, "cosched_guard_baseline_pause_seconds_total{jobid=\"%s\"} %.3f\n", esc(j->id, e, sizeof e),
                j->guard.paused_seconds);
    header(t, "cosched_trainer_progress_source", "gauge",
           "1 for the source a trainer's progress comes from now (steps, gpu, pmu or none).");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER)
            add(t, "cosched_trainer_progress_source{jobid=\"%s\",source=\"%s\"} 1\n", esc(j->id, e, sizeof e),
                progress_source_name(j->progress_source < PROGRESS_NSOURCES ? j->progress_source : PROGRESS_NONE));
    /* A family of its own, not a label on the one above: that one's series stay as dashboards know them. */
    header(t, "cosched_trainer_step_source", "gauge",
           "1 for how a trainer's steps arrive: reported by its program, or by the PyTorch hook cosched injects.");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER && step_via_name(j->series.via))
            add(t, "cosched_trainer_step_source{jobid=\"%s\",step_source=\"%s\"} 1\n", esc(j->id, e, sizeof e),
                step_via_name(j->series.via));
    header(t, "cosched_trainer_gpu_busy_ratio", "gauge",
           "Mean busy fraction of a trainer's GPUs in the latest window (what the gpu source judges).");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER && j->gpu_busy >= 0)
            add(t, "cosched_trainer_gpu_busy_ratio{jobid=\"%s\"} %.4f\n", esc(j->id, e, sizeof e), j->gpu_busy);
    header(t, "cosched_gpu_sampled", "gauge", "1 while coschedd reads a GPU's busy time (by PCI bus id), else 0.");
    for (int g = 0; d->gpus && g < gpu_sampler_count(d->gpus); g++) {
        gpu_status_t st;
        gpu_sampler_status(d->gpus, g, &st);
        add(t, "cosched_gpu_sampled{pci=\"%s\"} %d\n", d->topo->gpus[g].pci, st.state == GPU_SAMPLING);
    }
    header(t, "cosched_guard_budget_ratio", "gauge", "The slowdown budget of a trainer job.");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER)
            add(t, "cosched_guard_budget_ratio{jobid=\"%s\"} %.6g\n", esc(j->id, e, sizeof e), job_budget(d, j));
}

/* Where co-tenants are against the trainers: what a batch system's placement keeps apart. */
static void exposure_metrics(text_t *t, const daemon_t *d)
{
    static const char *const levels[] = {"numa", "l3", "core"};
    char e[160];
    header(t, "cosched_cotenant_exposed_cpus", "gauge",
           "CPUs of a co-tenant job that share a NUMA domain, an L3 or a core with a registered trainer's.");
    for (const job_t *j = d->jobs; j; j = j->next) {
        if (j->role != ROLE_COTENANT)
            continue;
        cotenant_exposure_t x = cotenant_exposure_of(d, j);
        hwloc_const_bitmap_t sets[] = {x.numa, x.l3, x.core};
        for (int l = 0; l < 3; l++)
            add(t, "cosched_cotenant_exposed_cpus{jobid=\"%s\",level=\"%s\"} %d\n", esc(j->id, e, sizeof e), levels[l],
                hwloc_bitmap_weight(sets[l]));
        cotenant_exposure_free(&x);
    }
    header(t, "cosched_cotenant_active", "gauge",
           "1 while a co-tenant job counts as at work (a run alive, or an external job until release).");
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_COTENANT)
            add(t, "cosched_cotenant_active{jobid=\"%s\"} %d\n", esc(j->id, e, sizeof e), cotenant_active(d, j));
}

static void run_metrics(text_t *t, const daemon_t *d)
{
    char e[160];
    header(t, "cosched_run_up", "gauge", "1 while a run's process is alive.");
    for (const run_t *r = d->runs; r; r = r->next)
        add(t, "cosched_run_up{jobid=\"%s\",run=\"%d\"} %d\n", esc(r->job, e, sizeof e), r->id,
            r->state == RUN_RUNNING);
    header(t, "cosched_run_bytes_total", "counter", "Bytes a noise run reported moving.");
    for (const run_t *r = d->runs; r; r = r->next)
        if (r->bytes_total > 0 || r->rate_bytes_per_s > 0)
            add(t, "cosched_run_bytes_total{jobid=\"%s\",run=\"%d\"} %.0f\n", esc(r->job, e, sizeof e), r->id,
                r->bytes_total);
    header(t, "cosched_run_rate_bytes_per_second", "gauge", "Latest achieved rate a noise run reported.");
    for (const run_t *r = d->runs; r; r = r->next)
        if (r->bytes_total > 0 || r->rate_bytes_per_s > 0)
            add(t, "cosched_run_rate_bytes_per_second{jobid=\"%s\",run=\"%d\"} %.6g\n", esc(r->job, e, sizeof e), r->id,
                r->rate_bytes_per_s);
}

char *metrics_render(const daemon_t *d)
{
    text_t t = {0};
    int jobs[2] = {0, 0}, runs = 0;
    for (const job_t *j = d->jobs; j; j = j->next)
        jobs[j->role]++;
    for (const run_t *r = d->runs; r; r = r->next)
        runs += r->state == RUN_RUNNING;
    header(&t, "cosched_build_info", "gauge", "Always 1; the version of coschedd as a label.");
    add(&t, "cosched_build_info{version=\"%s\"} 1\n", COSCHED_VERSION_STRING);
    header(&t, "cosched_up", "gauge", "1 while coschedd answers.");
    add(&t, "cosched_up 1\n");
    header(&t, "cosched_start_time_seconds", "gauge", "Unix time coschedd started.");
    add(&t, "cosched_start_time_seconds %.3f\n", d->started);
    header(&t, "cosched_jobs", "gauge", "Registered jobs by role.");
    add(&t, "cosched_jobs{role=\"trainer\"} %d\ncosched_jobs{role=\"cotenant\"} %d\n", jobs[ROLE_TRAINER],
        jobs[ROLE_COTENANT]);
    header(&t, "cosched_runs_running", "gauge", "Runs whose process is alive.");
    add(&t, "cosched_runs_running %d\n", runs);
    header(&t, "cosched_requests_total", "counter", "Requests answered on the control socket.");
    add(&t, "cosched_requests_total %lu\n", d->requests_total);
    header(&t, "cosched_request_errors_total", "counter", "Requests answered with an error.");
    add(&t, "cosched_request_errors_total %lu\n", d->request_errors_total);
    header(&t, "cosched_requests_denied_total", "counter",
           "Requests refused by the permission table (EPERM): a user asking what is not theirs to do.");
    add(&t, "cosched_requests_denied_total %lu\n", d->requests_denied_total);
    header(&t, "cosched_frames_rejected_total", "counter", "Malformed frames that closed a connection.");
    add(&t, "cosched_frames_rejected_total %lu\n", d->frames_rejected_total);
    if (d->pusher) {
        unsigned long ok = 0, failed = 0;
        double backoff = 0;
        pusher_stats(d->pusher, &ok, &failed, &backoff);
        header(&t, "cosched_pushes_total", "counter", "Pushes to the Pushgateway by result.");
        add(&t, "cosched_pushes_total{result=\"ok\"} %lu\ncosched_pushes_total{result=\"failed\"} %lu\n", ok, failed);
    }
    header(&t, "cosched_state_save_errors_total", "counter", "State saves that failed (the state in memory is kept).");
    add(&t, "cosched_state_save_errors_total %lu\n", d->state_save_errors_total);
    header(&t, "cosched_accept_pauses_total", "counter",
           "Times the control socket stopped accepting for want of descriptors (it resumes when one is free).");
    add(&t, "cosched_accept_pauses_total %lu\n", d->accept_pauses_total);
    header(&t, "cosched_client_limit_total", "counter",
           "Connections refused by a limit per user (connections) or on all users but root and operators (total), "
           "connections made to wait their user's turn (waiting), requests delayed by their user's rate (rate).");
    for (int i = 0; i < CLIENT_LIMIT_COUNT; i++)
        add(&t, "cosched_client_limit_total{limit=\"%s\"} %lu\n", client_limit_name((client_limit_t)i),
            d->client_limits.counted[i]);
    node_metrics(&t, d);
    job_metrics(&t, d);
    guard_metrics(&t, d);
    exposure_metrics(&t, d);
    run_metrics(&t, d);
    return t.buf;
}

void metrics_publish(daemon_t *d)
{
    if (!d->pusher && !d->cfg.textfile[0])
        return;
    char *text = metrics_render(d);
    if (!text)
        return;
    if (d->pusher)
        pusher_update(d->pusher, text);
    if (d->cfg.textfile[0]) {
        char err[512];
        if (push_textfile_write(d->cfg.textfile, text, d->cfg.private_jobs == PRIVATE_JOBS_HIDE, err, sizeof err) < 0)
            log_warn("metrics textfile: %s", err);
    }
    free(text);
}
