/* experiment_report: what `cosched experiment` measured — the study's Table II for this node,
 * slowdowns with their intervals, noise throughput and the trainer's profile — as text (stdout
 * and table.txt), one CSV row per repetition (runs.csv) and one JSON document (summary.json). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "experiment.h"
#include "experiment_block_size.h"
#include "experiment_blocks.h"
#include "experiment_stats.h"

/* Blocks make far more rows than runs did: the table shows the first of them, runs.csv all. */
enum { TABLE_ROWS_SHOWN = 12 };

/* The configuration a noisy one is compared with: same placement, no noise. */
static const exp_result_t *baseline_of(const exp_result_t *results, int n, const exp_result_t *r)
{
    for (int i = 0; i < n; i++)
        if (!results[i].config.noise && strcmp(results[i].config.policy, r->config.policy) == 0)
            return &results[i];
    return NULL;
}

static void seconds_of(const exp_result_t *r, double *out)
{
    for (int i = 0; i < r->nreps; i++)
        out[i] = r->reps[i].seconds;
}

static exp_slowdown_t slowdown_of(const exp_result_t *base, const exp_result_t *r)
{
    if (r->measured) /* the blocked design measured it by its own method */
        return r->slowdown;
    double b[EXP_MAX_REPS], x[EXP_MAX_REPS];
    seconds_of(base, b);
    seconds_of(r, x);
    return exp_slowdown(b, base->nreps, x, r->nreps);
}

static exp_summary_t summary_of(const exp_result_t *r)
{
    double s[EXP_MAX_REPS];
    seconds_of(r, s);
    return exp_summarize(s, r->nreps);
}

/* Mean of a per-repetition figure over the repetitions that have it (< 0: none has). */
static double mean_known(const exp_result_t *r, size_t offset)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < r->nreps; i++) {
        double v = *(const double *)((const char *)&r->reps[i] + offset);
        if (v >= 0) {
            sum += v;
            n++;
        }
    }
    return n ? sum / n : -1;
}

static void print_table(FILE *f, const exp_options_t *o, const exp_result_t *results, int n)
{
    int nrows = 0;
    for (int i = 0; i < n; i++)
        nrows = results[i].nreps > nrows ? results[i].nreps : nrows;
    if (o->design == EXP_DESIGN_BLOCKS)
        fprintf(f,
                "Trainer time for %d steps at each block's step time, in seconds (blocked design: a row\n"
                "per block, or per batch of the guarded run; Table II's format, not separate runs)\n%-12s",
                o->steps, "Block");
    else
        fprintf(f, "Trainer run time in seconds\n%-12s", "Repetition");
    for (int i = 0; i < n; i++)
        fprintf(f, " %19s", results[i].config.name);
    fprintf(f, "\n");
    bool cut = o->design == EXP_DESIGN_BLOCKS && nrows > 2 * TABLE_ROWS_SHOWN;
    for (int rep = 0; rep < nrows; rep++) {
        if (cut && rep == TABLE_ROWS_SHOWN) {
            fprintf(f, "%-12s (%d more rows in runs.csv)\n", "...", nrows - TABLE_ROWS_SHOWN);
            break;
        }
        fprintf(f, "%-12d", rep + 1);
        for (int i = 0; i < n; i++)
            if (rep < results[i].nreps)
                fprintf(f, " %19.2f", results[i].reps[rep].seconds);
            else
                fprintf(f, " %19s", "");
        fprintf(f, "\n");
    }
    const char *rows[] = {"MIN", "Average", "Std. dev."};
    for (int row = 0; row < 3; row++) {
        fprintf(f, "%-12s", rows[row]);
        for (int i = 0; i < n; i++) {
            exp_summary_t s = summary_of(&results[i]);
            fprintf(f, " %19.*f", row == 2 ? 3 : 2, row == 0 ? s.min : row == 1 ? s.mean : s.sd);
        }
        fprintf(f, "\n");
    }
}

/* The widest half interval of the noisy configurations: the precision the experiment reached. */
static double precision_reached(const exp_result_t *results, int n)
{
    double widest = 0;
    for (int i = 0; i < n; i++) {
        const exp_result_t *base = baseline_of(results, n, &results[i]);
        if (results[i].config.noise && base) {
            exp_slowdown_t d = slowdown_of(base, &results[i]);
            double half = exp_half_width(&d);
            widest = half > widest ? half : widest;
        }
    }
    return widest;
}

