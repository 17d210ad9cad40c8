/* experiment_guarded: the guard at work in `cosched experiment`. The guard learns again whenever
 * co-tenants come or go, so its configuration is not cut into blocks: one long trainer run, a
 * no-noise lead-in (the daemon takes its baseline there), then the noise without a break while
 * the guard holds it, then a no-noise lead-out. The guard has settled from the first change of its
 * share after which the share stays within a factor of two (or 0.1) of it (exp_settle_time; a
 * harmless noise: from its start; the later probes and give-backs are part of the guard's work and
 * stay in); the steps from then on, in batches of a block's length (experiment_block_size.h), are
 * compared with the batches of the run's own lead-in and lead-out (the Hodges-Lehmann shift of
 * the logs of the batch figures with the Wilcoxon rank-sum interval, as robust as the blocks'
 * pairs to a host that switches speed; batches, because consecutive steps are correlated; both
 * ends, so that a slow drift cancels). The noise's throughput over the same window against the
 * unguarded noise of the same placement's blocks is what the guard kept. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "experiment_long_run.h"
#include "experiment_window.h"
#include "wire.h"

enum {
    MAX_NOISE = 256,
    MAX_BATCHES = EXP_MAX_REPS,
    MIN_BATCHES = 10,        /* at least: the guard's give-backs and probes come seconds apart */
    MIN_GUARDED_S = 30,      /* ... and the noise under the guard this long, or two of its full windows */
    MIN_GUARDED_STEPS = 128, /* two of the guard's windows, as coschedd.yaml's default max_window has them */
    SETTLED_FOR_S = 3,       /* while running, a settle is believed once it has held this long */
    LEAD_OF_S = 90,          /* the leads are a sixth of the guarded run, or of this much */
    MAX_POLLS = 1 << 16,
};

typedef struct guarded {
    exp_long_run_t run;
    json_int_t ids[MAX_NOISE];
    exp_follow_t outs[MAX_NOISE];
    int nnoise;
    double lead_from, noise_start, settled, noise_stop, lead_out_from, end;
    bool settled_by_guard;          /* false: not settled by half-time, measured from there */
    double *poll_time, *poll_share; /* the guard's share at every poll since the noise started */
    int npolls;
    double window_mbs; /* the noise's throughput between settle and stop (experiment_window.h) */
} guarded_t;

/* The share the trainer's guard allows its co-tenants now (`stats`); < 0 when it cannot be read. */
static double guard_share(const guarded_t *g)
{
    int rc;
    json_t *r = rpc_call(g->run.co, WIRE_STATS, json_pack("{s:s}", WIRE_P_JOB, g->run.jobs.trainer), &rc);
    json_t *share = json_object_get(json_object_get(json_array_get(json_object_get(r, WIRE_R_JOBS), 0), WIRE_R_GUARD),
                                    WIRE_R_SHARE);
    double value = json_is_number(share) ? json_number_value(share) : -1;
    json_decref(r);
    return value;
}

/* What the noise moved between the settle and its stop, from its reports once it has ended. */
static double read_window(guarded_t *g)
{
    exp_window_t w;
    if (exp_window_init(&w, g->nnoise, strcmp(g->run.o->noise, "network") == 0 ? 2 : 1) != 0)
        return -1;
    w.from = g->settled;
    w.to = g->noise_stop;
    for (w.current = 0; w.current < g->nnoise; w.current++)
        exp_follow(&g->outs[w.current], exp_window_line, &w);
    double mbs = exp_window_mbs(&w);
    exp_window_free(&w);
    return mbs;
}

static int wait_until(guarded_t *g, double when)
{
    int rc = 0;
    while (rc == 0 && exp_now() < when) {
        exp_sleep(0.2);
        rc = exp_long_run_poll(&g->run);
    }
    return rc;
}

static void record_share(guarded_t *g, double now)
{
    if (g->npolls == MAX_POLLS)
        return;
    g->poll_time[g->npolls] = now;
    g->poll_share[g->npolls++] = guard_share(g);
}

/* The settle time from the polls so far, or 0 when it is later than half of the noise's time (a
 * guard that had not settled by half-time is measured from there, and the report says so). */
static double settle_so_far(const guarded_t *g, double half_time)
{
    double settled = exp_settle_time(g->poll_time, g->poll_share, g->npolls);
    return settled <= half_time ? settled : 0;
}

/* Whether the daemon follows the trainer's progress after the lead-in; if not (a --trainer
 * command whose hook cannot report, a source that cannot be read), why, into out: the guard is
 * blind, and the run measures the noise unguarded. Said, never silent. */
