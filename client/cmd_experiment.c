/* cmd_experiment: `cosched experiment` — the study's Table II for this node in one command: the
 * options, the configurations, the interleaved repetitions and, with --dry-run, the placements
 * each configuration would get on this node or on an hwloc XML file. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_parse.h"
#include "client.h"
#include "cpulist.h"
#include "experiment.h"
#include "experiment_hook.h"
#include "experiment_jobs.h"
#include "experiment_stats.h"
#include "json_out.h"
#include "plan.h"
#include "topo.h"
#include "wire.h"

void cmd_experiment_help(FILE *out)
{
    fputs("Measures what co-tenant noise costs a training job on this node, as Rojas et al. did on JUWELS\n"
          "Booster (their Table II): the trainer alone and beside noise, with the exclusive and the shared\n"
          "placement. Every run goes through coschedd: jobs registered, runs started, bound and stopped by\n"
          "it (root or an operator of the daemon).\n"
          "The blocked design (the default) runs one long cosched-train per placement while the noise\n"
          "changes in short blocks, as short as the noise's transient after a change (memory and cpu 0.01 s,\n"
          "network 0.05 s, io 0.8 s) and four whole steps of the trainer allow, at least 0.2 s (the sweep:\n"
          "0.5 s), whatever --time is (or --block; the noise plays them itself from a pattern file, so every\n"
          "change is timed by it), each noise block paired with a no-noise block right before or after it,\n"
          "the order drawn at random (--seed). A block's figure is the step time of the steps wholly inside\n"
          "it that began after the transient (their median from 9 steps, their mean below); the slowdown is\n"
          "the Hodges-Lehmann estimate of the pairs' log ratios, its 95 % interval the Wilcoxon signed-rank\n"
          "interval on them (robust to a pair that straddles a switch of the host's speed; widened, from\n"
          "100 pairs, for a noise whose effect is skewed). A placement stops once its interval is within\n"
          "+-FRACTION (--precision, default 0.02) on 20 pairs or more, and everything ends within --time\n"
          "(default 120 s; time wins, the precision reached is said, and so is how long the target would\n"
          "take at this trainer's step time). --time auto[:CEILING] runs each placement until it is precise,\n"
          "everything within CEILING seconds (default 3600).\n"
          "Table II's run times are the blocks' step times x --steps, labelled as such.\n"
          "--trainer CMD (run with /bin/sh -c, bound to the trainer's rank) puts any unmodified PyTorch program\n"
          "in cosched-train's place: cosched's step hook (docs/autoreport.md) goes first on its PYTHONPATH and\n"
          "writes each optimizer step to a step log in --out, which the blocks are cut from; a command with no\n"
          "step in its first 60 s (or --time, at least 20 s) is stopped and said, as is one that exits.\n"
          "--guard adds shared + noise + guard, measured as the guard works: one run, a no-noise lead-in,\n"
          "the noise without a break under the guard (budget --budget, default 0.05), a no-noise lead-out;\n"
          "the steps once the guard has settled (its share from then on within a factor of two), in batches\n"
          "of a block, against the lead-in's and lead-out's batches (Hodges-Lehmann shift of the logs with\n"
          "the Wilcoxon rank-sum interval), with the time it took to settle and the noise's throughput kept\n"
          "against the unguarded noise's.\n"
          "--design runs is the study's way: a run per repetition, --reps times each configuration,\n"
          "interleaved (A B C D A B C D ...) after --warmup discarded repetitions, compared by total time\n"
          "(ratio of geometric means, Welch's t on log times); it takes any --trainer CMD, timed by its\n"
          "run, and --noise FILE.yaml:PATTERN.\n"
          "The noise runs on every core the placement leaves for it (network: a pair of MPI ranks per core,\n"
          "ping-pong over TCP on loopback). Prints the table, each noisy configuration's slowdown with its\n"
          "interval, the noise's throughput and the trainer's compute / communication / data shares; writes\n"
          "table.txt, runs.csv and summary.json into --out (default ./cosched-experiment), with a box plot\n"
          "(runs.png, runs.svg) drawn by gnuplot; --json prints summary.json's content instead of the tables.\n"
          "--sweep intensity runs the noise at duty cycles 0.1 .. 1.0, --sweep threads at 1 .. N noise\n"
          "threads (N: the cores the placement leaves), on --placement (default shared): one slowdown curve\n"
          "over every setting's pairs, non-decreasing (isotonic, with a 95 % bootstrap band; sweep.png,\n"
          "sweep.svg), and the largest setting whose band's upper end is within --budget, a bracket of\n"
          "settings where it is not yet decided, or 'none proven'. Blocked, it plays the lowest, middle and\n"
          "highest settings, then bisects where the band crosses the budget.\n"
          "--dry-run prints the placements and settings only (on --topology FILE if given). --trace FILE\n"
          "writes the whole experiment as one Chrome trace (Perfetto, chrome://tracing): a slice per run,\n"
          "cosched-train's phases per rank, each noise worker's phases and bandwidth, and the guard's share\n"
          "changes (the trainer's own traces are kept in --out/trace-parts).\n"
          "The trainer is one rank on GPU 0's domain or, with --gpus none (the default on a node without\n"
          "GPUs), one rank on the cores of the first NUMA domain with free cores (a CPU training).\n"
          "Defaults: --time 120 --precision 0.02 --steps 40 --model resnet8 --batch 32 --noise memory;\n"
          "--design runs: --reps 3 --warmup 1.\n",
          out);
}

int exp_configs(const exp_options_t *o, exp_config_t *configs)
{
    const exp_config_t all[] = {
        {"exclusive", "exclusive", false, false, 1, 0},     {"exclusive+noise", "exclusive", true, false, 1, 0},
        {"shared", "shared", false, false, 1, 0},           {"shared+noise", "shared", true, false, 1, 0},
        {"shared+noise+guard", "shared", true, true, 1, 0},
    };
    if (o->sweep != EXP_SWEEP_NONE)
        return exp_sweep_configs(o, configs);
    int n = o->guard ? 5 : 4;
    memcpy(configs, all, (size_t)n * sizeof *configs);
    return n;
}

/* PROGRAM next to this cosched (an install), in the build tree's SUBDIR beside it, or on PATH. */
static int find_program(const char *program, const char *subdir, char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        *slash = '\0';
        if (snprintf(out, len, "%s/%s", self, program) < (int)len && access(out, X_OK) == 0)
            return 0;
        if (snprintf(out, len, "%s/../%s/%s", self, subdir, program) < (int)len && access(out, X_OK) == 0)
            return 0;
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t dirlen = strcspn(p, ":");
        snprintf(out, len, "%.*s/%s", (int)dirlen, p, program);
        if (dirlen > 0 && access(out, X_OK) == 0)
            return 0;
        p += dirlen + (p[dirlen] == ':');
    }
    return output_fail("cannot find %s next to cosched, in ../%s, or on PATH", program, subdir);
}

