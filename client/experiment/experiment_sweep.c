/* experiment_sweep: `cosched experiment --sweep intensity|threads` — how much noise this node
 * takes beside the trainer: the slowdown at each noise setting against no noise, and the largest
 * setting that keeps the trainer within the budget, with the noise's throughput there: one curve
 * over every setting's pairs (experiment_curve.h), and, blocked, the plan of its next round. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The other block of b's pair: the quiet one for a noise block. */
static const exp_block_t *partner_of(const exp_block_t *blocks, int n, const exp_block_t *b)
{
    for (int i = 0; i < n; i++)
        if (&blocks[i] != b && blocks[i].pair == b->pair && blocks[i].setting == 0)
            return &blocks[i];
    return NULL;
}

int exp_sweep_log_ratios(const exp_block_t *blocks, int n, int setting, int min_steps, double *out, int max)
{
    int k = 0;
    for (int i = 0; i < n && k < max; i++)
        if (setting > 0 && blocks[i].setting == setting && exp_block_paired(blocks, n, &blocks[i], min_steps))
            out[k++] = log(blocks[i].step_s / partner_of(blocks, n, &blocks[i])->step_s);
    return k;
}

/* Fits the curve over pairs whose ratios were put into buf (nsettings rows of max each). */
static void fit_from(double *buf, const int *counts, int nsettings, int max, exp_curve_t *c)
{
    exp_curve_pairs_t p = {.nsettings = nsettings < EXP_CURVE_MAX_SETTINGS ? nsettings : EXP_CURVE_MAX_SETTINGS};
    for (int s = 1; s <= p.nsettings; s++) {
        p.n[s] = counts[s];
        p.ratios[s] = buf + (size_t)(s - 1) * (size_t)max;
    }
    exp_curve_fit(&p, EXP_CURVE_BOOTSTRAP, EXP_CURVE_SEED, c);
}

int exp_sweep_next(const exp_options_t *o, const exp_block_t *blocks, int n, int nsettings, int min_steps, int *which)
{
    int max = n > 0 ? n : 1, counts[EXP_CURVE_MAX_SETTINGS + 1] = {0};
    double *buf = malloc((size_t)(nsettings > 1 ? nsettings - 1 : 1) * (size_t)max * sizeof *buf);
    if (!buf)
        abort();
    for (int s = 1; s < nsettings && s <= EXP_CURVE_MAX_SETTINGS; s++)
        counts[s] = exp_sweep_log_ratios(blocks, n, s, min_steps, buf + (size_t)(s - 1) * (size_t)max, max);
    exp_curve_t c;
    fit_from(buf, counts, nsettings - 1, max, &c);
    free(buf);
    return exp_curve_next(&c, o->budget, o->precision, which);
}

static double median_seconds(const exp_result_t *r)
{
    double s[EXP_MAX_REPS];
    seconds_of(r, s);
    return exp_summarize(s, r->nreps).median;
}

void exp_sweep_curve(const exp_result_t *results, int n, exp_curve_t *c)
{
    int counts[EXP_CURVE_MAX_SETTINGS + 1] = {0};
    double *buf = malloc((size_t)(n > 1 ? n - 1 : 1) * EXP_MAX_REPS * sizeof *buf);
    if (!buf)
        abort();
    double quiet = median_seconds(&results[0]);
    for (int s = 1; s < n && s <= EXP_CURVE_MAX_SETTINGS; s++) {
        double *out = buf + (size_t)(s - 1) * EXP_MAX_REPS;
        const exp_result_t *r = &results[s];
        if (r->measured) {
            memcpy(out, r->log_ratios, (size_t)r->nlog_ratios * sizeof *out);
            counts[s] = r->nlog_ratios;
        } else { /* separate runs have no partner: each against the median run without noise */
            for (int i = 0; i < r->nreps && quiet > 0; i++)
                if (r->reps[i].seconds > 0)
                    out[counts[s]++] = log(r->reps[i].seconds / quiet);
        }
    }
    fit_from(buf, counts, n - 1, EXP_MAX_REPS, c);
    free(buf);
}

/* "+4.2" or ".." where the band has no end there. */
static const char *band_end(double v, char *buf, size_t len)
{
    if (isfinite(v))
        snprintf(buf, len, "%+.1f", 100 * v);
    else
        snprintf(buf, len, "..");
    return buf;
}

static void print_answer(FILE *f, const exp_options_t *o, const exp_result_t *results, const exp_curve_t *c)
{
    exp_curve_answer_t a = exp_curve_answer(c, o->budget);
    char reached[96] = "no band at every setting around the answer", lo[16], hi[16];
    double precision = exp_curve_precision(c, o->budget);
    if (isfinite(precision))
        snprintf(reached, sizeof reached, "precision reached +-%.1f points", 100 * precision);
    if (a.kind == EXP_ANSWER_NONE) {
        fprintf(f,
                "\nNone proven within the %.1f %% budget in %.0f s (%s): the curve's band is over it from the "
                "lowest setting on (%s: from %s %%).\n",
                100 * o->budget, o->time_spent, reached, results[1].config.name, band_end(c->low[1], lo, sizeof lo));
        return;
    }
    if (a.kind == EXP_ANSWER_BRACKET) {
        int top = a.over - 1;
        fprintf(f,
                "\nLargest setting within the %.1f %% budget: between %s and %s in %.0f s (%s; %s's band "
                "%s .. %s %%).\n",
                100 * o->budget, results[a.safe].config.name, results[top].config.name, o->time_spent, reached,
                results[top].config.name, band_end(c->low[top], lo, sizeof lo), band_end(c->high[top], hi, sizeof hi));
        return;
    }
    fprintf(f, "\nLargest setting within the %.1f %% budget: %s (curve %s %%, band up to %s %%", 100 * o->budget,
            results[a.safe].config.name, band_end(c->fit[a.safe], lo, sizeof lo),
            band_end(c->high[a.safe], hi, sizeof hi));
    if (a.over <= c->nsettings)
        fprintf(f, "; %s is over it, band from %s %%", results[a.over].config.name,
                band_end(c->low[a.over], lo, sizeof lo));
    else
        fprintf(f, "; the highest setting");
    fprintf(f, "; %s)", reached);
    if (mean_noise(&results[a.safe]) >= 0)
        fprintf(f, ", noise throughput there %.0f MB/s", mean_noise(&results[a.safe]));
    fprintf(f, ".\n");
}