static void check_guard_sees(const guarded_t *g, char *out, size_t len)
{
    int rc;
    out[0] = '\0';
    json_t *job = rpc_call(g->run.co, WIRE_JOB_GET, json_pack("{s:s}", WIRE_P_JOB, g->run.jobs.trainer), &rc);
    if (!job) {
        snprintf(out, len, "the daemon did not say whether it follows the trainer's progress (job get failed)");
        return;
    }
    json_t *progress = json_object_get(job, WIRE_P_PROGRESS);
    const char *source = json_string_value(json_object_get(progress, WIRE_R_SOURCE));
    const char *reason = json_string_value(json_object_get(progress, WIRE_R_REASON));
    if (source && strcmp(source, WIRE_PROGRESS_NONE) == 0)
        snprintf(out, len, "the daemon has no progress of the trainer after its lead-in (%s)%s",
                 reason ? reason : "no reason given",
                 g->run.o->trainer_cmd ? "; its hook's reports never reached the daemon: see the trainer's .err" : "");
    json_decref(job);
}

static int start_noise(guarded_t *g, const exp_config_t *c)
{
    exp_long_run_t *r = &g->run;
    int rc = 0;
    g->nnoise = r->noise_cores < MAX_NOISE ? r->noise_cores : MAX_NOISE;
    for (int k = 0; k < g->nnoise; k++) {
        json_t *argv = exp_noise_argv(r->o, c);
        json_array_append_new(argv, json_string("--report-every"));
        json_array_append_new(argv, json_string("0.5"));
        json_t *run = exp_start_run(r->co, r->jobs.noise, k, argv, &rc);
        if (!run) {
            g->nnoise = k;
            return rc;
        }
        g->ids[k] = json_integer_value(json_object_get(run, WIRE_R_ID));
        json_decref(run);
        if (!(run = exp_get_run(r->co, g->ids[k], r->jobs.noise, &rc)))
            return rc ? rc : EXIT_FAIL;
        const char *out = json_string_value(json_object_get(run, WIRE_R_STDOUT));
        snprintf(g->outs[k].path, sizeof g->outs[k].path, "%s", out ? out : "");
        json_decref(run);
    }
    if ((rc = exp_wait_noise_at_work(r->co, r->o, &r->jobs, g->ids, g->nnoise)) == 0) {
        g->noise_start = exp_now();
        record_share(g, g->noise_start);
    }
    return rc;
}

/* The batch figures of [from, to) into out; how many. */
static int batches(const guarded_t *g, double from, double to, double *out, int max)
{
    const exp_long_run_t *r = &g->run;
    return exp_batch_figures(r->steps, r->nsteps, from, to, r->block_s, EXP_MIN_BLOCK_STEPS, out, max);
}

/* The slowdown so far: guarded batches since the settle against the lead-in's (and lead-out's). */
static exp_slowdown_t slowdown_so_far(const guarded_t *g, double to, int *nguarded)
{
    static double quiet[MAX_BATCHES], noisy[MAX_BATCHES];
    int nq = batches(g, g->lead_from, g->noise_start, quiet, MAX_BATCHES / 2);
    if (g->lead_out_from > 0)
        nq += batches(g, g->lead_out_from, g->end, quiet + nq, MAX_BATCHES / 2);
    int nn = batches(g, g->settled, to, noisy, MAX_BATCHES);
    *nguarded = nn;
    if (nq < 2 || nn < 2)
        return (exp_slowdown_t){0};
    return exp_unpaired_slowdown(exp_estimator(), quiet, nq, noisy, nn);
}

/* The noise's throughput while guarded, against the unguarded noise's on the same placement. */
static double kept_share(const guarded_t *g, const char *policy, const exp_result_t *results, int n)
{
    double unguarded = -1;
    for (int i = 0; i < n; i++) {
        const exp_result_t *x = &results[i];
        if (!x->config.noise || x->config.guard || strcmp(x->config.policy, policy) != 0 || x->nreps == 0)
            continue;
        unguarded = 0;
        for (int k = 0; k < x->nreps; k++)
            unguarded += x->reps[k].noise_mbs / x->nreps;
    }
    if (unguarded <= 0 || g->window_mbs < 0)
        return -1;
    return g->window_mbs / unguarded;
}

static void fill_result(guarded_t *g, exp_result_t *res, const exp_result_t *results, int n)
{
    const exp_long_run_t *r = &g->run;
    static double noisy[MAX_BATCHES], quiet[MAX_BATCHES];
    res->measured = true;
    res->method = exp_estimator_batches_method(exp_estimator());
    res->block_seconds = r->block_s;
    res->block_steps = r->block_steps;
    res->host_switches = r->dwell.switches;
    res->host_dwell_s = r->dwell.dwell_s;
    res->slowdown = slowdown_so_far(g, g->noise_stop, &res->npairs);
    res->settle_seconds = g->settled_by_guard ? g->settled - g->noise_start : -1;
    res->kept = kept_share(g, res->config.policy, results, n);
    snprintf(res->placement, sizeof res->placement, "%s", r->placement);
    int nq = batches(g, g->lead_from, g->noise_start, quiet, MAX_BATCHES / 2);
    nq += batches(g, g->lead_out_from, g->end, quiet + nq, MAX_BATCHES / 2);
    res->baseline_seconds = nq ? exp_summarize(quiet, nq).median : 0;
    int nn = batches(g, g->settled, g->noise_stop, noisy, MAX_BATCHES);
    double mbs = g->window_mbs;
    res->nreps = 0;
    for (int k = 0; k < nn; k++) {
        exp_rep_t *x = &res->reps[res->nreps++];
        *x = r->profile;
        x->seconds = r->o->steps * noisy[k];
        x->step_median = noisy[k];
        x->started = g->settled + k * r->block_s;
        x->noise_mbs = mbs;
        snprintf(x->isolation, sizeof x->isolation, "%s", r->isolation);
    }
}

