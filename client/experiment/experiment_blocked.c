/* experiment_blocked: the blocked design of `cosched experiment`. Per placement one long trainer
 * run; the noise plays rounds of paired blocks (experiment_blocks.h) from a pattern file that
 * cosched-noise plays itself, so that every change happens when the noise says it did (its phase
 * lines carry the times). A round starts with one discarded block of noise (a new noise process
 * touches its arrays the first time, slower than ever after). Table II's placements stop once
 * their interval is within --precision; the sweep plays the lowest, middle and highest settings,
 * then bisects where its curve's band crosses the budget (exp_sweep_next). --time bounds it all;
 * the blocks are as short as the noise's transient and a few whole steps allow
 * (experiment_block_size.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client.h"
#include "experiment_long_run.h"
#include "experiment_round.h"
#include "wire.h"

enum {
    MIN_PAIRS = 6,       /* a round plays at least this many: the fewest with a 95 % interval */
    AUTO_RESERVE_S = 60, /* --time auto: what a placement leaves per part of those after it */
    MAX_BLOCKS = 4096,
    MAX_NOISE = 256, /* noise ranks a round starts */
    SWEEP_PAIRS = 2, /* a sweep round's pairs per setting in blocks of 40 steps: the fewest with an interval */
};

/* One round: the noise runs that play it, and its blocks as they report them (experiment_round.h). */
typedef struct round {
    exp_long_run_t *run;
    exp_round_t played;
    json_int_t ids[MAX_NOISE];
    int nruns;
    exp_follow_t outs[MAX_NOISE];
} round_t;

/* The noise's mode in a pattern file, as cosched-noise names it. */
static const char *pattern_mode(const exp_options_t *o)
{
    if (!strcmp(o->noise, "cpu"))
        return "busy";
    return o->noise; /* memory, io, network: NOIGENA's names, which cosched-noise takes */
}

/* The pattern file of noise rank `rank`: a discarded block at full intensity, then the round's
 * blocks, each the setting's intensity or, for no noise and ranks a setting leaves out, idle. */
static int write_pattern(const round_t *rd, const exp_config_t *settings, int nsettings, int rank, const char *path)
{
    const exp_long_run_t *r = rd->run;
    FILE *f = fopen(path, "w");
    if (!f)
        return output_fail("cannot write the noise's block pattern %s: %m", path);
    const char *mode = pattern_mode(r->o);
    fprintf(f, "# cosched experiment: the noise blocks of %s, noise rank %d\n%s:\n  full: {intensity: 1}\n", r->label,
            rank, mode);
    for (int s = 1; s < nsettings; s++)
        if (settings[s].intensity < 1)
            fprintf(f, "  i%04d: {intensity: %.3f}\n", (int)lround(settings[s].intensity * 1000),
                    settings[s].intensity);
    fprintf(f, "patterns:\n  blocks:\n    repeat: 1\n    sequence:\n");
    /* at least 1 s: a new noise process's first touch of its arrays, whatever the blocks' length */
    fprintf(f, "      - {mode: %s, config: full, seconds: %.3f}\n", mode, fmax(1.0, r->block_s));
    for (int b = 0; b < rd->played.n; b++) {
        const exp_config_t *c = &settings[rd->played.blocks[b].setting];
        int ranks = c->noise_ranks > 0 ? c->noise_ranks : r->noise_cores;
        if (!c->noise || rank >= ranks)
            fprintf(f, "      - {mode: idle, seconds: %.3f}\n", r->block_s);
        else if (c->intensity < 1)
            fprintf(f, "      - {mode: %s, config: i%04d, seconds: %.3f}\n", mode, (int)lround(c->intensity * 1000),
                    r->block_s);
        else
            fprintf(f, "      - {mode: %s, config: full, seconds: %.3f}\n", mode, r->block_s);
    }
    return fclose(f) == 0 ? 0 : output_fail("cannot write the noise's block pattern %s: %m", path);
}

/* cosched-noise pattern on a file, in the --noise kind's clothes (io: its directory and cap;
 * network: a pair of MPI ranks on loopback, as experiment_jobs.c starts them). */