static int check_noise(const char *noise)
{
    if (!strcmp(noise, "memory") || !strcmp(noise, "io") || !strcmp(noise, "cpu") || !strcmp(noise, "network"))
        return 0;
    const char *colon = strrchr(noise, ':');
    if (!colon || colon == noise || !colon[1])
        return output_usage_error("experiment", "--noise '%s' is not memory, io, network, cpu or FILE.yaml:PATTERN",
                                  noise);
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%.*s", (int)(colon - noise), noise);
    if (access(file, R_OK) != 0)
        return output_fail("cannot read the noise pattern file %s", file);
    return 0;
}

/* The planner's plan for one policy with the trainer on GPU 0 (--gpus none: one rank on cores),
 * here (this node or the XML file). */
static plan_t *plan_here(const topo_t *t, const exp_options_t *o, const char *policy, char *err, size_t errlen)
{
    hwloc_bitmap_t gpu0 = hwloc_bitmap_alloc();
    hwloc_bitmap_set(gpu0, 0);
    plan_request_t req;
    plan_request_init(&req);
    req.gpus = gpu0;
    if (o->gpus == 0) {
        req.gpus = NULL;
        req.cpu_ranks = 1;
    }
    plan_policy_parse(policy, &req.policy);
    plan_t *plan = plan_compute(t, &req, err, errlen);
    hwloc_bitmap_free(gpu0);
    return plan;
}

