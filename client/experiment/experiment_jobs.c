/* experiment_jobs: what every design of `cosched experiment` asks of coschedd — the trainer's and
 * the noise's jobs registered and released, runs started, followed and stopped, their command
 * lines, and the experiment's own SIGINT / SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hwloc.h>

#include "client.h"
#include "experiment_jobs.h"
#include "run_output.h"
#include "wire.h"

#define NOISE_FOREVER "86400" /* the noise outlasts any trainer; the runner stops it */

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

void exp_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* The noise command of one co-tenant rank: the --noise kind at the configuration's intensity. */
json_t *exp_noise_argv(const exp_options_t *o, const exp_config_t *c)
{
    json_t *argv = exp_noise_kind_argv(o);
    if (c->intensity < 1) {
        char intensity[32];
        snprintf(intensity, sizeof intensity, "%.3f", c->intensity);
        json_array_append_new(argv, json_string("--intensity"));
        json_array_append_new(argv, json_string(intensity));
    }
    return argv;
}

json_t *exp_noise_kind_argv(const exp_options_t *o)
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

const char *exp_trainer_words(const exp_options_t *o)
{
    return o->gpus == 0 ? "one rank on cores, no GPU" : "one rank on GPU 0";
}

json_t *exp_trainer_place(const exp_options_t *o, json_t *params)
{
    if (o->gpus == 0)
        json_object_set_new(params, WIRE_P_CPU_RANKS, json_integer(1));
    else
        json_object_set_new(params, WIRE_P_GPUS, json_pack("[i]", 0));
    return params;
}

/* trace: where cosched-train writes its own trace (NULL: none). */
json_t *exp_trainer_argv(const exp_options_t *o, long steps, const char *trace)
{
    if (o->trainer_cmd)
        return json_pack("[s,s,s]", "/bin/sh", "-c", o->trainer_cmd);
    char steps_arg[32], batch[32];
    snprintf(steps_arg, sizeof steps_arg, "%ld", steps);
    snprintf(batch, sizeof batch, "%d", o->batch);
    json_t *argv = json_pack("[s,s,s,s,s,s,s,s,s,s,s]", o->train_exe, "--model", o->model, "--data", "synthetic:4096",
                             "--batch", batch, "--steps", steps_arg, "--log-every", "1");
    if (trace) {
        json_array_append_new(argv, json_string("--trace"));
        json_array_append_new(argv, json_string(trace));
    }
    return argv;
}

json_t *exp_call(const client_opts_t *co, const char *method, json_t *params, int *rc)
{
    json_t *r = rpc_call(co, method, params, rc);
    if (!r)
        fprintf(stderr, "cosched experiment: %s failed (above)\n", method);
    return r;
}

int exp_register_jobs(const client_opts_t *co, const exp_options_t *o, const exp_config_t *c, exp_jobs_t *jobs,
                      int noise_cores)
{
    int rc = 0;
    json_t *p = exp_trainer_place(o, json_pack("{s:s, s:I, s:s, s:s}", WIRE_P_JOB, jobs->trainer, WIRE_P_UID,
                                               (json_int_t)o->uid, WIRE_P_ROLE, WIRE_ROLE_TRAINER, WIRE_P_POLICY,
                                               c->policy));
    if (c->guard)
        json_object_set_new(p, WIRE_P_BUDGET, json_real(o->budget));
    json_t *r = exp_call(co, WIRE_JOB_REGISTER, p, &rc);
    if (!r)
        return rc;
    jobs->trainer_registered = true;
    json_decref(r);
    if (!c->noise)
        return 0;
    p = json_pack("{s:s, s:I, s:s, s:s, s:i}", WIRE_P_JOB, jobs->noise, WIRE_P_UID, (json_int_t)o->uid, WIRE_P_ROLE,
                  WIRE_ROLE_COTENANT, WIRE_P_POLICY, c->policy, WIRE_P_CORES, noise_cores);
    if (!(r = exp_call(co, WIRE_JOB_REGISTER, p, &rc)))
        return rc;
    jobs->noise_registered = true;
    json_decref(r);
    /* Without the guard the noise runs at full share, whatever the daemon's guard would do. */
    if (!c->guard) {
        r = exp_call(co, WIRE_GUARD_SET, json_pack("{s:s, s:f}", WIRE_P_JOB, jobs->noise, WIRE_P_SHARE, 1.0), &rc);
        if (!r)
            return rc;
        json_decref(r);
    }
    return 0;
}