/* The guarded configuration's own figures: settle time, what it kept, what it compared with. */
static void print_guarded(FILE *f, const exp_options_t *o, const exp_result_t *r)
{
    exp_slowdown_t d = r->slowdown;
    fprintf(f, "    %d batches after the guard ", r->npairs);
    if (r->settle_seconds >= 0)
        fprintf(f, "settled (%.1f s after the noise started)", r->settle_seconds);
    else
        fprintf(f, "had not settled by half-time (measured from there)");
    fprintf(f, ", against its run's lead-in and lead-out\n    (median step %.1f ms); ", 1e3 * r->baseline_seconds);
    if (r->kept >= 0)
        fprintf(f, "noise throughput kept: %.0f %% of the unguarded noise's; ", 100 * r->kept);
    fprintf(f, "%s the %.0f %% budget (point estimate)\n", d.slowdown <= o->budget ? "within" : "over",
            100 * o->budget);
    if (r->guard_blind[0])
        fprintf(f,
                "    WARNING: the guard could not judge the trainer (%s): these figures are of the noise\n"
                "    unguarded\n",
                r->guard_blind);
}

/* "40 s", "12 min", "2.5 h" */
static void format_duration(double seconds, char *out, size_t len)
{
    if (seconds < 120)
        snprintf(out, len, "%.0f s", seconds);
    else if (seconds < 7200)
        snprintf(out, len, "%.0f min", seconds / 60);
    else
        snprintf(out, len, "%.1f h", seconds / 3600);
}

/* A placement short of --precision: how long its blocks would take to reach it at this trainer's
 * step time (the half width falls as one over the root of the pairs), or to make an interval at
 * all. A real job's slow steps make this minutes or hours where cosched-train's make seconds. */
static void print_time_to_precision(FILE *f, const exp_options_t *o, const exp_result_t *r, const exp_slowdown_t *d)
{
    char took[32];
    if (!d->valid) {
        format_duration(2 * 6 * r->block_seconds, took, sizeof took);
        fprintf(f, "    an interval needs 6 pairs: about %s of %.2f s blocks at this step time (--time auto)\n", took,
                r->block_seconds);
        return;
    }
    double seconds = exp_seconds_to_precision(exp_half_width(d), r->npairs, r->block_seconds, o->precision);
    if (seconds <= 0)
        return;
    format_duration(seconds, took, sizeof took);
    fprintf(f, "    +-%.1f points would take about %s of blocks (%.0f pairs) at this step time (--time auto)\n",
            100 * o->precision, took, seconds / (2 * r->block_seconds));
}

static void print_slowdowns(FILE *f, const exp_options_t *o, const exp_result_t *results, int n)
{
    if (o->design == EXP_DESIGN_BLOCKS)
        fprintf(f,
                "\nSlowdown against the same placement without noise (95 %% interval: %s\nof the pairs' "
                "step times; guarded: see below it)\n",
                exp_estimator_pairs_method(exp_estimator()));
    else
        fprintf(f, "\nSlowdown against the same placement without noise (95 %% interval: ratio of geometric\n"
                   "means, Welch's t on log times)\n");
    for (int i = 0; i < n; i++) {
        const exp_result_t *r = &results[i], *base = baseline_of(results, n, r);
        if (!r->config.noise || !base)
            continue;
        exp_slowdown_t d = slowdown_of(base, r);
        fprintf(f, "  %-19s %+6.1f %%", r->config.name, 100 * d.slowdown);
        if (d.valid)
            fprintf(f, "  [%+.1f %%, %+.1f %%]", 100 * d.ci_low, 100 * d.ci_high);
        else if (r->measured && d.level > 0)
            fprintf(f, "  (no 95 %% interval on %d %s; their range %+.1f .. %+.1f %% holds it at %.0f %%)", r->npairs,
                    r->config.guard ? "batches" : "pairs", 100 * d.ci_low, 100 * d.ci_high, 100 * d.level);
        else
            fprintf(f, "  (no interval: too few %s)",
                    r->measured ? (r->config.guard ? "batches" : "pairs") : "repetitions");
        if (r->measured && !r->config.guard)
            fprintf(f, "  %d pairs of %.2f s blocks", r->npairs, r->block_seconds);
        fprintf(f, "\n");
        if (r->measured && !r->config.guard)
            print_time_to_precision(f, o, r, &d);
        if (r->measured && r->config.guard)
            print_guarded(f, o, r);
    }
    if (o->design == EXP_DESIGN_BLOCKS && o->time_auto)
        fprintf(f, "Precision reached: +-%.1f points (target +-%.1f) in %.0f s (--time auto, ceiling %.0f s)\n",
                100 * precision_reached(results, n), 100 * o->precision, o->time_spent, o->time_limit);
    else if (o->design == EXP_DESIGN_BLOCKS)
        fprintf(f, "Precision reached: +-%.1f points (target +-%.1f) in %.0f s (--time %.0f)\n",
                100 * precision_reached(results, n), 100 * o->precision, o->time_spent, o->time_limit);
}