static void print_placement(const char *name, const plan_t *plan, bool noise, bool notes)
{
    char text[1024];
    json_t *j = plan_to_json(plan);
    exp_describe_plan(j, noise, text, sizeof text);
    json_decref(j);
    printf("  %-19s %s\n", name, text);
    if (!notes)
        return;
    printf("  %-19s (%s)\n", "", plan_isolation_description(plan->isolation));
    for (int w = 0; w < plan->nwarnings; w++)
        printf("  %-19s note: %s\n", "", plan->warnings[w]);
}

/* One configuration's placement for --dry-run --json: the plan as `cosched plan --json` shows it. */
static json_t *placement_json(const char *name, const plan_t *plan, bool noise)
{
    char text[1024];
    json_t *j = plan_to_json(plan);
    exp_describe_plan(j, noise, text, sizeof text);
    return json_pack("{s:s, s:b, s:s, s:o}", "name", name, "noise", noise, "placement", text, "plan", j);
}

/* --dry-run: each configuration's placement (a sweep: its one placement and its settings), as
 * text or, with --json, one document. */
static int dry_run(exp_options_t *o)
{
    char err[512];
    topo_t *t = topo_load(topo_source_from_env(o->topology), err, sizeof err);
    if (!t)
        return output_fail("%s", err);
    if (o->gpus < 0)
        o->gpus = t->ngpus > 0;
    int rc = EXIT_OK;
    json_t *doc = json_pack("{s:s, s:s, s:s, s:[]}", "topology", t->source, "trainer", exp_trainer_words(o), "design",
                            o->design == EXP_DESIGN_BLOCKS ? "blocks" : "runs", "configurations");
    json_t *list = json_object_get(doc, "configurations");
    if (!o->json)
        printf("Placements on %s (trainer: %s):\n", t->source, exp_trainer_words(o));
    exp_config_t configs[EXP_MAX_CONFIGS];
    if (o->sweep != EXP_SWEEP_NONE) {
        plan_t *plan = plan_here(t, o, o->placement, err, sizeof err);
        if (!plan) {
            rc = output_fail("cannot plan on %s: %s", t->source, err);
            goto out;
        }
        if (!o->json)
            print_placement(o->placement, plan, true, true);
        json_array_append_new(list, placement_json(o->placement, plan, true));
        o->noise_cores = plan->nnoise;
        plan_free(plan);
        int n = exp_configs(o, configs);
        json_t *settings = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(settings, json_string(configs[i].name));
        json_object_set_new(doc, "settings", settings);
        if (!o->json) {
            printf("Settings%s:",
                   o->design == EXP_DESIGN_BLOCKS ? " (in blocks, each paired with no noise)" : ", interleaved");
            for (int i = 0; i < n; i++)
                printf("%s %s", i ? "," : "", configs[i].name);
            printf("\n");
        }
        goto out;
    }
    int n = exp_configs(o, configs);
    for (int i = 0; i < n && rc == EXIT_OK; i++) {
        plan_t *plan = plan_here(t, o, configs[i].policy, err, sizeof err);
        if (!plan) {
            rc = output_fail("%s: cannot plan on %s: %s", configs[i].name, t->source, err);
            break;
        }
        /* the noise's twin prints the same plan's notes once */
        if (!o->json)
            print_placement(configs[i].name, plan, configs[i].noise, !configs[i].noise);
        json_array_append_new(list, placement_json(configs[i].name, plan, configs[i].noise));
        plan_free(plan);
    }
out:
    if (rc == EXIT_OK && o->json)
        rc = output_print_json(json_incref(doc));
    json_decref(doc);
    topo_free(t);
    return rc;
}