static json_t *pattern_argv(const exp_options_t *o, const char *path)
{
    json_t *argv = json_array();
    if (!strcmp(o->noise, "network")) {
        json_t *mpi = json_pack("[s,s,s,s,s,s,s,s,s,s,s,s,s]", o->mpirun_exe, "--allow-run-as-root", "--oversubscribe",
                                "--bind-to", "none", "-np", "2", "--mca", "btl", "self,tcp", "--mca",
                                "btl_tcp_if_include", "lo");
        json_array_extend(argv, mpi);
        json_decref(mpi);
    }
    json_t *noise = json_pack("[s,s,s,s,s,s,s]", o->noise_exe, "pattern", "--config", path, "blocks", "--report-every",
                              "0.25");
    json_array_extend(argv, noise);
    json_decref(noise);
    if (!strcmp(o->noise, "io")) {
        json_t *io = json_pack("[s,s,s,s]", "--dir", o->out_abs, "--max-bytes", "256M");
        json_array_extend(argv, io);
        json_decref(io);
    }
    return argv;
}

static void follow_noise(round_t *rd)
{
    for (rd->played.current = 0; rd->played.current < rd->nruns; rd->played.current++)
        exp_follow(&rd->outs[rd->played.current], exp_round_line, &rd->played);
}

static void measure_round(round_t *rd)
{
    exp_round_measure(&rd->played, rd->run->steps, rd->run->nsteps, rd->run->drop);
}

/* The noise ranks a round starts: as many as the setting that asks for the most. */
static int round_ranks(const exp_long_run_t *r, const exp_config_t *settings, int nsettings)
{
    int ranks = 0;
    for (int s = 1; s < nsettings; s++) {
        int n = settings[s].noise_ranks > 0 ? settings[s].noise_ranks : r->noise_cores;
        ranks = n > ranks ? n : ranks;
    }
    return ranks < MAX_NOISE ? ranks : MAX_NOISE;
}

static int start_round_noise(round_t *rd, const exp_config_t *settings, int nsettings, int ranks, int round_no)
{
    exp_long_run_t *r = rd->run;
    int rc = 0;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/blocks", r->o->out_abs);
    mkdir(dir, 0755);
    for (int k = 0; k < ranks; k++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s-round%d-rank%d.yaml", dir, r->jobs.trainer, round_no, k);
        if ((rc = write_pattern(rd, settings, nsettings, k, path)) != 0)
            return rc;
        json_t *run = exp_start_run(r->co, r->jobs.noise, k, pattern_argv(r->o, path), &rc);
        if (!run)
            return rc;
        rd->ids[rd->nruns] = json_integer_value(json_object_get(run, WIRE_R_ID));
        json_decref(run);
        if (!(run = exp_get_run(r->co, rd->ids[rd->nruns], r->jobs.noise, &rc)))
            return rc ? rc : EXIT_FAIL;
        const char *out = json_string_value(json_object_get(run, WIRE_R_STDOUT));
        snprintf(rd->outs[rd->nruns++].path, sizeof rd->outs[0].path, "%s", out ? out : "");
        json_decref(run);
    }
    return 0;
}

/* Whether every noise run has ended; a run that failed is said, with its output, in *rc. */
static bool noise_ended(round_t *rd, int *rc)
{
    int ended = 0;
    for (int k = 0; k < rd->nruns && *rc == 0; k++) {
        json_t *run = exp_get_run(rd->run->co, rd->ids[k], rd->run->jobs.noise, rc);
        if (!run)
            break;
        json_t *status = json_object_get(run, WIRE_R_EXIT_STATUS);
        if (strcmp(json_string_value(json_object_get(run, WIRE_R_STATE)), "running") != 0) {
            ended++;
            if (!json_is_integer(status) || json_integer_value(status) != 0) {
                fprintf(stderr,
                        "\ncosched experiment: noise rank %d ended before its blocks did (%s); its output: %s "
                        "and its .err beside it\n",
                        k, json_string_value(json_object_get(run, WIRE_R_STATE)), rd->outs[k].path);
                *rc = EXIT_FAIL;
            }
        }
        json_decref(run);
    }
    return ended == rd->nruns;
}

typedef bool (*enough_fn)(const exp_long_run_t *r, const exp_block_t *blocks, int n, void *arg);

/* Play one round of `pairs` pairs of each setting in `which` (indices into settings) beside r's
 * trainer, until its blocks are done, enough() says so, or the deadline. Blocks go onto blocks[*n].
 * 0, or an exit status after saying why. */
