/* experiment: `cosched experiment`, the study's Table II measured on this node — placements
 * {exclusive, shared} x {no noise, noise} (x guard), repetitions interleaved, every run started,
 * bound and stopped by coschedd. This header is what the command, the runner and the report share. */
#ifndef COSCHED_EXPERIMENT_H
#define COSCHED_EXPERIMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "experiment_blocks.h"
#include "experiment_curve.h"
#include "experiment_stats.h"
#include "experiment_trace.h"
#include "rpc.h"

#define EXP_MAX_CONFIGS 16
/* --time auto: the ceiling when none is given */
#define EXP_AUTO_CEILING_S 3600
#define EXP_MAX_REPS 1000
/* A blocked sweep proves a setting within budget on this many pairs or more: a t interval from
 * fewer, whose few ratios happened to agree, is narrow too often to prove anything. */
#define EXP_PROVEN_MIN_PAIRS 4

typedef struct exp_config {
    char name[32];      /* "exclusive", "exclusive+noise", "intensity 0.3" ... as tables head them */
    const char *policy; /* the planner policy the jobs are registered with */
    bool noise, guard;
    double intensity; /* the noise's duty cycle, 0..1 (1: always at work) */
    int noise_ranks;  /* noise runs to start; 0: one per core the plan leaves */
} exp_config_t;

typedef enum { EXP_SWEEP_NONE, EXP_SWEEP_INTENSITY, EXP_SWEEP_THREADS } exp_sweep_t;

/* blocks: one long trainer run per placement, the noise changing in short paired blocks (the
 * default); runs: a separate run per repetition, compared by total time (the study's way). */
typedef enum { EXP_DESIGN_BLOCKS, EXP_DESIGN_RUNS } exp_design_t;

typedef struct exp_options {
    exp_design_t design;
    int reps, warmup, steps, batch;
    double time_limit;    /* --time: seconds the blocked design may spend in all (with time_auto: the ceiling) */
    bool time_auto;       /* --time auto[:CEILING]: each placement until --precision, within the ceiling */
    double precision;     /* --precision: stop once every interval's half width is within it */
    double block_seconds; /* --block: a block's length; 0: from the trainer's step time */
    unsigned long seed;   /* --seed: the block order's */
    double time_spent;    /* seconds the runs took (for the report) */
    bool json;            /* --json: summary.json's content on stdout instead of the tables */
    int gpus;             /* --gpus: 1, the trainer's rank on GPU 0; 0 (none), on cores alone; -1: as the node has */
    const char *model;
    const char *noise;       /* memory, io, network, cpu, or FILE.yaml:PATTERN */
    const char *trainer_cmd; /* --trainer: a shell command instead of cosched-train */
    bool guard;
    double budget;
    const char *out_dir;
    const char *topology; /* --dry-run on this hwloc XML instead of the daemon's node */
    bool dry_run;
    exp_sweep_t sweep;
    const char *placement; /* the sweep's policy: exclusive or shared */
    int noise_cores;       /* the cores the sweep's placement leaves for noise (threads sweep) */
    uid_t uid;
    char train_exe[4096], noise_exe[4096], mpirun_exe[4096];
    char out_abs[4096];     /* out_dir made absolute: the daemon's runs do not share our directory */
    const char *trace_path; /* --trace FILE: the whole experiment on one timeline */
    exp_trace_t *trace;     /* what the repetitions added so far (with --trace) */
    char trace_parts[4200]; /* where the trainer's own traces go: out_abs/trace-parts */
} exp_options_t;

/* One repetition of one configuration. */
typedef struct exp_rep {
    double seconds;     /* the trainer's wall time, from its run's start to its end */
    double started;     /* when the trainer's run started (Unix seconds) */
    double noise_mbs;   /* the noise's achieved throughput, MB/s summed over its runs; < 0: none */
    double step_median; /* the daemon's median step time of the trainer; 0: no steps reported */
    double share_compute, share_comm, share_data; /* cosched-train's profile; < 0 when unknown */
    char isolation[16];                           /* what the registered placement achieved */
    int nsteps;                                   /* blocked design: the steps the block (or batch) kept */
} exp_rep_t;

typedef struct exp_result {
    exp_config_t config;
    exp_rep_t reps[EXP_MAX_REPS];
    int nreps;
    char placement[256]; /* "trainer CPUs 0, noise CPUs 1 (isolation l3)" of the first repetition */
    /* The blocked design: reps are blocks (or the guarded run's batches), and the slowdown is
     * measured, not derived from reps' seconds. */
    bool measured;
    exp_slowdown_t slowdown; /* against its baseline, with the interval of the method below */
    const char *method;      /* "paired blocks: t on log ratios" ... */
    int npairs;              /* pairs (or guarded batches) behind it */
    double settle_seconds;   /* guarded: from the noise's start until the guard judged the trainer within
                                budget; < 0: it did not within the run */
    double kept;             /* guarded: the noise's throughput against unguarded noise; < 0: unknown */
    char guard_blind[512];   /* guarded: why the daemon's guard could not judge the trainer ("": it could) */
    double baseline_seconds; /* guarded: the steps of its own run's no-noise lead-in and lead-out, median */
    double block_seconds;    /* blocked: its blocks' (or batches') length; 0: none */
    int block_steps;         /* ... the trainer's steps it was chosen for; 0: --block set it */
    int host_switches;       /* ... the host's speed switches its run's lead-in saw (experiment_dwell.h) */
    double host_dwell_s;     /* ... the lead-in's seconds per state (a lower bound without switches) */
    /* blocked sweep: log(noise block / its quiet partner), one per pair, for the curve */
    double log_ratios[EXP_MAX_REPS];
    int nlog_ratios;
} exp_result_t;