static void print_profile(FILE *f, const exp_result_t *results, int n)
{
    fprintf(f, "\n%-19s %-13s %-26s %s\n", "Configuration", "Noise MB/s", "Trainer compute/comm/data", "Placement");
    for (int i = 0; i < n; i++) {
        const exp_result_t *r = &results[i];
        double mbs = mean_known(r, offsetof(exp_rep_t, noise_mbs));
        double c = mean_known(r, offsetof(exp_rep_t, share_compute));
        char noise[32] = "-", shares[64] = "-";
        if (mbs >= 0)
            snprintf(noise, sizeof noise, "%.0f", mbs);
        if (c >= 0)
            snprintf(shares, sizeof shares, "%.0f / %.0f / %.0f %%", 100 * c,
                     100 * mean_known(r, offsetof(exp_rep_t, share_comm)),
                     100 * mean_known(r, offsetof(exp_rep_t, share_data)));
        fprintf(f, "%-19s %-13s %-26s %s\n", r->config.name, noise, shares, r->placement);
    }
}

/* Placements that put trainer and noise on the same CPUs under two names (one domain, few
 * cores): said, so that nobody reads a difference between them as the placement's. */
static void print_same_placements(FILE *f, const exp_result_t *results, int n)
{
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++) {
            const exp_result_t *a = &results[i], *b = &results[k];
            const char *isolation = strstr(a->placement, ", isolation");
            size_t cpus = isolation ? (size_t)(isolation - a->placement) : strlen(a->placement);
            if (a->config.noise || b->config.noise || strcmp(a->config.policy, b->config.policy) == 0 ||
                strncmp(a->placement, b->placement, cpus) != 0 || b->placement[cpus] != a->placement[cpus])
                continue;
            fprintf(f,
                    "\nNote: %s and %s put the trainer and the noise on the same CPUs on this node; they\n"
                    "differ here in name only (the isolation column is what the planner can keep apart).\n",
                    a->config.name, b->config.name);
        }
}

/* A CSV field: the figure, or nothing when it is unknown (< 0). */
static void csv_number(FILE *f, double v, int decimals)
{
    if (v >= 0)
        fprintf(f, ",%.*f", decimals, v);
    else
        fputc(',', f);
}

static int write_csv(const char *path, const exp_result_t *results, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return output_fail("cannot write %s: %m", path);
    fprintf(f, "configuration,policy,noise,guard,repetition,seconds,noise_mb_per_s,step_median_seconds,"
               "share_compute,share_comm,share_data,isolation\n");
    for (int i = 0; i < n; i++)
        for (int rep = 0; rep < results[i].nreps; rep++) {
            const exp_rep_t *x = &results[i].reps[rep];
            fprintf(f, "%s,%s,%d,%d,%d,%.6f", results[i].config.name, results[i].config.policy, results[i].config.noise,
                    results[i].config.guard, rep + 1, x->seconds);
            csv_number(f, x->noise_mbs, 3);
            csv_number(f, x->step_median > 0 ? x->step_median : -1, 6);
            csv_number(f, x->share_compute, 4);
            csv_number(f, x->share_comm, 4);
            csv_number(f, x->share_data, 4);
            fprintf(f, ",%s\n", x->isolation);
        }
    return fclose(f) == 0 ? 0 : output_fail("cannot write %s: %m", path);
}

