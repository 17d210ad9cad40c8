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
#include "experiment_jobs.h"
#include "wire.h"

/* The daemon's median step time of the trainer (0 when it saw no steps). */
static double trainer_step_median(const client_opts_t *co, const char *job)
{
    int rc;
    json_t *r = rpc_call(co, WIRE_STATS, json_pack("{s:s}", WIRE_P_JOB, job), &rc);
    double median = 0;
    json_t *first = r ? json_array_get(json_object_get(r, WIRE_R_JOBS), 0) : NULL;
    if (first)
        median = json_number_value(json_object_get(json_object_get(first, WIRE_R_WINDOW), WIRE_R_MEDIAN_SECONDS));
    json_decref(r);
    return median;
}

static int start_noise(const client_opts_t *co, const exp_options_t *o, const exp_config_t *c, const exp_jobs_t *jobs,
                       int nranks, json_int_t *ids)
{
    int rc = 0;
    for (int r = 0; r < nranks; r++) {
        json_t *run = exp_start_run(co, jobs->noise, r, exp_noise_argv(o, c), &rc);
        if (!run)
            return rc;
        ids[r] = json_integer_value(json_object_get(run, WIRE_R_ID));
        json_decref(run);
    }
    return 0;
}

/* Start the trainer, wait for its end, and take its time; 0 when it exited 0. */
static int run_trainer(const client_opts_t *co, const exp_options_t *o, const exp_jobs_t *jobs, const char *trace,
                       exp_rep_t *rep)
{
    int rc = 0;
    json_t *run = exp_start_run(co, jobs->trainer, 0, exp_trainer_argv(o, o->steps, trace), &rc);
    if (!run)
        return rc;
    json_int_t id = json_integer_value(json_object_get(run, WIRE_R_ID));
    json_decref(run);
    if (!(run = exp_wait_run(co, id, jobs->trainer, &rc)))
        return rc;
    json_t *status = json_object_get(run, WIRE_R_EXIT_STATUS);
    const char *out = json_string_value(json_object_get(run, WIRE_R_STDOUT));
    if (!json_is_integer(status) || json_integer_value(status) != 0) {
        fprintf(stderr, "cosched experiment: the trainer did not exit 0 (%s); its output: %s and its .err beside it\n",
                json_string_value(json_object_get(run, WIRE_R_STATE)), out ? out : "?");
        json_decref(run);
        return EXIT_FAIL;
    }
    rep->started = json_number_value(json_object_get(run, WIRE_R_STARTED));
    rep->seconds = json_number_value(json_object_get(run, WIRE_R_ENDED)) - rep->started;
    exp_read_shares(out, rep);
    json_decref(run);
    rep->step_median = trainer_step_median(co, jobs->trainer);
    return 0;
}

/* The repetition's parts onto the experiment's trace; what could not be read is said, not fatal. */
static void trace_rep(const client_opts_t *co, const exp_options_t *o, const exp_jobs_t *jobs, const char *label,
                      const exp_rep_t *rep, const char *trainer_trace, json_t *noise_outputs)
{
    int rc;
    json_t *noise_job = jobs->noise_registered
                            ? rpc_call(co, WIRE_JOB_GET, json_pack("{s:s}", WIRE_P_JOB, jobs->noise), &rc)
                            : NULL;
    size_t n = json_array_size(noise_outputs);
    const char **outputs = calloc(n ? n : 1, sizeof *outputs);
    for (size_t i = 0; outputs && i < n; i++)
        outputs[i] = json_string_value(json_array_get(noise_outputs, i));
    exp_trace_rep_t part = {.label = label,
                            .start = rep->started,
                            .end = rep->started + rep->seconds,
                            .noise_mbs = rep->noise_mbs,
                            .trainer_trace = trainer_trace,
                            .noise_outputs = outputs,
                            .nnoise = outputs ? (int)n : 0,
                            .share_changes = json_object_get(noise_job, WIRE_R_SHARE_CHANGES)};
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
    exp_jobs_t jobs = {.trainer_registered = false};
    snprintf(jobs.trainer, sizeof jobs.trainer, "exp-%d-%d-train", (int)getpid(), sequence);
    snprintf(jobs.noise, sizeof jobs.noise, "exp-%d-%d-noise", (int)getpid(), sequence++);
    char trace[4352];
    bool tracing = o->trace && !o->trainer_cmd;
    snprintf(trace, sizeof trace, "%s/%s.json", o->trace_parts, jobs.trainer);
    json_t *plan = exp_plan_config(co, o, c, &rc);
    if (!plan)
        return rc;
    int nnoise = (int)json_array_size(json_object_get(plan, WIRE_R_NOISE));
    exp_describe_plan(plan, c->noise, placement, placement_len);
    snprintf(rep->isolation, sizeof rep->isolation, "%s", json_string_value(json_object_get(plan, WIRE_R_ISOLATION)));
    json_decref(plan);
    if (c->noise && nnoise == 0) {
        fprintf(stderr, "cosched experiment: %s leaves no core for noise on this node\n", c->name);
        return EXIT_FAIL;
    }
    json_int_t noise_ids[4096];
    json_t *noise_outputs = json_array();
    int nstarted = 0;
    rep->noise_mbs = -1;
    if ((rc = exp_register_jobs(co, o, c, &jobs, nnoise)) != 0)
        goto out;
    if (c->guard && baseline_step > 0) {
        json_t *r = exp_call(co, WIRE_BASELINE_SET,
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
        if (rc != 0 || (rc = exp_wait_noise_at_work(co, o, &jobs, noise_ids, nstarted)) != 0)
            goto out;
    }
    rc = run_trainer(co, o, &jobs, tracing ? trace : NULL, rep);
    if (rc == 0)
        rc = exp_check_noise_running(co, &jobs, noise_ids, nstarted);
out:
    if (nstarted > 0)
        rep->noise_mbs = exp_stop_noise(co, &jobs, noise_ids, nstarted, noise_outputs);
    if (rc == 0 && o->trace)
        trace_rep(co, o, &jobs, label, rep, tracing ? trace : NULL, noise_outputs);
    json_decref(noise_outputs);
    exp_release_jobs(co, &jobs);
    return rc;
}
