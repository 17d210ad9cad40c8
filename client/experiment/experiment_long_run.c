/* experiment_long_run: the blocked design's long trainer run — registered, started open-ended,
 * followed step by step, stopped cleanly; see experiment_long_run.h. */
#include "experiment_long_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "experiment_hook.h"
#include "run_output.h"
#include "wire.h"

/* The trainer runs until stopped: far more steps than any --time allows. */
#define OPEN_ENDED_STEPS 100000000L

enum {
    LEAD_IN_STEPS = 24,  /* before the block length is set: the first ones warm up */
    LEAD_IN_SKIP = 8,    /* ... and are not part of the step time (a third of the lead-in at most) */
    LEAD_IN_MIN_S = 4,   /* a cold machine stayed slow for over a second; and a host that switches speed
                           every few seconds shows it (experiment_dwell.h) */
    LEAD_IN_FEWEST = 10, /* slow steps (a real job's 0.1-2 s): this many will do, after ... */
    LEAD_IN_SLOW_S = 8,  /* ... this long, where 24 would take most of a placement's time */
    LEAD_IN_TIMEOUT_S = 120,
};

/* The lead-in's first steps, which warm up and are not part of its step time. */
static int lead_in_skip(int nsteps)
{
    return nsteps / 3 < LEAD_IN_SKIP ? nsteps / 3 : LEAD_IN_SKIP;
}

/* Whether the lead-in has enough: LEAD_IN_MIN_S, and LEAD_IN_STEPS steps or, slow ones,
 * LEAD_IN_FEWEST in LEAD_IN_SLOW_S. */
static bool lead_in_done(const exp_long_run_t *r, double now)
{
    double elapsed = now - r->started;
    return elapsed >= LEAD_IN_MIN_S &&
           (r->nsteps >= LEAD_IN_STEPS || (r->nsteps >= LEAD_IN_FEWEST && elapsed >= LEAD_IN_SLOW_S));
}

double exp_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + now.tv_nsec * 1e-9;
}

/* cosched-train's step lines of rank 0, with the wall clock of their end. */
static void add_step(json_t *line, void *arg)
{
    exp_long_run_t *r = arg;
    const char *event = json_string_value(json_object_get(line, RUNOUT_EVENT));
    json_t *time = json_object_get(line, RUNOUT_TIME), *seconds = json_object_get(line, RUNOUT_T_STEP);
    if (!event || strcmp(event, RUNOUT_EVENT_STEP) != 0 ||
        json_integer_value(json_object_get(line, RUNOUT_RANK)) != 0 || !json_is_number(time) ||
        !json_is_number(seconds))
        return;
    if (r->nsteps == r->steps_cap) {
        int cap = r->steps_cap ? 2 * r->steps_cap : 4096;
        exp_step_t *grown = realloc(r->steps, (size_t)cap * sizeof *grown);
        if (!grown)
            return; /* a step less; the blocks say how many they kept */
        r->steps = grown;
        r->steps_cap = cap;
    }
    r->steps[r->nsteps++] = (exp_step_t){json_number_value(time), json_number_value(seconds)};
}

