/* experiment_curve: the sweep's slowdown curve, fitted to the pairs of every setting at once, and
 * the plan that spends the sweep's blocks where that curve's band crosses the budget.
 *
 * The only assumption is that the slowdown does not fall as the noise grows (more intensity,
 * more threads): an isotonic regression (pool-adjacent-violators) on each setting's median log
 * ratio, weighted by its pairs, so that a setting with few pairs borrows from its neighbours only
 * where they disagree with the order. The band: the same fit on pairs resampled within each
 * setting, 2.5th and 97.5th percentiles, from a fixed seed (the same pairs give the same band).
 * A setting without enough pairs of its own is bounded by its neighbours: no lower than the
 * band below it, no higher than the band above it. Pure functions on log ratios. */
#ifndef COSCHED_EXPERIMENT_CURVE_H
#define COSCHED_EXPERIMENT_CURVE_H

#include <stdbool.h>
#include <stdint.h>

#define EXP_CURVE_MAX_SETTINGS 16
/* A setting enters the fit from this many pairs: one pair's bootstrap is a point, no band. */
#define EXP_CURVE_MIN_PAIRS 2
/* A band proves a setting within (or over) the budget only through a setting with this many pairs
 * or more: the band of a median of fewer is narrow too often. */
#define EXP_CURVE_PROOF_PAIRS 4
#define EXP_CURVE_BOOTSTRAP 1000
#define EXP_CURVE_SEED 0x5eedc0de5eedULL

/* The pairs of settings 1 .. nsettings in order of the noise (setting 0 is no noise, the
 * partner of every pair): ratios[s][0 .. n[s]) are the log(noise block / quiet block) ratios. */
typedef struct exp_curve_pairs {
    int nsettings;
    int n[EXP_CURVE_MAX_SETTINGS + 1];
    const double *ratios[EXP_CURVE_MAX_SETTINGS + 1];
} exp_curve_pairs_t;

/* The fitted curve, indexed by setting (1 .. nsettings; slowdowns as fractions, 0.05 = 5 %). */
typedef struct exp_curve {
    int nsettings;
    int pairs[EXP_CURVE_MAX_SETTINGS + 1];
    bool fitted[EXP_CURVE_MAX_SETTINGS + 1]; /* EXP_CURVE_MIN_PAIRS pairs or more: in the fit */
    double fit[EXP_CURVE_MAX_SETTINGS + 1];  /* NAN where not fitted */
    /* 95 % band; where not fitted, from the neighbours (-INFINITY / INFINITY where there is none) */
    double low[EXP_CURVE_MAX_SETTINGS + 1], high[EXP_CURVE_MAX_SETTINGS + 1];
} exp_curve_t;

/* What the sweep answers. SETTING: safe is the largest setting within the budget and the next
 * one is over it (or safe is the last); BRACKET: the largest setting within lies in
 * [safe, over - 1], safe proven within (0: no noise), over - 1 not yet decided; NONE: the band is
 * over the budget from the lowest setting on. */
typedef enum { EXP_ANSWER_SETTING, EXP_ANSWER_BRACKET, EXP_ANSWER_NONE } exp_answer_kind_t;

typedef struct exp_curve_answer {
    exp_answer_kind_t kind;
    int safe; /* largest setting proven within the budget; 0: none */
    int over; /* smallest setting proven over it; nsettings + 1: none */
} exp_curve_answer_t;

/* Weighted pool-adjacent-violators: the non-decreasing sequence out[0 .. n) closest to y in
 * squared error weighted by w (every w > 0). out may be y. */
void exp_curve_pav(const double *y, const double *w, int n, double *out);

/* The curve and its band from p's pairs: nboot resamples from seed. */
void exp_curve_fit(const exp_curve_pairs_t *p, int nboot, uint64_t seed, exp_curve_t *c);

/* The answer at the budget (a fraction). */
exp_curve_answer_t exp_curve_answer(const exp_curve_t *c, double budget);

/* Half the band's width at setting s in slowdown points; INFINITY where unbounded. */
double exp_curve_half_width(const exp_curve_t *c, int s);

/* The precision of the answer: the widest half band among the settings next to where the curve
 * crosses the budget (safe and the settings up to over, within 1 .. nsettings). */
double exp_curve_precision(const exp_curve_t *c, double budget);

/* The settings the sweep's next round should play (into which, at most 3; returns how many;
 * 0: the answer is decided and precise to precision, nothing to add). Nothing played yet: the
 * lowest, middle and highest settings. Then a bisection on the curve: while some settings are
 * undecided, the undecided one on fewer than EXP_CURVE_PROOF_PAIRS pairs (unplayed ones included)
 * nearest the middle of the fitted curve's crossing of the budget, then, among the undecided
 * range's two ends and the fitted settings next to the crossing, those whose band is wider than
 * precision (up to 3 in all), and where none is, the range's two ends (a bracket never stops
 * before --time);
 * once decided, the two settings around the crossing until their bands are within precision. */
int exp_curve_next(const exp_curve_t *c, double budget, double precision, int *which);

#endif