void exp_release_jobs(const client_opts_t *co, exp_jobs_t *jobs)
{
    int rc;
    if (jobs->noise_registered)
        json_decref(rpc_call(co, WIRE_JOB_RELEASE, json_pack("{s:s}", WIRE_P_JOB, jobs->noise), &rc));
    if (jobs->trainer_registered)
        json_decref(rpc_call(co, WIRE_JOB_RELEASE, json_pack("{s:s}", WIRE_P_JOB, jobs->trainer), &rc));
}

/* The run with this id as run.list shows it now (caller owns it), or NULL. */
json_t *exp_get_run(const client_opts_t *co, json_int_t id, const char *job, int *rc)
{
    json_t *r = exp_call(co, WIRE_RUN_LIST, json_pack("{s:s}", WIRE_P_JOB, job), rc);
    if (!r)
        return NULL;
    size_t i;
    json_t *run, *found = NULL;
    json_array_foreach(json_object_get(r, WIRE_R_RUNS), i, run)
        if (json_integer_value(json_object_get(run, WIRE_R_ID)) == id)
            found = json_incref(run);
    json_decref(r);
    return found;
}

json_t *exp_start_run(const client_opts_t *co, const char *job, int rank, json_t *argv, int *rc)
{
    return exp_start_run_env(co, job, rank, argv, NULL, rc);
}

json_t *exp_start_run_env(const client_opts_t *co, const char *job, int rank, json_t *argv, json_t *env, int *rc)
{
    json_t *params = json_pack("{s:s, s:i, s:o}", WIRE_P_JOB, job, WIRE_P_RANK, rank, WIRE_P_ARGV, argv);
    if (env)
        json_object_set_new(params, WIRE_P_ENV, env);
    return exp_call(co, WIRE_RUN_START, params, rc);
}

/* Poll until the run has ended; the ended run (caller owns it), or NULL (also when interrupted:
 * then the caller's release stops the run). */
json_t *exp_wait_run(const client_opts_t *co, json_int_t id, const char *job, int *rc)
{
    for (;;) {
        if (interrupted) {
            fprintf(stderr, "\ncosched experiment: interrupted by signal %d; stopping its runs, releasing its jobs\n",
                    (int)interrupted);
            *rc = EXIT_FAIL;
            return NULL;
        }
        json_t *run = exp_get_run(co, id, job, rc);
        if (!run)
            return NULL;
        if (strcmp(json_string_value(json_object_get(run, WIRE_R_STATE)), "running") != 0)
            return run;
        json_decref(run);
        exp_sleep(0.05);
    }
}

/* cosched-train's summary lines: the compute / communication / data shares, averaged over ranks. */
void exp_read_shares(const char *stdout_path, exp_rep_t *rep)
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
        const char *event = json_string_value(json_object_get(j, RUNOUT_EVENT));
        if (event && strcmp(event, RUNOUT_EVENT_SUMMARY) == 0) {
            sum[0] += json_number_value(json_object_get(j, RUNOUT_SHARE_COMPUTE));
            sum[1] += json_number_value(json_object_get(j, RUNOUT_SHARE_COMM));
            sum[2] += json_number_value(json_object_get(j, RUNOUT_SHARE_DATA));
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

/* "0-3,8" from a JSON array of CPU numbers, the union over ranks. */
static void cpus_of_ranks(json_t *ranks, char *out, size_t len)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    size_t i, k;
    json_t *rank, *cpu;
    json_array_foreach(ranks, i, rank)
        json_array_foreach(json_object_get(rank, WIRE_R_CPUS), k, cpu)
            hwloc_bitmap_set(set, (unsigned)json_integer_value(cpu));
    hwloc_bitmap_list_snprintf(out, len, set);
    hwloc_bitmap_free(set);
}

/* The daemon's plan for this configuration: how many noise ranks it leaves room for, and the
 * placement in words. Caller owns the plan. */
json_t *exp_plan_config(const client_opts_t *co, const exp_options_t *o, const exp_config_t *c, int *rc)
{
    return exp_call(co, WIRE_PLAN, exp_trainer_place(o, json_pack("{s:s}", WIRE_P_POLICY, c->policy)), rc);
}