/* The cores the daemon's plan for the sweep's placement leaves for noise. */
static int daemon_noise_cores(const client_opts_t *co, exp_options_t *o)
{
    int rc;
    json_t *plan = rpc_call(co, WIRE_PLAN, exp_trainer_place(o, json_pack("{s:s}", WIRE_P_POLICY, o->placement)), &rc);
    if (!plan)
        return rc;
    o->noise_cores = (int)json_array_size(json_object_get(plan, WIRE_R_NOISE));
    json_decref(plan);
    return o->noise_cores > 0 ? 0 : output_fail("the %s placement leaves no core for noise on this node", o->placement);
}

/* The median step time of a placement's no-noise repetitions so far: the guarded configuration's
 * baseline (its trainer never runs alone). */
static double solo_step(const exp_result_t *results, int nresults, const char *policy)
{
    double steps[EXP_MAX_REPS];
    int n = 0;
    for (int i = 0; i < nresults; i++)
        if (!results[i].config.noise && strcmp(results[i].config.policy, policy) == 0)
            for (int r = 0; r < results[i].nreps && n < EXP_MAX_REPS; r++)
                if (results[i].reps[r].step_median > 0)
                    steps[n++] = results[i].reps[r].step_median;
    return n > 0 ? exp_summarize(steps, n).median : 0;
}

/* Without --gpus, the trainer goes on GPU 0 where the daemon's node has one, else on cores. */
static int resolve_gpus(const client_opts_t *co, exp_options_t *o)
{
    if (o->gpus >= 0)
        return 0;
    int rc;
    json_t *topology = rpc_call(co, WIRE_TOPOLOGY, json_object(), &rc);
    if (!topology)
        return rc;
    o->gpus = json_array_size(json_object_get(topology, "gpus")) > 0;
    json_decref(topology);
    return 0;
}

/* The guarded configuration needs the daemon's guard; say so before any run starts. */
static int check_guard(const client_opts_t *co)
{
    int rc;
    json_t *s = rpc_call(co, WIRE_STATUS, json_object(), &rc);
    if (!s)
        return rc;
    int enabled = json_is_true(json_object_get(json_object_get(s, WIRE_R_GUARD), WIRE_R_ENABLED));
    json_decref(s);
    if (!enabled)
        return output_fail("--guard: coschedd's slowdown guard is off (guard.enabled in coschedd.yaml)");
    return 0;
}

static int run_all(const client_opts_t *co, const exp_options_t *o, exp_result_t *results, int n)
{
    int rc;
    exp_rep_t scratch;
    char placement[256];
    char label[64];
    for (int w = 0; w < o->warmup; w++) {
        fprintf(stderr, "warm-up %d/%d (%s, discarded)\n", w + 1, o->warmup, results[0].config.name);
        snprintf(label, sizeof label, "%s (warm-up %d)", results[0].config.name, w + 1);
        if ((rc = exp_run_rep(co, o, &results[0].config, 0, label, &scratch, placement, sizeof placement)) != 0)
            return rc;
    }
    for (int rep = 0; rep < o->reps; rep++)
        for (int i = 0; i < n && !exp_interrupted(); i++) {
            exp_result_t *r = &results[i];
            double baseline = r->config.guard ? solo_step(results, n, r->config.policy) : 0;
            fprintf(stderr, "repetition %d/%d: %s ...", rep + 1, o->reps, r->config.name);
            snprintf(label, sizeof label, "%s #%d", r->config.name, rep + 1);
            if ((rc = exp_run_rep(co, o, &r->config, baseline, label, &r->reps[r->nreps], r->placement,
                                  sizeof r->placement)) != 0)
                return rc;
            fprintf(stderr, " %.2f s\n", r->reps[r->nreps++].seconds);
        }
    /* a signal between two repetitions: the table would be uneven, so there is none */
    return exp_interrupted() ? output_fail("interrupted between repetitions; no table") : 0;
}