static json_t *result_json(const exp_options_t *opts, const exp_result_t *results, int n, const exp_result_t *r)
{
    exp_summary_t s = summary_of(r);
    json_t *times = json_array();
    for (int rep = 0; rep < r->nreps; rep++)
        json_array_append_new(times, json_real(r->reps[rep].seconds));
    json_t *o = json_pack("{s:s, s:s, s:b, s:b, s:s, s:o, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f}}", "name",
                          r->config.name, "policy", r->config.policy, "noise", r->config.noise, "guard",
                          r->config.guard, "placement", r->placement, "seconds", times, "summary", "min", s.min, "max",
                          s.max, "mean", s.mean, "sd", s.sd, "median", s.median, "q1", s.q1, "q3", s.q3);
    const exp_result_t *base = baseline_of(results, n, r);
    if (r->config.noise && base) {
        exp_slowdown_t d = slowdown_of(base, r);
        json_t *slow = json_pack("{s:s, s:f, s:o, s:f}", "against", base->config.name, "value", d.slowdown, "ci95",
                                 d.valid ? json_pack("[f,f]", d.ci_low, d.ci_high) : json_null(), "df", d.df);
        json_object_set_new(slow, "method",
                            json_string(r->measured ? r->method
                                                    : "ratio of geometric means of run times, "
                                                      "Welch's t on logs"));
        if (r->measured) {
            json_object_set_new(slow, r->config.guard ? "batches" : "pairs", json_integer(r->npairs));
            double to = r->config.guard ? -1
                        : d.valid
                            ? exp_seconds_to_precision(exp_half_width(&d), r->npairs, r->block_seconds, opts->precision)
                            : -1;
            json_object_set_new(slow, "seconds_to_precision", to >= 0 ? json_real(to) : json_null());
            json_object_set_new(slow, "level", d.level > 0 ? json_real(d.level) : json_null());
            json_object_set_new(o, "blocks",
                                json_pack("{s:f, s:o, s:i, s:f}", "seconds", r->block_seconds, "steps",
                                          r->block_steps > 0 ? json_integer(r->block_steps) : json_null(),
                                          "host_switches", r->host_switches, "host_dwell_seconds", r->host_dwell_s));
        }
        json_object_set_new(o, "slowdown", slow);
    }
    if (r->measured && r->config.guard)
        json_object_set_new(o, "guard",
                            json_pack("{s:o, s:o, s:f, s:s, s:o}", "settle_seconds",
                                      r->settle_seconds >= 0 ? json_real(r->settle_seconds) : json_null(), "noise_kept",
                                      r->kept >= 0 ? json_real(r->kept) : json_null(), "baseline_step_seconds",
                                      r->baseline_seconds, "baseline", "the run's own no-noise lead-in and lead-out",
                                      "blind", r->guard_blind[0] ? json_string(r->guard_blind) : json_null()));
    double mbs = mean_known(r, offsetof(exp_rep_t, noise_mbs)), c = mean_known(r, offsetof(exp_rep_t, share_compute));
    json_object_set_new(o, "noise_mb_per_s", mbs >= 0 ? json_real(mbs) : json_null());
    json_object_set_new(o, "intensity", json_real(r->config.noise ? r->config.intensity : 0));
    json_object_set_new(o, "noise_ranks", r->config.noise_ranks ? json_integer(r->config.noise_ranks) : json_null());
    json_object_set_new(o, "trainer_shares",
                        c >= 0 ? json_pack("{s:f, s:f, s:f}", "compute", c, "comm",
                                           mean_known(r, offsetof(exp_rep_t, share_comm)), "data",
                                           mean_known(r, offsetof(exp_rep_t, share_data)))
                               : json_null());
    return o;
}

/* Where the trainer's figures come from: the blocked design times steps (cosched-train's step
 * lines, or a --trainer command's from cosched's PyTorch hook), the run design whole runs. */
static const char *trainer_steps(const exp_options_t *o)
{
    if (o->design == EXP_DESIGN_RUNS)
        return "run";
    return o->trainer_cmd ? "hook" : "cosched-train";
}

