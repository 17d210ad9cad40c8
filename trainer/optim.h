/* optim: SGD with momentum and weight decay, and the learning-rate schedules
 * (step, cosine, exponential) with linear warm-up and linear scaling by ranks. */
#ifndef COSCHED_TRAIN_OPTIM_H
#define COSCHED_TRAIN_OPTIM_H

#include <stddef.h>

typedef enum { TRAIN_SCHED_STEP, TRAIN_SCHED_COSINE, TRAIN_SCHED_EXPONENTIAL } train_sched;

typedef struct {
    double lr; /* per-rank base rate; the peak is lr * ranks */
    int ranks;
    train_sched kind;
    long total_steps, steps_per_epoch, warmup_steps;
} train_schedule;

/* Parse "step", "cosine", "exponential"; -1 if unknown. */
int train_sched_parse(const char *name);

/* The learning rate of step (0-based). Warm-up ramps linearly from lr to lr*ranks (Goyal et
 * al.); step divides by 10 at 50 % and 75 % of training (He et al.); cosine anneals to 0;
 * exponential multiplies by 0.95 per epoch. */
double train_lr(const train_schedule *s, long step);

/* PyTorch's SGD: g += wd*w; v = mu*v + g; w -= lr*v. */
void train_sgd(float *w, float *v, const float *g, size_t n, float lr, float momentum, float wd);

#endif
