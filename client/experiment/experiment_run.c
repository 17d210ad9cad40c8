/* experiment_run: one repetition of one configuration through coschedd — plan, register the
 * trainer (and the noise as a co-tenant), start the noise runs, then the trainer's, wait for the
 * trainer to end, stop the noise, read what the runs measured, release both jobs. */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>

#include "client.h"
#include "experiment.h"
#include "wire.h"

#define NOISE_FOREVER "86400" /* the noise outlasts any trainer; the runner stops it */

typedef struct rep_jobs {
    char trainer[64], noise[64];
    bool trainer_registered, noise_registered;
} rep_jobs_t;

/* SIGINT / SIGTERM: the runner stops waiting, stops what it started and releases its jobs. */
static volatile sig_atomic_t interrupted;

static void note_signal(int sig)
{
    interrupted = sig;
}

void exp_catch_signals(void)
{
    struct sigaction sa = {.sa_handler = note_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

bool exp_interrupted(void)
{
    return interrupted != 0;
}

static void sleep_seconds(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static json_t *noise_kind_argv(const exp_options_t *o);

/* The noise command of one co-tenant rank: the --noise kind at the configuration's intensity. */
static json_t *noise_argv(const exp_options_t *o, const exp_config_t *c)
{
    json_t *argv = noise_kind_argv(o);
    if (c->intensity < 1) {
        char intensity[32];
        snprintf(intensity, sizeof intensity, "%.3f", c->intensity);
        json_array_append_new(argv, json_string("--intensity"));
        json_array_append_new(argv, json_string(intensity));
    }
    return argv;
}

static json_t *noise_kind_argv(const exp_options_t *o)
{
    const char *exe = o->noise_exe;
    if (strcmp(o->noise, "memory") == 0)
        return json_pack("[s,s,s,s]", exe, "stream", "--duration", NOISE_FOREVER);
    if (strcmp(o->noise, "cpu") == 0)
        return json_pack("[s,s,s,s]", exe, "busy", "--duration", NOISE_FOREVER);
    /* One node has no network between its own ranks but the kernel's: TCP on loopback, both
     * ranks on the noise rank's core (mpirun binds nothing; they keep the run's binding). */
    if (strcmp(o->noise, "network") == 0)
        return json_pack("[s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s]", o->mpirun_exe, "--allow-run-as-root", "--oversubscribe",
                         "--bind-to", "none", "-np", "2", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include",
                         "lo", exe, "pingpong", "--duration", NOISE_FOREVER);
    if (strcmp(o->noise, "io") == 0)
        return json_pack("[s,s,s,s,s,s,s,s]", exe, "ior", "--duration", NOISE_FOREVER, "--dir", o->out_abs,
                         "--max-bytes", "256M");
    const char *colon = strrchr(o->noise, ':'); /* FILE.yaml:PATTERN, checked by the command */
    json_t *argv = json_pack("[s,s,s]", exe, "pattern", "--config");
    json_array_append_new(argv, json_stringn(o->noise, (size_t)(colon - o->noise)));
    json_array_append_new(argv, json_string(colon + 1));
    return argv;
}

/* trace: where cosched-train writes its own trace (NULL: none). */
static json_t *trainer_argv(const exp_options_t *o, const char *trace)
{
    if (o->trainer_cmd)
        return json_pack("[s,s,s]", "/bin/sh", "-c", o->trainer_cmd);
    char steps[32], batch[32];
    snprintf(steps, sizeof steps, "%d", o->steps);
    snprintf(batch, sizeof batch, "%d", o->batch);
    json_t *argv = json_pack("[s,s,s,s,s,s,s,s,s,s,s]", o->train_exe, "--model", o->model, "--data", "synthetic:4096",
                             "--batch", batch, "--steps", steps, "--log-every", "1");
    if (trace) {
        json_array_append_new(argv, json_string("--trace"));
        json_array_append_new(argv, json_string(trace));
    }
    return argv;
}

static json_t *call(const client_opts_t *co, const char *method, json_t *params, int *rc)
{
    json_t *r = rpc_call(co, method, params, rc);
    if (!r)
        fprintf(stderr, "cosched experiment: %s failed (above)\n", method);
    return r;
}

static int register_jobs(const client_opts_t *co, const exp_options_t *o, const exp_config_t *c, rep_jobs_t *jobs,
                         int noise_cores)
{
    int rc = 0;
    json_t *p = json_pack("{s:s, s:I, s:s, s:s, s:[i]}", WIRE_P_JOB, jobs->trainer, WIRE_P_UID, (json_int_t)o->uid,
                          WIRE_P_ROLE, WIRE_ROLE_TRAINER, WIRE_P_POLICY, c->policy, WIRE_P_GPUS, 0);
    if (c->guard)
        json_object_set_new(p, WIRE_P_BUDGET, json_real(o->budget));
    json_t *r = call(co, WIRE_JOB_REGISTER, p, &rc);
    if (!r)
        return rc;
    jobs->trainer_registered = true;
    json_decref(r);
    if (!c->noise)
        return 0;
    p = json_pack("{s:s, s:I, s:s, s:s, s:i}", WIRE_P_JOB, jobs->noise, WIRE_P_UID, (json_int_t)o->uid, WIRE_P_ROLE,
                  WIRE_ROLE_COTENANT, WIRE_P_POLICY, c->policy, WIRE_P_CORES, noise_cores);
    if (!(r = call(co, WIRE_JOB_REGISTER, p, &rc)))
        return rc;
    jobs->noise_registered = true;
    json_decref(r);
    /* Without the guard the noise runs at full share, whatever the daemon's guard would do. */
    if (!c->guard) {
        r = call(co, WIRE_GUARD_SET, json_pack("{s:s, s:f}", WIRE_P_JOB, jobs->noise, WIRE_P_SHARE, 1.0), &rc);
        if (!r)
            return rc;
        json_decref(r);
    }
    return 0;
}

static void release_jobs(const client_opts_t *co, rep_jobs_t *jobs)
{
    int rc;
    if (jobs->noise_registered)
        json_decref(rpc_call(co, WIRE_JOB_RELEASE, json_pack("{s:s}", WIRE_P_JOB, jobs->noise), &rc));
    if (jobs->trainer_registered)
        json_decref(rpc_call(co, WIRE_JOB_RELEASE, json_pack("{s:s}", WIRE_P_JOB, jobs->trainer), &rc));
}

/* The run with this id as run.list shows it now (caller owns it), or NULL. */
static json_t *get_run(const client_opts_t *co, json_int_t id, const char *job, int *rc)
{
    json_t *r = call(co, WIRE_RUN_LIST, json_pack("{s:s}", WIRE_P_JOB, job), rc);
    if (!r)
        return NULL;
    size_t i;
    json_t *run, *found = NULL;
    json_array_foreach(json_object_get(r, "runs"), i, run) if (json_integer_value(json_object_get(run, "id")) == id)
        found = json_incref(run);
    json_decref(r);
    return found;
}

static json_t *start_run(const client_opts_t *co, const char *job, int rank, json_t *argv, int *rc)
{
    return call(co, WIRE_RUN_START, json_pack("{s:s, s:i, s:o}", WIRE_P_JOB, job, WIRE_P_RANK, rank, WIRE_P_ARGV, argv),
                rc);
}

/* Poll until the run has ended; the ended run (caller owns it), or NULL (also when interrupted:
 * then the caller's release stops the run). */
static json_t *wait_run(const client_opts_t *co, json_int_t id, const char *job, int *rc)
{
    for (;;) {
        if (interrupted) {
            fprintf(stderr, "\ncosched experiment: interrupted by signal %d; stopping its runs, releasing its jobs\n",
                    (int)interrupted);
            *rc = EXIT_FAIL;
            return NULL;
        }
        json_t *run = get_run(co, id, job, rc);
        if (!run)
            return NULL;
        if (strcmp(json_string_value(json_object_get(run, "state")), "running") != 0)
            return run;
        json_decref(run);
        sleep_seconds(0.05);
    }
}

/* cosched-train's summary lines: the compute / communication / data shares, averaged over ranks. */
static void read_shares(const char *stdout_path, exp_rep_t *rep)
{
    rep->share_compute = rep->share_comm = rep->share_data = -1;
    FILE *f = stdout_path ? fopen(stdout_path, "r") : NULL;
    if (!f)
        return;
    char line[4096];
    double sum[3] = {0, 0, 0};
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *j = json_loads(line, 0, NULL);
        const char *event = json_string_value(json_object_get(j, "event"));
        if (event && strcmp(event, "summary") == 0) {
            sum[0] += json_number_value(json_object_get(j, "share_compute"));
            sum[1] += json_number_value(json_object_get(j, "share_comm"));
            sum[2] += json_number_value(json_object_get(j, "share_data"));
            n++;
        }
        json_decref(j);
    }
    fclose(f);
    if (n > 0) {
        rep->share_compute = sum[0] / n;
        rep->share_comm = sum[1] / n;
        rep->share_data = sum[2] / n;
    }
}

/* The daemon's median step time of the trainer (0 when it saw no steps). */
static double trainer_step_median(const client_opts_t *co, const char *job)
{
    int rc;
    json_t *r = rpc_call(co, WIRE_STATS, json_pack("{s:s}", WIRE_P_JOB, job), &rc);
    double median = 0;
    json_t *first = r ? json_array_get(json_object_get(r, "jobs"), 0) : NULL;
    if (first)
        median = json_number_value(json_object_get(json_object_get(first, "window"), "median_seconds"));
    json_decref(r);
    return median;
}

/* "0-3,8" from a JSON array of CPU numbers, the union over ranks. */
static void cpus_of_ranks(json_t *ranks, char *out, size_t len)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    size_t i, k;
    json_t *rank, *cpu;
    json_array_foreach(ranks, i, rank) json_array_foreach(json_object_get(rank, "cpus"), k, cpu)
        hwloc_bitmap_set(set, (unsigned)json_integer_value(cpu));
    hwloc_bitmap_list_snprintf(out, len, set);
    hwloc_bitmap_free(set);
}

/* The daemon's plan for this configuration: how many noise ranks it leaves room for, and the
 * placement in words. Caller owns the plan. */
static json_t *plan_config(const client_opts_t *co, const exp_config_t *c, int *rc)
{
    return call(co, WIRE_PLAN, json_pack("{s:s, s:[i]}", WIRE_P_POLICY, c->policy, WIRE_P_GPUS, 0), rc);
}

void exp_describe_plan(json_t *plan, bool noise, char *out, size_t len)
{
    char trainer[256], cotenant[256];
    cpus_of_ranks(json_object_get(plan, "trainer"), trainer, sizeof trainer);
    cpus_of_ranks(json_object_get(plan, "noise"), cotenant, sizeof cotenant);
    snprintf(out, len, "trainer CPUs %s, noise CPUs %s%s, isolation %s", trainer, cotenant, noise ? "" : " (idle)",
             json_string_value(json_object_get(plan, "isolation")));
}

static int start_noise(const client_opts_t *co, const exp_options_t *o, const exp_config_t *c, const rep_jobs_t *jobs,
                       int nranks, json_int_t *ids)
{
    int rc = 0;
    for (int r = 0; r < nranks; r++) {
        json_t *run = start_run(co, jobs->noise, r, noise_argv(o, c), &rc);
        if (!run)
            return rc;
        ids[r] = json_integer_value(json_object_get(run, "id"));
        json_decref(run);
    }
    return 0;
}

/* How long a noise run may take to show it is at work before the experiment gives up on it. */
enum { NOISE_START_TIMEOUT_S = 60 };

/* Whether a noise run is at work: memory, I/O and network noise once a progress line counts
 * bytes moved (a memory run first touches its arrays, which takes seconds for large ones and
 * longer on a loaded machine), the others once a progress line follows the start line. */
static bool noise_at_work(const exp_options_t *o, const json_t *run)
{
    bool moves_bytes = strcmp(o->noise, "memory") == 0 || strcmp(o->noise, "io") == 0 ||
                       strcmp(o->noise, "network") == 0;
    if (moves_bytes)
        return json_number_value(json_object_get(run, "bytes")) > 0;
    return json_integer_value(json_object_get(run, "lines")) >= 2;
}

/* The noise at work before the trainer starts, so that it covers the whole run. Waiting for
 * that, not a fixed time, holds on a loaded machine too. */
static int wait_noise_at_work(const client_opts_t *co, const exp_options_t *o, const rep_jobs_t *jobs,
                              const json_int_t *ids, int nruns)
{
    int rc = 0;
    for (int r = 0, waited_ms = 0; r < nruns; r++) {
        for (;;) {
            json_t *run = get_run(co, ids[r], jobs->noise, &rc);
            if (!run)
                return rc ? rc : EXIT_FAIL;
            bool running = strcmp(json_string_value(json_object_get(run, "state")), "running") == 0;
            bool at_work = noise_at_work(o, run);
            const char *out = json_string_value(json_object_get(run, "stdout"));
            if (!running || waited_ms > NOISE_START_TIMEOUT_S * 1000 || interrupted) {
                if (!interrupted)
                    fprintf(stderr, "cosched experiment: noise rank %d %s; its output: %s and its .err beside it\n", r,
                            running ? "was not at work within a minute" : "ended before the trainer started",
                            out ? out : "?");
                json_decref(run);
                return EXIT_FAIL;
            }
            json_decref(run);
            if (at_work)
                break;
            sleep_seconds(0.05);
            waited_ms += 50;
        }
    }
    return 0;
}

/* A noise run that ended before the trainer did not cover its run: say so, with its output. */
static int check_noise_running(const client_opts_t *co, const rep_jobs_t *jobs, const json_int_t *ids, int nruns)
{
    int rc = 0;
    for (int r = 0; r < nruns && rc == 0; r++) {
        json_t *run = get_run(co, ids[r], jobs->noise, &rc);
        if (run && strcmp(json_string_value(json_object_get(run, "state")), "running") != 0) {
            const char *out = json_string_value(json_object_get(run, "stdout"));
            fprintf(stderr, "cosched experiment: noise rank %d ended before the trainer (%s); its output: %s and its "
                            ".err beside it\n", r, json_string_value(json_object_get(run, "state")), out ? out : "?");
            rc = EXIT_FAIL;
        }
        json_decref(run);
    }
    return rc;
}

/* Stop the noise runs and add up the throughput they achieved (MB/s; -1 when they moved no bytes);
 * each run's stdout file goes to outputs. */
static double stop_noise(const client_opts_t *co, const rep_jobs_t *jobs, const json_int_t *ids, int nruns,
                         json_t *outputs)
{
    int rc;
    double mbs = -1;
    for (int r = 0; r < nruns; r++)
        json_decref(rpc_call(co, WIRE_RUN_STOP, json_pack("{s:I}", WIRE_P_ID, ids[r]), &rc));
    for (int r = 0; r < nruns; r++) {
        json_t *run = wait_run(co, ids[r], jobs->noise, &rc);
        json_t *rate = json_object_get(run, "rate_bytes_per_second");
        if (json_is_number(rate))
            mbs = (mbs < 0 ? 0 : mbs) + json_number_value(rate) / 1e6;
        json_t *out = json_object_get(run, "stdout");
        json_array_append(outputs, json_is_string(out) ? out : json_null());
        json_decref(run);
    }
    return mbs;
}

/* Start the trainer, wait for its end, and take its time; 0 when it exited 0. */
static int run_trainer(const client_opts_t *co, const exp_options_t *o, const rep_jobs_t *jobs, const char *trace,
                       exp_rep_t *rep)
{
    int rc = 0;
    json_t *run = start_run(co, jobs->trainer, 0, trainer_argv(o, trace), &rc);
    if (!run)
        return rc;
    json_int_t id = json_integer_value(json_object_get(run, "id"));
    json_decref(run);
    if (!(run = wait_run(co, id, jobs->trainer, &rc)))
        return rc;
    json_t *status = json_object_get(run, "exit_status");
    const char *out = json_string_value(json_object_get(run, "stdout"));
    if (!json_is_integer(status) || json_integer_value(status) != 0) {
        fprintf(stderr, "cosched experiment: the trainer did not exit 0 (%s); its output: %s and its .err beside it\n",
                json_string_value(json_object_get(run, "state")), out ? out : "?");
        json_decref(run);
        return EXIT_FAIL;
    }
    rep->started = json_number_value(json_object_get(run, "started"));
    rep->seconds = json_number_value(json_object_get(run, "ended")) - rep->started;
    read_shares(out, rep);
    json_decref(run);
    rep->step_median = trainer_step_median(co, jobs->trainer);
    return 0;
}

/* The repetition's parts onto the experiment's trace; what could not be read is said, not fatal. */
static void trace_rep(const client_opts_t *co, const exp_options_t *o, const rep_jobs_t *jobs, const char *label,
                      const exp_rep_t *rep, const char *trainer_trace, json_t *noise_outputs)
{
    int rc;
    json_t *noise_job =
        jobs->noise_registered ? rpc_call(co, WIRE_JOB_GET, json_pack("{s:s}", WIRE_P_JOB, jobs->noise), &rc) : NULL;
    size_t n = json_array_size(noise_outputs);
    const char **outputs = calloc(n ? n : 1, sizeof *outputs);
    for (size_t i = 0; outputs && i < n; i++)
        outputs[i] = json_string_value(json_array_get(noise_outputs, i));
    exp_trace_rep_t part = {.label = label, .start = rep->started, .end = rep->started + rep->seconds,
                            .noise_mbs = rep->noise_mbs, .trainer_trace = trainer_trace,
                            .noise_outputs = outputs, .nnoise = outputs ? (int)n : 0,
                            .share_changes = json_object_get(noise_job, "share_changes")};
    char *missing = NULL;
    exp_trace_add_rep(o->trace, &part, &missing);
    if (missing)
        fprintf(stderr, "\ncosched experiment: --trace: left out %s\n", missing);
    free(missing);
    free(outputs);
    json_decref(noise_job);
}

int exp_run_rep(const client_opts_t *co, const exp_options_t *o, const exp_config_t *c, double baseline_step,
                const char *label, exp_rep_t *rep, char *placement, size_t placement_len)
{
    static int sequence;
    int rc = 0;
    rep_jobs_t jobs = {.trainer_registered = false};
    snprintf(jobs.trainer, sizeof jobs.trainer, "exp-%d-%d-train", (int)getpid(), sequence);
    snprintf(jobs.noise, sizeof jobs.noise, "exp-%d-%d-noise", (int)getpid(), sequence++);
    char trace[4352];
    bool tracing = o->trace && !o->trainer_cmd;
    snprintf(trace, sizeof trace, "%s/%s.json", o->trace_parts, jobs.trainer);
    json_t *plan = plan_config(co, c, &rc);
    if (!plan)
        return rc;
    int nnoise = (int)json_array_size(json_object_get(plan, "noise"));
    exp_describe_plan(plan, c->noise, placement, placement_len);
    snprintf(rep->isolation, sizeof rep->isolation, "%s", json_string_value(json_object_get(plan, "isolation")));
    json_decref(plan);
    if (c->noise && nnoise == 0) {
        fprintf(stderr, "cosched experiment: %s leaves no core for noise on this node\n", c->name);
        return EXIT_FAIL;
    }
    json_int_t noise_ids[4096];
    json_t *noise_outputs = json_array();
    int nstarted = 0;
    rep->noise_mbs = -1;
    if ((rc = register_jobs(co, o, c, &jobs, nnoise)) != 0)
        goto out;
    if (c->guard && baseline_step > 0) {
        json_t *r = call(co, WIRE_BASELINE_SET,
                         json_pack("{s:s, s:f}", WIRE_P_JOB, jobs.trainer, WIRE_P_STEP_TIME, baseline_step), &rc);
        if (!r)
            goto out;
        json_decref(r);
    }
    if (c->noise) {
        if (c->noise_ranks > 0 && c->noise_ranks < nnoise)
            nnoise = c->noise_ranks;
        if (nnoise > (int)(sizeof noise_ids / sizeof noise_ids[0]))
            nnoise = (int)(sizeof noise_ids / sizeof noise_ids[0]);
        rc = start_noise(co, o, c, &jobs, nnoise, noise_ids);
        nstarted = rc == 0 ? nnoise : 0;
        if (rc != 0 || (rc = wait_noise_at_work(co, o, &jobs, noise_ids, nstarted)) != 0)
            goto out;
    }
    rc = run_trainer(co, o, &jobs, tracing ? trace : NULL, rep);
    if (rc == 0)
        rc = check_noise_running(co, &jobs, noise_ids, nstarted);
out:
    if (nstarted > 0)
        rep->noise_mbs = stop_noise(co, &jobs, noise_ids, nstarted, noise_outputs);
    if (rc == 0 && o->trace)
        trace_rep(co, o, &jobs, label, rep, tracing ? trace : NULL, noise_outputs);
    json_decref(noise_outputs);
    release_jobs(co, &jobs);
    return rc;
}