int exp_long_run_poll(exp_long_run_t *r)
{
    int rc = 0;
    if (exp_interrupted()) {
        fprintf(stderr, "\ncosched experiment: interrupted; stopping its runs, releasing its jobs\n");
        return EXIT_FAIL;
    }
    exp_follow(&r->trainer_out, add_step, r);
    json_t *run = exp_get_run(r->co, r->trainer_id, r->jobs.trainer, &rc);
    if (!run)
        return rc ? rc : EXIT_FAIL;
    if (strcmp(json_string_value(json_object_get(run, WIRE_R_STATE)), "running") != 0) {
        exp_follow(&r->trainer_out, add_step, r); /* what it wrote before it ended */
        json_t *status = json_object_get(run, WIRE_R_EXIT_STATUS);
        char exit_status[32] = "unknown";
        if (json_is_integer(status))
            snprintf(exit_status, sizeof exit_status, "%" JSON_INTEGER_FORMAT, json_integer_value(status));
        fprintf(stderr,
                "\ncosched experiment: the trainer%s ended before it was stopped (%s, exit status %s) after %d "
                "steps; its output: %s and its .err beside it\n",
                r->o->trainer_cmd ? " command" : "", json_string_value(json_object_get(run, WIRE_R_STATE)), exit_status,
                r->nsteps, r->trainer_stdout);
        if (r->o->trainer_cmd)
            exp_print_output_tail(stderr, r->trainer_stdout);
        rc = EXIT_FAIL;
    }
    json_decref(run);
    return rc;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The lead-in sets the blocks from time (experiment_block_size.h): the noise's transient and a
 * few whole steps, at least 0.2 s (the sweep's duty cycles: 0.5 s). --block overrides the length
 * (the drop stays the noise's). The host's speed switches are counted for the report. */
static void size_blocks(exp_long_run_t *r)
{
    int skip = lead_in_skip(r->nsteps), n = r->nsteps - skip;
    double *times = malloc((size_t)n * sizeof *times);
    if (!times)
        abort();
    for (int i = 0; i < n; i++)
        times[i] = r->steps[skip + i].seconds;
    qsort(times, (size_t)n, sizeof *times, compare_doubles);
    r->step_time = times[n / 2];
    free(times);
    r->dwell = exp_dwell_measure(r->steps + skip, n);
    double shortest = r->o->sweep != EXP_SWEEP_NONE ? EXP_BLOCK_SHORTEST_DUTY_S : EXP_BLOCK_SHORTEST_S;
    exp_block_size_t size = exp_block_size(r->step_time, exp_noise_settle_seconds(r->o->noise), shortest);
    r->drop = size.drop;
    r->block_s = r->o->block_seconds > 0 ? r->o->block_seconds : size.seconds;
    r->block_steps = r->o->block_seconds > 0 ? 0 : size.steps;
}

/* A --trainer command's run: its steps from the hook, through a step log in --out. */
static json_t *trainer_env(exp_long_run_t *r)
{
    if (snprintf(r->trainer_out.path, sizeof r->trainer_out.path, "%s/%s-steps.jsonl", r->o->out_abs,
                 r->jobs.trainer) >= (int)sizeof r->trainer_out.path) {
        output_fail("--out %s is too long a path for the trainer's step log", r->o->out_abs);
        return NULL;
    }
    return exp_hook_env(r->o, r->trainer_out.path);
}

static int start_trainer(exp_long_run_t *r)
{
    int rc = 0;
    snprintf(r->trainer_trace, sizeof r->trainer_trace, "%s/%s.json", r->o->trace_parts, r->jobs.trainer);
    bool tracing = r->o->trace && !r->o->trainer_cmd;
    if (!tracing)
        r->trainer_trace[0] = '\0';
    json_t *env = NULL;
    if (r->o->trainer_cmd && !(env = trainer_env(r)))
        return EXIT_FAIL;
    json_t *run = exp_start_run_env(r->co, r->jobs.trainer, 0,
                                    exp_trainer_argv(r->o, OPEN_ENDED_STEPS, tracing ? r->trainer_trace : NULL), env,
                                    &rc);
    if (!run)
        return rc;
    r->trainer_id = json_integer_value(json_object_get(run, WIRE_R_ID));
    json_decref(run);
    if (!(run = exp_get_run(r->co, r->trainer_id, r->jobs.trainer, &rc)))
        return rc ? rc : EXIT_FAIL;
    const char *out = json_string_value(json_object_get(run, WIRE_R_STDOUT));
    snprintf(r->trainer_stdout, sizeof r->trainer_stdout, "%s", out ? out : "");
    if (!r->o->trainer_cmd) /* cosched-train's step lines are on its stdout */
        snprintf(r->trainer_out.path, sizeof r->trainer_out.path, "%s", r->trainer_stdout);
    r->started = json_number_value(json_object_get(run, WIRE_R_STARTED));
    json_decref(run);
    return 0;
}

/* The lead-in (lead_in_done); a trainer command that has not stepped at
 * all by exp_hook_first_step_seconds() is said to be no PyTorch training the hook sees. */
static int lead_in(exp_long_run_t *r)
{
    int rc;
    double first_step_s = r->o->trainer_cmd ? exp_hook_first_step_seconds(r->o) : LEAD_IN_TIMEOUT_S;
    double first_step_by = exp_now() + first_step_s, give_up = exp_now() + LEAD_IN_TIMEOUT_S;
    while (!lead_in_done(r, exp_now())) {
        if ((rc = exp_long_run_poll(r)) != 0)
            return rc;
        if (r->o->trainer_cmd && r->nsteps == 0 && exp_now() > first_step_by) {
            exp_hook_say_no_steps(r->o, first_step_s, r->trainer_stdout);
            return EXIT_FAIL;
        }
        if (exp_now() > give_up)
            return r->o->trainer_cmd
                       ? output_fail("the trainer command made %d steps in %d s, %d are needed before the blocks "
                                     "begin (its steps: %s; its output: %s)",
                                     r->nsteps, LEAD_IN_TIMEOUT_S, LEAD_IN_FEWEST, r->trainer_out.path,
                                     r->trainer_stdout)
                       : output_fail("the trainer reported %d steps in %d s (its output: %s); the blocked design needs "
                                     "cosched-train's step lines",
                                     r->nsteps, LEAD_IN_TIMEOUT_S, r->trainer_stdout);
        exp_sleep(0.1);
    }
    return 0;
}

int exp_long_run_start(exp_long_run_t *r, const client_opts_t *co, const exp_options_t *o, const exp_config_t *c,
                       const char *label)
{
    static int sequence;
    int rc = 0;
    memset(r, 0, sizeof *r);
    r->co = co;
    r->o = o;
    r->noise_outputs = json_array();
    snprintf(r->label, sizeof r->label, "%s", label);
    snprintf(r->jobs.trainer, sizeof r->jobs.trainer, "exp-%d-%d-train", (int)getpid(), sequence);
    snprintf(r->jobs.noise, sizeof r->jobs.noise, "exp-%d-%d-noise", (int)getpid(), sequence++);
    json_t *plan = exp_plan_config(co, o, c, &rc);
    if (!plan)
        return rc;
    r->noise_cores = (int)json_array_size(json_object_get(plan, WIRE_R_NOISE));
    exp_describe_plan(plan, c->noise, r->placement, sizeof r->placement);
    snprintf(r->isolation, sizeof r->isolation, "%s", json_string_value(json_object_get(plan, WIRE_R_ISOLATION)));
    json_decref(plan);
    if (c->noise && r->noise_cores == 0)
        return output_fail("%s leaves no core for noise on this node", c->name);
    if ((rc = exp_register_jobs(co, o, c, &r->jobs, r->noise_cores)) != 0 || (rc = start_trainer(r)) != 0 ||
        (rc = lead_in(r)) != 0)
        return rc;
    size_blocks(r);
    return 0;
}

/* The run's parts onto the experiment's trace; what could not be read is said, not fatal. */
static void trace_run(exp_long_run_t *r, double end)
{
    int rc;
    json_t *noise_job = r->jobs.noise_registered
                            ? rpc_call(r->co, WIRE_JOB_GET, json_pack("{s:s}", WIRE_P_JOB, r->jobs.noise), &rc)
                            : NULL;
    size_t n = json_array_size(r->noise_outputs);
    const char **outputs = calloc(n ? n : 1, sizeof *outputs);
    for (size_t i = 0; outputs && i < n; i++)
        outputs[i] = json_string_value(json_array_get(r->noise_outputs, i));
    exp_trace_rep_t part = {.label = r->label,
                            .start = r->started,
                            .end = end,
                            .noise_mbs = n ? 0 : -1,
                            .trainer_trace = r->trainer_trace[0] ? r->trainer_trace : NULL,
                            .noise_outputs = outputs,
                            .nnoise = outputs ? (int)n : 0,
                            .share_changes = json_object_get(noise_job, WIRE_R_SHARE_CHANGES)};
    char *missing = NULL;
    exp_trace_add_rep(r->o->trace, &part, &missing);
    if (missing)
        fprintf(stderr, "\ncosched experiment: --trace: left out %s\n", missing);
    free(missing);
    free(outputs);
    json_decref(noise_job);
}

int exp_long_run_end(exp_long_run_t *r, int rc)
{
    int stop_rc = 0;
    if (r->trainer_id > 0) {
        json_decref(exp_call(r->co, WIRE_RUN_STOP, json_pack("{s:I}", WIRE_P_ID, r->trainer_id), &stop_rc));
        json_t *run = exp_wait_run(r->co, r->trainer_id, r->jobs.trainer, &stop_rc);
        json_t *status = json_object_get(run, WIRE_R_EXIT_STATUS);
        /* Its steps are read already: a trainer that needed longer than the daemon's grace to end
         * (and was killed) costs its profile and its trace, not the experiment. A trainer command
         * has neither, and its exit status on SIGTERM is its own. */
        if (run && (!json_is_integer(status) || json_integer_value(status) != 0) && rc == 0 && !r->o->trainer_cmd)
            fprintf(stderr,
                    "cosched experiment: warning: the trainer did not end cleanly when stopped (%s): its "
                    "profile and trace are missing; its output: %s and its .err beside it\n",
                    json_string_value(json_object_get(run, WIRE_R_STATE)), r->trainer_stdout);
        exp_read_shares(r->trainer_stdout, &r->profile);
        if (rc == 0 && run && r->o->trace)
            trace_run(r, json_number_value(json_object_get(run, WIRE_R_ENDED)));
        json_decref(run);
    }
    exp_release_jobs(r->co, &r->jobs);
    json_decref(r->noise_outputs);
    r->noise_outputs = NULL;
    return rc;
}

void exp_long_run_free(exp_long_run_t *r)
{
    free(r->steps);
    r->steps = NULL;
    r->nsteps = 0;
}
