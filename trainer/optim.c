/* optim: the SGD update and learning-rate schedules; pure functions of step and settings,
 * so a resumed run computes the same rates as an uninterrupted one. */
#include <math.h>
#include <string.h>

#include "optim.h"

int train_sched_parse(const char *name)
{
    if (strcmp(name, "step") == 0)
        return TRAIN_SCHED_STEP;
    if (strcmp(name, "cosine") == 0)
        return TRAIN_SCHED_COSINE;
    if (strcmp(name, "exponential") == 0)
        return TRAIN_SCHED_EXPONENTIAL;
    return -1;
}

double train_lr(const train_schedule *s, long step)
{
    double peak = s->lr * s->ranks;
    if (step < s->warmup_steps)
        return s->lr + (peak - s->lr) * (double)step / (double)s->warmup_steps;
    double t = s->total_steps > 0 ? (double)step / (double)s->total_steps : 0;
    switch (s->kind) {
    case TRAIN_SCHED_STEP: return peak * (t >= 0.75 ? 0.01 : t >= 0.5 ? 0.1 : 1.0);
    case TRAIN_SCHED_COSINE: {
        /* annealed over the steps after warm-up */
        long span = s->total_steps - s->warmup_steps;
        double u = span > 0 ? (double)(step - s->warmup_steps) / (double)span : 0;
        return peak * 0.5 * (1 + cos(3.141592653589793 * u));
    }
    case TRAIN_SCHED_EXPONENTIAL:
        return peak * pow(0.95, (double)(step / (s->steps_per_epoch > 0 ? s->steps_per_epoch : 1)));
    }
    return peak;
}

void train_sgd(float *w, float *v, const float *g, size_t n, float lr, float momentum, float wd)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        float d = g[i] + wd * w[i];
        v[i] = momentum * v[i] + d;
        w[i] -= lr * v[i];
    }
}