/* A whole number in the option's range (cli_table.c). */
static int parse_count(cli_option_id_t option, const char *value, int *out)
{
    const cli_option_t *spec = &cli_options[option];
    long n;
    if (cli_count(option, value, &n) < 0)
        return output_usage_error("experiment", "--%s needs a whole number from %ld to %ld, not '%s'", spec->name,
                                  (long)spec->min, (long)spec->max, value);
    *out = (int)n;
    return 0;
}

/* A number in the option's range (cli_table.c). */
static int parse_fraction(cli_option_id_t option, const char *value, double *out)
{
    const cli_option_t *spec = &cli_options[option];
    if (cli_number(option, value, out) < 0)
        return output_usage_error("experiment", "--%s needs a number from %g to %g, not '%s'", spec->name, spec->min,
                                  spec->max, value);
    return 0;
}

typedef struct {
    exp_options_t *o;
    bool runs_only; /* --reps or --warmup given */
} exp_args_t;

/* --time SECONDS, or auto[:CEILING]: each placement until its interval is within --precision,
 * everything within the ceiling (EXP_AUTO_CEILING_S when none is given). */
static int parse_time(exp_options_t *o, const char *value)
{
    if (strncmp(value, "auto", 4) != 0) {
        o->time_auto = false;
        return parse_fraction(CLI_O_TIME, value, &o->time_limit);
    }
    o->time_auto = true;
    o->time_limit = EXP_AUTO_CEILING_S;
    if (value[4] == '\0')
        return 0;
    if (value[4] != ':')
        return output_usage_error("experiment", "--time is SECONDS or auto[:CEILING], not '%s'", value);
    return parse_fraction(CLI_O_TIME, value + 5, &o->time_limit);
}

/* --design, --gpus, --sweep, --placement: one of their words. */
static int set_word_option(exp_options_t *o, cli_option_id_t option, const char *value)
{
    switch (option) {
    case CLI_O_DESIGN:
        if (strcmp(value, "blocks") == 0)
            o->design = EXP_DESIGN_BLOCKS;
        else if (strcmp(value, "runs") == 0)
            o->design = EXP_DESIGN_RUNS;
        else
            return output_usage_error("experiment", "--design is blocks or runs, not '%s'", value);
        return 0;
    case CLI_O_GPUS:
        if (strcmp(value, "0") == 0)
            o->gpus = 1;
        else if (strcmp(value, "none") == 0)
            o->gpus = 0;
        else
            return output_usage_error("experiment", "--gpus is 0 (the trainer on GPU 0) or none (on cores), not '%s'",
                                      value);
        return 0;
    case CLI_O_SWEEP:
        if (strcmp(value, "intensity") == 0)
            o->sweep = EXP_SWEEP_INTENSITY;
        else if (strcmp(value, "threads") == 0)
            o->sweep = EXP_SWEEP_THREADS;
        else
            return output_usage_error("experiment", "--sweep is intensity or threads, not '%s'", value);
        return 0;
    default:
        o->placement = value;
        if (strcmp(value, "exclusive") != 0 && strcmp(value, "shared") != 0)
            return output_usage_error("experiment", "--placement is exclusive or shared, not '%s'", value);
        return 0;
    }
}

/* The options with a number: counts and seconds in their ranges. */
static int set_number_option(exp_args_t *a, cli_option_id_t option, const char *value)
{
    exp_options_t *o = a->o;
    int n = 0, rc;
    switch (option) {
    case CLI_O_REPS: a->runs_only = true; return parse_count(option, value, &o->reps);
    case CLI_O_WARMUP: a->runs_only = true; return parse_count(option, value, &o->warmup);
    case CLI_O_TIME: return parse_time(o, value);
    case CLI_O_PRECISION: return parse_fraction(option, value, &o->precision);
    case CLI_O_BLOCK: return parse_fraction(option, value, &o->block_seconds);
    case CLI_O_STEPS: return parse_count(option, value, &o->steps);
    case CLI_O_BATCH: return parse_count(option, value, &o->batch);
    case CLI_O_SEED:
        if ((rc = parse_count(option, value, &n)) == 0)
            o->seed = (unsigned long)n;
        return rc;
    case CLI_O_UID:
        if ((rc = parse_count(option, value, &n)) == 0)
            o->uid = (uid_t)n;
        return rc;
    default: return cli_parse_budget("experiment", value, &o->budget);
    }
}