static int write_json(const char *path, const exp_options_t *o, const exp_result_t *results, int n)
{
    json_t *configs = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(configs, result_json(o, results, n, &results[i]));
    json_t *doc = json_pack("{s:{s:s, s:i, s:i, s:i, s:i, s:s, s:s, s:s?, s:b, s:f}, s:o}", "options", "design",
                            o->design == EXP_DESIGN_BLOCKS ? "blocks" : "runs", "reps", o->reps, "warmup", o->warmup,
                            "steps", o->steps, "batch", o->batch, "model", o->model, "noise", o->noise, "trainer",
                            o->trainer_cmd, "guard", o->guard, "budget", o->budget, "configurations", configs);
    json_t *options = json_object_get(doc, "options");
    json_object_set_new(options, "gpus", json_string(o->gpus == 0 ? "none" : "0"));
    json_object_set_new(options, "trainer_steps", json_string(trainer_steps(o)));
    if (o->design == EXP_DESIGN_BLOCKS) {
        json_object_set_new(options, "time", json_real(o->time_limit));
        json_object_set_new(options, "time_auto", json_boolean(o->time_auto));
        json_object_set_new(options, "precision", json_real(o->precision));
        json_object_set_new(options, "seed", json_integer((json_int_t)o->seed));
        static const char *const estimators[] = {"hodges-lehmann", "t", "sign"};
        json_object_set_new(options, "estimator", json_string(estimators[exp_estimator()]));
    }
    double reached = precision_reached(results, n);
    json_object_set_new(doc, "precision_reached", isfinite(reached) ? json_real(reached) : json_null());
    json_object_set_new(doc, "seconds", json_real(o->time_spent));
    if (o->sweep != EXP_SWEEP_NONE) {
        json_object_set_new(doc, "sweep", exp_sweep_json(o, results, n));
    }
    int rc = json_dump_file(doc, path, JSON_INDENT(2)) == 0 ? 0 : output_fail("cannot write %s", path);
    json_decref(doc);
    return rc;
}

/* --json: summary.json on stdout, as written (the plots are drawn all the same). */
static int print_json_file(const char *path)
{
    json_t *doc = json_load_file(path, 0, NULL);
    if (!doc)
        return output_fail("cannot read back %s", path);
    json_dumpf(doc, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(doc);
    return 0;
}

int exp_report(const exp_options_t *o, const exp_result_t *results, int n)
{
    char *text = NULL, path[4096];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return output_fail("out of memory");
    fprintf(f, "Trainer: %s%s, %s; noise: %s\n", o->trainer_cmd ? o->trainer_cmd : "cosched-train",
            strcmp(trainer_steps(o), "hook") == 0 ? " (its steps from cosched's PyTorch hook)" : "",
            exp_trainer_words(o), o->noise);
    if (o->sweep != EXP_SWEEP_NONE) {
        exp_sweep_print(f, o, results, n);
    } else {
        print_table(f, o, results, n);
        print_slowdowns(f, o, results, n);
        print_profile(f, results, n);
        print_same_placements(f, results, n);
    }
    fclose(f);
    if (!o->json)
        fputs(text, stdout);
    snprintf(path, sizeof path, "%s/table.txt", o->out_dir);
    FILE *out = fopen(path, "w");
    int rc = out && fputs(text, out) >= 0 ? 0 : output_fail("cannot write %s: %m", path);
    if (out && fclose(out) != 0 && rc == 0)
        rc = output_fail("cannot write %s: %m", path);
    free(text);
    snprintf(path, sizeof path, "%s/runs.csv", o->out_dir);
    if (rc == 0)
        rc = write_csv(path, results, n);
    snprintf(path, sizeof path, "%s/summary.json", o->out_dir);
    if (rc == 0)
        rc = write_json(path, o, results, n);
    if (rc != 0)
        return rc;
    bool sweep = o->sweep != EXP_SWEEP_NONE;
    bool drawn = (sweep ? exp_plot_sweep(o, results, n) : exp_plot(o, results, n)) == 0;
    if (o->json)
        return print_json_file(path);
    printf("\nWritten: %s/table.txt, runs.csv, summary.json%s\n", o->out_dir,
           !drawn  ? ""
           : sweep ? ", sweep.png, sweep.svg (slowdown curve)"
                   : ", runs.png, runs.svg (box plot)");
    return rc;
}