void exp_sweep_print(FILE *f, const exp_options_t *o, const exp_result_t *results, int n)
{
    fprintf(f, "Noise sweep (%s placement, %s noise): trainer run time and slowdown against no noise\n", o->placement,
            o->noise);
    bool blocks = o->design == EXP_DESIGN_BLOCKS;
    if (blocks)
        fprintf(f, "(blocked design: trainer time for %d steps at each block's step time; ", o->steps);
    else
        fprintf(f, "(");
    fprintf(f,
            "the curve: one fit over every setting's %s, non-decreasing in the noise: isotonic regression on each\n"
            "setting's median log ratio, its 95 %% band from %d resamples within each setting)\n",
            blocks ? "pairs" : "runs against the median run without noise", EXP_CURVE_BOOTSTRAP);
    fprintf(f, "%-14s %5s %10s %10s %9s %5s %24s %12s\n", "Setting", blocks ? "Blocks" : "Reps", "Median s",
            "Average s", "Std. dev.", blocks ? "Pairs" : "Runs", "Curve [95 % band]", "Noise MB/s");
    exp_curve_t c;
    exp_sweep_curve(results, n, &c);
    for (int i = 0; i < n; i++) {
        double s[EXP_MAX_REPS];
        seconds_of(&results[i], s);
        exp_summary_t sum = exp_summarize(s, results[i].nreps);
        char curve[64] = "-", noise[32] = "-", pairs[16] = "-", lo[16], hi[16];
        if (i > 0 && i <= c.nsettings) {
            snprintf(pairs, sizeof pairs, "%d", c.pairs[i]);
            if (c.fitted[i])
                snprintf(curve, sizeof curve, "%+.1f %% [%s, %s]", 100 * c.fit[i], band_end(c.low[i], lo, sizeof lo),
                         band_end(c.high[i], hi, sizeof hi));
            else
                snprintf(curve, sizeof curve, "- [%s, %s]", band_end(c.low[i], lo, sizeof lo),
                         band_end(c.high[i], hi, sizeof hi));
        }
        if (mean_noise(&results[i]) >= 0)
            snprintf(noise, sizeof noise, "%.0f", mean_noise(&results[i]));
        fprintf(f, "%-14s %5d %10.3f %10.3f %9.3f %5s %24s %12s\n", results[i].config.name, results[i].nreps,
                sum.median, sum.mean, sum.sd, pairs, curve, noise);
    }
    print_answer(f, o, results, &c);
}

static json_t *number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *exp_sweep_json(const exp_options_t *o, const exp_result_t *results, int n)
{
    exp_curve_t c;
    exp_sweep_curve(results, n, &c);
    exp_curve_answer_t a = exp_curve_answer(&c, o->budget);
    json_t *curve = json_array();
    for (int s = 1; s <= c.nsettings; s++)
        json_array_append_new(curve, json_pack("{s:s, s:i, s:o, s:[o,o]}", "setting", results[s].config.name, "pairs",
                                               c.pairs[s], "fit", number_or_null(c.fit[s]), "band",
                                               number_or_null(c.low[s]), number_or_null(c.high[s])));
    const char *kinds[] =
        {[EXP_ANSWER_SETTING] = "setting", [EXP_ANSWER_BRACKET] = "bracket", [EXP_ANSWER_NONE] = "none proven"};
    json_t *answer = json_pack("{s:s}", "kind", kinds[a.kind]);
    if (a.kind == EXP_ANSWER_SETTING)
        json_object_set_new(answer, "setting", json_string(results[a.safe].config.name));
    if (a.kind == EXP_ANSWER_BRACKET)
        json_object_set_new(answer, "bracket",
                            json_pack("[s,s]", results[a.safe].config.name, results[a.over - 1].config.name));
    double precision = exp_curve_precision(&c, o->budget);
    return json_pack("{s:s, s:s, s:o, s:s, s:o, s:s, s:{s:i, s:I}, s:o, s:o}", "kind",
                     o->sweep == EXP_SWEEP_INTENSITY ? "intensity" : "threads", "placement", o->placement,
                     "largest_within_budget", a.safe ? json_string(results[a.safe].config.name) : json_null(), "rule",
                     "the largest setting whose curve's 95 % band ends within the budget", "answer", answer, "method",
                     "isotonic regression (pool-adjacent-violators, weighted by pairs) on each setting's median log "
                     "ratio; band: percentile bootstrap of the pairs within each setting",
                     "bootstrap", "resamples", EXP_CURVE_BOOTSTRAP, "seed", (json_int_t)EXP_CURVE_SEED,
                     "precision_reached", number_or_null(precision), "curve", curve);
}