static int set_experiment_option(void *ctx, cli_option_id_t option, const char *value)
{
    exp_args_t *a = ctx;
    exp_options_t *o = a->o;
    switch (option) {
    case CLI_O_MODEL: o->model = value; break;
    case CLI_O_NOISE: o->noise = value; break;
    case CLI_O_TRAINER: o->trainer_cmd = value; break;
    case CLI_O_GUARD: o->guard = true; break;
    case CLI_O_OUT: o->out_dir = value; break;
    case CLI_O_TRACE: o->trace_path = value; break;
    case CLI_O_TOPOLOGY: o->topology = value; break;
    case CLI_O_DRY_RUN: o->dry_run = true; break;
    case CLI_O_DESIGN:
    case CLI_O_GPUS:
    case CLI_O_SWEEP:
    case CLI_O_PLACEMENT: return set_word_option(o, option, value);
    default: return set_number_option(a, option, value);
    }
    return 0;
}

/* The options that do not go together, then the noise named. 0, -1 after --help, else the
 * exit status of the usage error. */
static int parse_options(int argc, char **argv, exp_options_t *o)
{
    exp_args_t a = {o, false};
    int rest, rc = cli_parse("experiment", argc, argv, set_experiment_option, &a, &rest);
    if (rc == EXIT_OK)
        return -1;
    rc = rc < 0 ? 0 : rc;
    bool runs_only = a.runs_only;
    if (rc == 0 && rest < argc)
        rc = output_usage_error("experiment", "unexpected argument '%s'", argv[rest]);
    if (rc == 0 && o->topology && !o->dry_run)
        rc = output_usage_error("experiment", "--topology needs --dry-run: runs go to the daemon's node");
    if (rc == 0 && o->trace_path && o->dry_run)
        rc = output_usage_error("experiment", "--trace needs runs to trace: not with --dry-run");
    if (rc == 0 && o->guard && o->sweep != EXP_SWEEP_NONE)
        rc = output_usage_error("experiment",
                                "--guard and --sweep do not go together: the sweep sets the noise itself");
    if (rc == 0 && o->design == EXP_DESIGN_BLOCKS && o->guard && o->time_limit < 30)
        rc = output_usage_error("experiment",
                                "--guard needs --time 30 or more: its run has a lead-in, the noise under the "
                                "guard and a lead-out");
    if (rc == 0 && o->time_auto && o->design != EXP_DESIGN_BLOCKS)
        rc = output_usage_error("experiment", "--time auto is for the blocked design: --design runs plays --reps runs");
    if (rc == 0 && o->design == EXP_DESIGN_BLOCKS && runs_only)
        rc = output_usage_error("experiment",
                                "--reps and --warmup are for --design runs; the blocked design plays blocks "
                                "until --precision or --time");
    if (rc == 0 && o->design == EXP_DESIGN_BLOCKS && strchr(o->noise, ':'))
        rc = output_usage_error("experiment", "--noise FILE.yaml:PATTERN plays its own pattern: use --design runs (the "
                                              "blocked design makes its own)");
    return rc != 0 ? rc : check_noise(o->noise);
}

/* --trace: the trainer's own traces go into out/trace-parts, where the runs' uid may write. */
static int start_trace(exp_options_t *o)
{
    FILE *f = fopen(o->trace_path, "w"); /* an unwritable --trace is said now, not after the runs */
    if (!f)
        return output_fail("cannot write --trace %s: %m", o->trace_path);
    fclose(f);
    snprintf(o->trace_parts, sizeof o->trace_parts, "%s/trace-parts", o->out_abs);
    if (mkdir(o->trace_parts, 0755) != 0 && errno != EEXIST)
        return output_fail("cannot create %s for --trace: %m", o->trace_parts);
    if (geteuid() == 0 && o->uid != 0 && chown(o->trace_parts, o->uid, (gid_t)-1) != 0)
        return output_fail("cannot give %s to uid %u for --trace: %m", o->trace_parts, (unsigned)o->uid);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    o->trace = exp_trace_new((double)now.tv_sec + now.tv_nsec * 1e-9);
    return o->trace ? 0 : output_fail("out of memory");
}