int exp_run_guarded(const client_opts_t *co, exp_options_t *o, exp_result_t *results, int n, int guarded,
                    double deadline)
{
    guarded_t g = {.poll_time = malloc(MAX_POLLS * sizeof(double)), .poll_share = malloc(MAX_POLLS * sizeof(double))};
    if (!g.poll_time || !g.poll_share) {
        free(g.poll_time);
        free(g.poll_share);
        return output_fail("out of memory");
    }
    exp_result_t *res = &results[guarded];
    exp_long_run_t *r = &g.run;
    int rc = exp_long_run_start(r, co, o, &res->config, "shared+noise+guard (continuous)");
    /* A lead-in and a lead-out of a sixth of the run each (of at most LEAD_OF_S: --time auto's
     * deadline is far), at least four batches and 3 s: the daemon's baseline, then ours. The
     * rank-sum interval is as wide as its smaller side allows, and the batches after the guard
     * settles are the other. */
    double lead = fmax(fmax(3, 4 * r->block_s), fmin(deadline - exp_now(), LEAD_OF_S) / 6);
    if (rc == 0) {
        g.lead_from = exp_now();
        fprintf(stderr,
                "%s: %.1f s without noise, then the noise under the guard until %.0f s from now, then %.1f s "
                "without\n",
                r->label, lead, deadline - g.lead_from - lead, lead);
        rc = wait_until(&g, g.lead_from + lead);
    }
    if (rc == 0) {
        check_guard_sees(&g, res->guard_blind, sizeof res->guard_blind);
        if (res->guard_blind[0])
            fprintf(stderr, "%s: warning: the guard cannot judge the trainer: %s; the noise runs unguarded\n", r->label,
                    res->guard_blind);
        rc = start_noise(&g, &res->config);
    }
    /* the noise plays for what the time leaves, but never less than twice a lead: the guard must
     * have had a chance to settle, even when --time is short (and overrun, said in the report) */
    double stop_by = fmax(deadline - lead, g.noise_start + 2 * lead);
    double half_time = g.noise_start + (stop_by - g.noise_start) / 2;
    while (rc == 0 && exp_now() < stop_by) {
        exp_sleep(0.25);
        if ((rc = exp_long_run_poll(r)) != 0)
            break;
        double now = exp_now();
        record_share(&g, now);
        g.settled = settle_so_far(&g, half_time);
        if (g.settled == 0 || now - g.settled < SETTLED_FOR_S)
            continue;
        int nguarded;
        exp_slowdown_t d = slowdown_so_far(&g, now, &nguarded);
        double least = fmax(MIN_GUARDED_S, MIN_GUARDED_STEPS * r->step_time);
        if (nguarded >= MIN_BATCHES && now - g.noise_start >= least && exp_half_width(&d) <= o->precision / 2)
            break; /* the lead-out's batches will widen it; stop at half the target */
    }
    g.noise_stop = exp_now();
    if (g.npolls > 0) { /* settled for good: with every poll */
        g.settled = settle_so_far(&g, half_time);
        g.settled_by_guard = g.settled > 0;
        if (!g.settled_by_guard)
            g.settled = half_time;
    }
    json_t *outputs = json_array();
    if (g.nnoise > 0)
        exp_stop_noise(co, &r->jobs, g.ids, g.nnoise, outputs);
    json_array_extend(r->noise_outputs, outputs);
    json_decref(outputs);
    g.window_mbs = g.settled > 0 ? read_window(&g) : -1;
    if (rc == 0) {
        g.lead_out_from = exp_now() + r->drop;
        g.end = g.lead_out_from + lead;
        rc = wait_until(&g, g.end + r->block_s / 4);
    }
    rc = exp_long_run_end(r, rc);
    if (rc == 0 && g.settled > 0)
        fill_result(&g, res, results, n);
    else if (rc == 0)
        rc = output_fail("%s: the noise never ran beside the trainer under the guard", res->config.name);
    exp_long_run_free(r);
    free(g.poll_time);
    free(g.poll_share);
    return rc;
}
