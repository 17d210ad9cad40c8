/* experiment_sweep: `cosched experiment --sweep intensity|threads` — how much noise this node
 * takes beside the trainer: the slowdown at each noise setting against no noise, and the largest
 * setting that keeps the trainer within the budget, with the noise's throughput there. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "experiment.h"
#include "experiment_blocks.h"
#include "experiment_stats.h"

int exp_sweep_configs(const exp_options_t *o, exp_config_t *configs)
{
    int n = 0;
    exp_config_t quiet = {.policy = o->placement, .noise = false, .intensity = 0};
    snprintf(quiet.name, sizeof quiet.name, "no noise");
    configs[n++] = quiet;
    int points = o->sweep == EXP_SWEEP_INTENSITY ? 10 : o->noise_cores;
    if (points > EXP_MAX_CONFIGS - 1)
        points = EXP_MAX_CONFIGS - 1;
    for (int i = 1; i <= points; i++) {
        exp_config_t c = {.policy = o->placement, .noise = true, .intensity = 1};
        if (o->sweep == EXP_SWEEP_INTENSITY) {
            c.intensity = i / 10.0;
            snprintf(c.name, sizeof c.name, "intensity %.1f", c.intensity);
        } else {
            /* evenly spread over 1 .. noise_cores, the last point all of them */
            c.noise_ranks = (int)((long)i * o->noise_cores / points);
            snprintf(c.name, sizeof c.name, "%d thread%s", c.noise_ranks, c.noise_ranks == 1 ? "" : "s");
        }
        configs[n++] = c;
    }
    return n;
}

static void seconds_of(const exp_result_t *r, double *out)
{
    for (int i = 0; i < r->nreps; i++)
        out[i] = r->reps[i].seconds;
}

exp_slowdown_t exp_sweep_slowdown(const exp_result_t *results, int i)
{
    if (results[i].measured)
        return results[i].slowdown;
    double b[EXP_MAX_REPS], x[EXP_MAX_REPS];
    seconds_of(&results[0], b);
    seconds_of(&results[i], x);
    return exp_slowdown(b, results[0].nreps, x, results[i].nreps);
}

static double mean_noise(const exp_result_t *r)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < r->nreps; i++)
        if (r->reps[i].noise_mbs >= 0) {
            sum += r->reps[i].noise_mbs;
            n++;
        }
    return n ? sum / n : -1;
}

int exp_sweep_safe(const exp_options_t *o, const exp_result_t *results, int n)
{
    int safe = 0;
    for (int i = 1; i < n; i++) {
        exp_slowdown_t d = exp_sweep_slowdown(results, i);
        bool enough = !results[i].measured || results[i].npairs >= EXP_PROVEN_MIN_PAIRS;
        if (d.valid && enough && d.ci_high <= o->budget)
            safe = i;
    }
    return safe;
}

/* The widest half interval over the settings (infinite when one has none). */
static double sweep_precision(const exp_result_t *results, int n)
{
    double widest = 0;
    for (int i = 1; i < n; i++) {
        exp_slowdown_t d = exp_sweep_slowdown(results, i);
        widest = fmax(widest, exp_half_width(&d));
    }
    return widest;
}

void exp_sweep_print(FILE *f, const exp_options_t *o, const exp_result_t *results, int n)
{
    fprintf(f, "Noise sweep (%s placement, %s noise): trainer run time and slowdown against no noise\n", o->placement,
            o->noise);
    bool blocks = o->design == EXP_DESIGN_BLOCKS;
    if (blocks)
        fprintf(f,
                "(blocked design: trainer time for %d steps at each block's median step time; slowdown from the\n"
                "pairs, Student's t on their log ratios)\n",
                o->steps);
    fprintf(f, "%-14s %5s %10s %10s %9s %22s %12s\n", "Setting", blocks ? "Blocks" : "Reps", "Median s", "Average s",
            "Std. dev.", "Slowdown [95 % interval]", "Noise MB/s");
    for (int i = 0; i < n; i++) {
        double s[EXP_MAX_REPS];
        seconds_of(&results[i], s);
        exp_summary_t sum = exp_summarize(s, results[i].nreps);
        char slow[64] = "-", noise[32] = "-";
        if (i > 0) {
            exp_slowdown_t d = exp_sweep_slowdown(results, i);
            if (d.valid)
                snprintf(slow, sizeof slow, "%+.1f %% [%+.1f, %+.1f]", 100 * d.slowdown, 100 * d.ci_low,
                         100 * d.ci_high);
            else
                snprintf(slow, sizeof slow, "%+.1f %%", 100 * d.slowdown);
        }
        if (mean_noise(&results[i]) >= 0)
            snprintf(noise, sizeof noise, "%.0f", mean_noise(&results[i]));
        fprintf(f, "%-14s %5d %10.3f %10.3f %9.3f %22s %12s\n", results[i].config.name, results[i].nreps, sum.median,
                sum.mean, sum.sd, slow, noise);
    }
    int safe = exp_sweep_safe(o, results, n);
    double precision = sweep_precision(results, n);
    char reached[96] = "no interval for every setting";
    if (isfinite(precision))
        snprintf(reached, sizeof reached, "precision reached +-%.1f points", 100 * precision);
    if (safe == 0) {
        fprintf(f,
                "\nNone proven within the %.1f %% budget in %.0f s (%s): no setting's 95 %% interval ends "
                "below it.\n",
                100 * o->budget, o->time_spent, reached);
        return;
    }
    exp_slowdown_t d = exp_sweep_slowdown(results, safe);
    fprintf(f,
            "\nLargest setting proven within the %.1f %% budget: %s (slowdown %+.1f %%, 95 %% interval up to "
            "%+.1f %%; %s)",
            100 * o->budget, results[safe].config.name, 100 * d.slowdown, 100 * d.ci_high, reached);
    if (mean_noise(&results[safe]) >= 0)
        fprintf(f, ", noise throughput there %.0f MB/s", mean_noise(&results[safe]));
    fprintf(f, ".\n");
}