/* "one rank on GPU 0" or "one rank on cores, no GPU" (--gpus none). */
const char *exp_trainer_words(const exp_options_t *o);

/* The configurations the options ask for, in the order repetitions interleave them. */
int exp_configs(const exp_options_t *o, exp_config_t *configs);

/* The sweep's settings: noise off, then intensity 0.1 .. 1.0 or 1 .. noise_cores noise threads
 * (at most EXP_MAX_CONFIGS - 1 of them, evenly spread). */
int exp_sweep_configs(const exp_options_t *o, exp_config_t *configs);

/* The sweep's table: the slowdown per setting with its interval, the noise's throughput, and the
 * largest setting that keeps the trainer within o->budget. */
void exp_sweep_print(FILE *f, const exp_options_t *o, const exp_result_t *results, int n);

/* The slowdown of setting i against results[0] (no noise): as the blocked design measured it
 * against each block's partner, or, in the run design, from the run times. */
exp_slowdown_t exp_sweep_slowdown(const exp_result_t *results, int i);

/* summary.json's "sweep": the curve with its band per setting, the answer and the rule. */
json_t *exp_sweep_json(const exp_options_t *o, const exp_result_t *results, int n);

/* The sweep's curve over every setting's pairs (experiment_curve.h): blocked, the pairs' log
 * ratios; with --design runs, each run's log ratio to the median no-noise run. */
void exp_sweep_curve(const exp_result_t *results, int n, exp_curve_t *c);

/* The log ratios of setting's pairs among blocks[0 .. n) (both blocks min_steps steps or more),
 * into out (at most max); returns how many. */
int exp_sweep_log_ratios(const exp_block_t *blocks, int n, int setting, int min_steps, double *out, int max);

/* The blocked sweep's next round: the settings (1 .. nsettings - 1) to play, into which, from
 * the curve over the pairs so far (exp_curve_next); 0 when the answer is decided and precise. */
int exp_sweep_next(const exp_options_t *o, const exp_block_t *blocks, int n, int nsettings, int min_steps, int *which);

/* Index of the largest setting whose slowdown interval's upper end is within the budget (proven
 * at 95 %; blocked: from EXP_PROVEN_MIN_PAIRS pairs or more); 0 (no noise) when none is. */
int exp_sweep_safe(const exp_options_t *o, const exp_result_t *results, int n);

/* The sweep's curve: slowdown per setting with its interval and the budget line, as
 * sweep.png / sweep.svg (gnuplot). 0 when drawn; -1 after saying why not. */
int exp_plot_sweep(const exp_options_t *o, const exp_result_t *results, int n);

/* From here on SIGINT and SIGTERM end the experiment cleanly: the repetition under way stops
 * its runs and releases its jobs; exp_interrupted() says whether that happened. */
void exp_catch_signals(void);
bool exp_interrupted(void);

/* Run one repetition of c through coschedd; *baseline_step: the trainer's solo step time for a
 * guarded configuration (0 when unknown); label names it on the trace. 0 ok, else an exit
 * status after printing why. */
int exp_run_rep(const client_opts_t *co, const exp_options_t *o, const exp_config_t *c, double baseline_step,
                const char *label, exp_rep_t *rep, char *placement, size_t placement_len);

/* The blocked design: every configuration of results through one long trainer run per placement
 * (experiment_blocked.c) and, for the guarded one, a run with continuous noise
 * (experiment_guarded.c); fills each result's reps with its blocks and its measured slowdown.
 * 0 ok, else an exit status after printing why. */
int exp_run_blocked(const client_opts_t *co, exp_options_t *o, exp_result_t *results, int n);

/* The guarded configuration results[guarded] in one run with continuous noise, done by deadline
 * (Unix seconds); its kept throughput is against the same placement's unguarded noise in results. */
int exp_run_guarded(const client_opts_t *co, exp_options_t *o, exp_result_t *results, int n, int guarded,
                    double deadline);

/* "trainer CPUs 0, noise CPUs 1, isolation l3" from a plan (cosched plan --json's shape). */
void exp_describe_plan(json_t *plan, bool noise, char *out, size_t len);

/* Print Table II and the slowdowns on stdout and write table.txt, runs.csv and summary.json
 * into o->out_dir. 0 ok, else EXIT_FAIL after printing why. */
int exp_report(const exp_options_t *o, const exp_result_t *results, int nresults);

/* runs.dat, plot.gp and, drawn by gnuplot, runs.png and runs.svg in o->out_dir: the box plot of
 * the run times per configuration. 0 when drawn; -1 after saying why not (the figures stand). */
int exp_plot(const exp_options_t *o, const exp_result_t *results, int n);

#endif