static int play_round(exp_long_run_t *r, const exp_config_t *settings, int nsettings, const int *which, int nwhich,
                      int pairs, double deadline, exp_block_t *blocks, int *n, enough_fn enough, void *arg)
{
    static int round_no;
    int first_pair = *n > 0 ? blocks[*n - 1].pair + 1 : 0;
    if (*n + 2 * nwhich * pairs > MAX_BLOCKS)
        pairs = (MAX_BLOCKS - *n) / (2 * nwhich);
    if (pairs < 1)
        return 0;
    round_t rd = {.run = r};
    exp_block_t *played = blocks + *n;
    int nplayed = exp_blocks_plan(nwhich, pairs, first_pair, r->o->seed + (unsigned long)round_no, played);
    for (int b = 0; b < nplayed; b++)
        if (played[b].setting > 0)
            played[b].setting = which[played[b].setting - 1];
    int ranks = round_ranks(r, settings, nsettings);
    if (exp_round_init(&rd.played, played, nplayed, ranks, ranks * (strcmp(r->o->noise, "network") == 0 ? 2 : 1)))
        return output_fail("out of memory");
    int rc = start_round_noise(&rd, settings, nsettings, ranks, round_no++);
    bool done = false;
    while (rc == 0 && !done) {
        exp_sleep(0.2);
        if ((rc = exp_long_run_poll(r)) != 0)
            break;
        follow_noise(&rd);
        measure_round(&rd);
        done = noise_ended(&rd, &rc) || exp_now() >= deadline || (enough && enough(r, blocks, *n + nplayed, arg));
    }
    double stopped_at = exp_now();
    json_t *outputs = json_array();
    exp_stop_noise(r->co, &r->jobs, rd.ids, rd.nruns, outputs);
    json_array_extend(r->noise_outputs, outputs);
    json_decref(outputs);
    follow_noise(&rd); /* a stopped step prints its phase line as it ends */
    /* the trainer steps past the last block before it is measured */
    double last_end = exp_round_played_to(&rd.played);
    for (int wait = 0; rc == 0 && wait < 50 && (r->nsteps == 0 || r->steps[r->nsteps - 1].end < last_end); wait++) {
        exp_sleep(0.1);
        rc = exp_long_run_poll(r);
    }
    measure_round(&rd);
    exp_round_close(&rd.played, stopped_at);
    exp_round_free(&rd.played);
    *n += nplayed;
    return rc;
}

/* Table II's stopping rule: the one noise setting's interval within --precision. */
static bool precise_enough(const exp_long_run_t *r, const exp_block_t *blocks, int n, void *arg)
{
    (void)arg;
    int pairs;
    exp_slowdown_t d = exp_blocks_slowdown(blocks, n, 1, EXP_MIN_BLOCK_STEPS, &pairs);
    return pairs >= EXP_PRECISE_PAIRS && exp_half_width(&d) <= r->o->precision;
}

/* The run's blocks into the results of its settings (result_of[s]: the result of setting s). */
static void fill_results(const exp_long_run_t *r, const exp_block_t *blocks, int n, int nsettings, const int *result_of,
                         exp_result_t *results)
{
    for (int s = 0; s < nsettings; s++) {
        exp_result_t *res = &results[result_of[s]];
        res->measured = true;
        res->method = exp_estimator_pairs_method(exp_estimator());
        res->block_seconds = r->block_s;
        res->block_steps = r->block_steps;
        res->host_switches = r->dwell.switches;
        res->host_dwell_s = r->dwell.dwell_s;
        snprintf(res->placement, sizeof res->placement, "%s", r->placement);
        if (s > 0)
            res->slowdown = exp_blocks_slowdown(blocks, n, s, EXP_MIN_BLOCK_STEPS, &res->npairs);
        res->nlog_ratios = exp_sweep_log_ratios(blocks, n, s, EXP_MIN_BLOCK_STEPS, res->log_ratios, EXP_MAX_REPS);
        res->nreps = 0;
        for (int b = 0; b < n && res->nreps < EXP_MAX_REPS; b++) {
            if (blocks[b].setting != s || !exp_block_paired(blocks, n, &blocks[b], EXP_MIN_BLOCK_STEPS))
                continue; /* a figure only with its partner, as in the slowdown */
            exp_rep_t *x = &res->reps[res->nreps++];
            *x = r->profile;
            x->seconds = r->o->steps * blocks[b].step_s; /* Table II's figure: --steps steps at the block's pace */
            x->step_median = blocks[b].step_s;
            x->started = blocks[b].start;
            x->noise_mbs = s > 0 ? blocks[b].noise_mbs : -1;
            x->nsteps = blocks[b].nsteps;
            snprintf(x->isolation, sizeof x->isolation, "%s", r->isolation);
        }
    }
}

/* One placement's long run with its settings (settings[0]: no noise), played until precise or the
 * deadline. */