/* Written even after a failed or interrupted run: the timeline up to there says what happened. */
static int finish_trace(exp_options_t *o)
{
    char err[4352];
    int rc = exp_trace_write(o->trace, o->trace_path, err, sizeof err);
    exp_trace_free(o->trace);
    o->trace = NULL;
    if (rc != 0)
        return output_fail("%s", err);
    fprintf(o->json ? stderr : stdout, "Trace: %s (open it in https://ui.perfetto.dev or chrome://tracing)\n",
            o->trace_path);
    return 0;
}

int cmd_experiment(const client_opts_t *co, int argc, char **argv)
{
    exp_options_t o = {.reps = 3,
                       .warmup = 1,
                       .steps = 40,
                       .batch = 32,
                       .model = "resnet8",
                       .noise = "memory",
                       .budget = 0.05,
                       .out_dir = "cosched-experiment",
                       .placement = "shared",
                       .uid = getuid(),
                       .time_limit = 120,
                       .precision = 0.02,
                       .json = co->json,
                       .gpus = -1,
                       .seed = (unsigned long)time(NULL) % 100000};
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? EXIT_OK : rc;
    if (o.dry_run)
        return dry_run(&o);
    char hook_dir[PATH_MAX]; /* the blocked design takes a trainer command's steps from the hook: is it here? */
    if ((!o.trainer_cmd && find_program("cosched-train", "trainer", o.train_exe, sizeof o.train_exe) != 0) ||
        (o.trainer_cmd && o.design == EXP_DESIGN_BLOCKS && exp_hook_dir(hook_dir, sizeof hook_dir) != 0) ||
        find_program("cosched-noise", "noise", o.noise_exe, sizeof o.noise_exe) != 0 ||
        (!strcmp(o.noise, "network") && find_program("mpirun", "noise", o.mpirun_exe, sizeof o.mpirun_exe) != 0))
        return EXIT_FAIL;
    if (mkdir(o.out_dir, 0755) != 0 && errno != EEXIST)
        return output_fail("cannot create --out %s: %m", o.out_dir);
    if (!realpath(o.out_dir, o.out_abs))
        return output_fail("cannot resolve --out %s: %m", o.out_dir);
    if (o.trace_path && (rc = start_trace(&o)) != 0) /* an unwritable --trace is said before the daemon is asked */
        return rc;
    exp_result_t *results = calloc(EXP_MAX_CONFIGS, sizeof *results);
    if (!results)
        rc = output_fail("out of memory");
    if (rc != 0 || (rc = resolve_gpus(co, &o)) != 0 || (o.guard && (rc = check_guard(co)) != 0) ||
        (o.sweep != EXP_SWEEP_NONE && (rc = daemon_noise_cores(co, &o)) != 0)) {
        exp_trace_free(o.trace);
        free(results);
        return rc;
    }
    exp_config_t configs[EXP_MAX_CONFIGS];
    int n = exp_configs(&o, configs);
    for (int i = 0; i < n; i++)
        results[i].config = configs[i];
    exp_catch_signals();
    struct timespec started, ended;
    clock_gettime(CLOCK_MONOTONIC, &started);
    rc = o.design == EXP_DESIGN_BLOCKS ? exp_run_blocked(co, &o, results, n) : run_all(co, &o, results, n);
    clock_gettime(CLOCK_MONOTONIC, &ended);
    o.time_spent = (double)(ended.tv_sec - started.tv_sec) + (ended.tv_nsec - started.tv_nsec) * 1e-9;
    if (rc == 0)
        rc = exp_report(&o, results, n);
    if (o.trace) {
        int trace_rc = finish_trace(&o);
        rc = rc != 0 ? rc : trace_rc;
    }
    free(results);
    return rc;
}