void exp_describe_plan(json_t *plan, bool noise, char *out, size_t len)
{
    char trainer[256], cotenant[256];
    cpus_of_ranks(json_object_get(plan, WIRE_R_TRAINER), trainer, sizeof trainer);
    cpus_of_ranks(json_object_get(plan, WIRE_R_NOISE), cotenant, sizeof cotenant);
    snprintf(out, len, "trainer CPUs %s, noise CPUs %s%s, isolation %s", trainer, cotenant, noise ? "" : " (idle)",
             json_string_value(json_object_get(plan, WIRE_R_ISOLATION)));
}

/* How long a noise run may take to show it is at work before the experiment gives up on it. */
enum { NOISE_START_TIMEOUT_S = 60 };

/* Whether a noise run is at work: memory, I/O and network noise once a progress line counts
 * bytes moved (a memory run first touches its arrays, which takes seconds for large ones and
 * longer on a loaded machine), the others once a progress line follows the start line. */
bool exp_noise_at_work(const exp_options_t *o, const json_t *run)
{
    bool moves_bytes = strcmp(o->noise, "memory") == 0 || strcmp(o->noise, "io") == 0 ||
                       strcmp(o->noise, "network") == 0;
    if (moves_bytes)
        return json_number_value(json_object_get(run, WIRE_R_BYTES)) > 0;
    return json_integer_value(json_object_get(run, WIRE_R_LINES)) >= 2;
}

/* The noise at work before the trainer starts, so that it covers the whole run. Waiting for
 * that, not a fixed time, holds on a loaded machine too. */
int exp_wait_noise_at_work(const client_opts_t *co, const exp_options_t *o, const exp_jobs_t *jobs,
                           const json_int_t *ids, int nruns)
{
    int rc = 0;
    for (int r = 0, waited_ms = 0; r < nruns; r++) {
        for (;;) {
            json_t *run = exp_get_run(co, ids[r], jobs->noise, &rc);
            if (!run)
                return rc ? rc : EXIT_FAIL;
            bool running = strcmp(json_string_value(json_object_get(run, WIRE_R_STATE)), "running") == 0;
            bool at_work = exp_noise_at_work(o, run);
            const char *out = json_string_value(json_object_get(run, WIRE_R_STDOUT));
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
            exp_sleep(0.05);
            waited_ms += 50;
        }
    }
    return 0;
}

/* A noise run that ended before the trainer did not cover its run: say so, with its output. */
int exp_check_noise_running(const client_opts_t *co, const exp_jobs_t *jobs, const json_int_t *ids, int nruns)
{
    int rc = 0;
    for (int r = 0; r < nruns && rc == 0; r++) {
        json_t *run = exp_get_run(co, ids[r], jobs->noise, &rc);
        if (run && strcmp(json_string_value(json_object_get(run, WIRE_R_STATE)), "running") != 0) {
            const char *out = json_string_value(json_object_get(run, WIRE_R_STDOUT));
            fprintf(stderr,
                    "cosched experiment: noise rank %d ended before the trainer (%s); its output: %s and its "
                    ".err beside it\n",
                    r, json_string_value(json_object_get(run, WIRE_R_STATE)), out ? out : "?");
            rc = EXIT_FAIL;
        }
        json_decref(run);
    }
    return rc;
}

/* Stop the noise runs and add up the throughput they achieved (MB/s; -1 when they moved no bytes);
 * each run's stdout file goes to outputs. */
double exp_stop_noise(const client_opts_t *co, const exp_jobs_t *jobs, const json_int_t *ids, int nruns,
                      json_t *outputs)
{
    int rc;
    double mbs = -1;
    for (int r = 0; r < nruns; r++)
        json_decref(rpc_call(co, WIRE_RUN_STOP, json_pack("{s:I}", WIRE_P_ID, ids[r]), &rc));
    for (int r = 0; r < nruns; r++) {
        json_t *run = exp_wait_run(co, ids[r], jobs->noise, &rc);
        json_t *rate = json_object_get(run, WIRE_R_RATE_BYTES_PER_SECOND);
        if (json_is_number(rate))
            mbs = (mbs < 0 ? 0 : mbs) + json_number_value(rate) / 1e6;
        json_t *out = json_object_get(run, WIRE_R_STDOUT);
        json_array_append(outputs, json_is_string(out) ? out : json_null());
        json_decref(run);
    }
    return mbs;
}