static int run_placement(const client_opts_t *co, exp_options_t *o, const exp_config_t *settings, int nsettings,
                         const int *result_of, exp_result_t *results, double deadline)
{
    exp_long_run_t r;
    exp_block_t *blocks = calloc(MAX_BLOCKS, sizeof *blocks);
    if (!blocks)
        return output_fail("out of memory");
    bool table = o->sweep == EXP_SWEEP_NONE;
    char label[64];
    snprintf(label, sizeof label, "%s (blocks)", table ? settings[0].name : "sweep");
    int n = 0, which[EXP_MAX_CONFIGS];
    const exp_config_t *noisy = &settings[1]; /* registers the noise job */
    int rc = exp_long_run_start(&r, co, o, noisy, label);
    if (rc == 0)
        fprintf(stderr,
                "%s: step %.1f ms, blocks of %.2f s (the steps that begin in the first %.2f s after each change "
                "dropped); the lead-in saw %d switches of the host's speed in %.1f s\n",
                label, 1e3 * r.step_time, r.block_s, r.drop, r.dwell.switches, r.dwell.seconds);
    if (rc == 0 && table) {
        which[0] = 1;
        int pairs = (int)((deadline - exp_now()) / (2 * r.block_s)); /* one round for the time there is */
        rc = play_round(&r, settings, nsettings, which, 1, pairs > MIN_PAIRS ? pairs : MIN_PAIRS, deadline, blocks, &n,
                        precise_enough, NULL);
    } else if (rc == 0) { /* the sweep: a bisection on the curve over every setting's pairs */
        /* in shorter blocks a round as long or a little longer (its noise's start is paid once), up to
         * the pairs that prove a setting: the lowest can then be proven within from the first round */
        int nwhich, round_pairs = SWEEP_PAIRS;
        if (r.block_steps > 0 && r.block_steps < EXP_BLOCK_STEADY_STEPS)
            round_pairs = (int)fmin(EXP_CURVE_PROOF_PAIRS,
                                    ceil((double)SWEEP_PAIRS * EXP_BLOCK_STEADY_STEPS / r.block_steps));
        while (rc == 0 && exp_now() + 2 * r.block_s < deadline &&
               (nwhich = exp_sweep_next(o, blocks, n, nsettings, EXP_MIN_BLOCK_STEPS, which)) > 0)
            rc = play_round(&r, settings, nsettings, which, nwhich, round_pairs, deadline, blocks, &n, NULL, NULL);
    }
    rc = exp_long_run_end(&r, rc);
    if (rc == 0)
        fill_results(&r, blocks, n, nsettings, result_of, results);
    exp_long_run_free(&r);
    free(blocks);
    return rc;
}

int exp_run_blocked(const client_opts_t *co, exp_options_t *o, exp_result_t *results, int n)
{
    double start = exp_now(), end = start + o->time_limit;
    int rc = 0;
    if (o->sweep != EXP_SWEEP_NONE) {
        exp_config_t settings[EXP_MAX_CONFIGS];
        int result_of[EXP_MAX_CONFIGS];
        for (int i = 0; i < n; i++) {
            settings[i] = results[i].config;
            result_of[i] = i;
        }
        return run_placement(co, o, settings, n, result_of, results, end);
    }
    /* Table II: a long run per placement, then the guarded one; each gets its part of the time
     * left (the guarded run twice as much: it has a lead-in, a lead-out and the guard to wait for);
     * with --time auto, all of it but AUTO_RESERVE_S per part of those after it: until precise */
    double weight_left = 0;
    for (int i = 0; i < n; i++)
        weight_left += results[i].config.guard ? 2 : results[i].config.noise ? 1 : 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const exp_config_t *c = &results[i].config;
        if (!c->noise)
            continue;
        double weight = c->guard ? 2 : 1;
        double deadline = exp_now() + (end - exp_now()) * weight / weight_left;
        weight_left -= weight;
        if (o->time_auto)
            deadline = fmax(deadline, end - weight_left * AUTO_RESERVE_S);
        if (c->guard) {
            rc = exp_run_guarded(co, o, results, n, i, deadline);
            continue;
        }
        int quiet = -1;
        for (int k = 0; k < n; k++)
            if (!results[k].config.noise && strcmp(results[k].config.policy, c->policy) == 0)
                quiet = k;
        if (quiet < 0)
            return output_fail("%s has no configuration without noise to pair with", c->name);
        exp_config_t settings[2] = {results[quiet].config, *c};
        int result_of[2] = {quiet, i};
        rc = run_placement(co, o, settings, 2, result_of, results, deadline);
    }
    return rc;
}
