/* train: the run of cosched-train: setup (binding, data, model, backend, broadcast), the
 * step loop (data, forward, backward, allreduce, update), validation and reporting. */
#include <hwloc.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bind.h"
#include "checkpoint.h"
#include "comm.h"
#include "cpulist.h"
#include "data.h"
#include "net.h"
#include "optim.h"
#include "report.h"
#include "run_output.h"
#include "train.h"

typedef struct {
    const train_options *o;
    int rank, size, batch, threads;
    char *cpus, *mems; /* where the rank runs, as cpulists */
    train_data data;
    train_model model;
    train_net net;
    train_comm comm;
    train_trace trace;
    train_schedule sched;
    int *perm, *test_idx, *pad_idx;
    long steps_per_epoch, total_steps, first_step;
} run;

/* What the summary reports: phase and step times summed over the steps this run made. */
typedef struct {
    double phase[TRAIN_NPHASES], step;
    long steps;
    double last_loss, val_loss, val_acc;
} run_totals;

/* Bind as asked, then say where we run; threads default to the CPUs we may use. */
static int setup_binding(const train_options *o, int rank, char **cpus, char **mems, int *threads, char *err,
                         size_t errlen)
{
    char e[256];
    if (o->cpus) {
        hwloc_bitmap_t set = cpulist_parse(o->cpus, 0, e, sizeof(e));
        if (!set || bind_process_cpus(set, e, sizeof(e)) != 0) {
            snprintf(err, errlen, "rank %d: --cpus %s: %s", rank, o->cpus, e);
            hwloc_bitmap_free(set);
            return -1;
        }
        hwloc_bitmap_free(set);
    }
    if (o->mems) {
        hwloc_bitmap_t set = cpulist_parse(o->mems, 0, e, sizeof(e));
        if (!set || bind_process_mems(set, e, sizeof(e)) != 0) {
            snprintf(err, errlen, "rank %d: --mems %s: %s", rank, o->mems, e);
            hwloc_bitmap_free(set);
            return -1;
        }
        hwloc_bitmap_free(set);
    }
    hwloc_bitmap_t c = bind_current_cpus(), m = bind_current_mems();
    *cpus = c ? cpulist_format(c) : strdup("?");
    *mems = m ? cpulist_format(m) : strdup("?");
    *threads = o->threads ? (int)o->threads : (c ? hwloc_bitmap_weight(c) : 1);
    if (*threads < 1)
        *threads = 1;
    hwloc_bitmap_free(c);
    hwloc_bitmap_free(m);
    return 0;
}

/* Average the BN running statistics over ranks: they are linear in the batch statistics,
 * so the average equals the statistics of the global batch sequence. */
static int sync_state(run *r)
{
    if (r->size == 1 || r->model.nstate == 0)
        return 0;
    if (train_allreduce(&r->comm, r->net.state, r->model.nstate) != 0)
        return -1;
    for (size_t i = 0; i < r->model.nstate; i++)
        r->net.state[i] /= (float)r->size;
    return 0;
}

/* Validation over the test split, rank r taking every size-th batch; returns loss and acc.
 * A short last batch is padded with its last sample (inference BN treats samples apart) and
 * only the real samples are counted. */
static int evaluate(run *r, double *loss, double *acc)
{
    const train_split *t = &r->data.test;
    int B = r->net.batch, V = r->model.classes;
    double sums[2] = {0, 0}; /* loss summed over samples, correct */
    if (sync_state(r) != 0)
        return -1;
    for (int start = r->rank * B; start < t->n; start += r->size * B) {
        int b = t->n - start < B ? t->n - start : B;
        for (int i = 0; i < B; i++)
            r->pad_idx[i] = r->test_idx[start + (i < b ? i : b - 1)];
        train_data_batch(&r->data, t, r->pad_idx, B, 0, 0, 0, train_net_act(&r->net, r->model.input), r->net.labels);
        (void)train_net_forward(&r->net, B, 0); /* the loss is recomputed for the b real ones */
        for (int i = 0; i < b; i++) {
            const float *p = r->net.probs + (size_t)i * V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (p[v] > p[best])
                    best = v;
            sums[1] += best == r->net.labels[i];
            sums[0] -= log(p[r->net.labels[i]] > 1e-30f ? p[r->net.labels[i]] : 1e-30f);
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *loss = sums[0] / t->n;
    *acc = sums[1] / t->n;
    return 0;
}

static void print_json(json_t *j)
{
    json_dumpf(j, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
    fputc('\n', stdout);
    fflush(stdout);
    json_decref(j);
}

static void free_run(run *r)
{
    free(r->cpus);
    free(r->mems);
    free(r->perm);
    free(r->test_idx);
    free(r->pad_idx);
    train_trace_free(&r->trace);
    train_comm_free(&r->comm);
    train_net_free(&r->net);
    train_model_free(&r->model);
    train_data_free(&r->data);
}

/* Every rank reaches the same verdict on setup, so one failing rank cannot leave the others
 * waiting in a collective. */
static int agree(int rc)
{
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return worst;
}

/* A failure inside the step loop: the other ranks already wait in a collective, so the run
 * cannot agree on stopping and MPI_Abort ends it. The message goes out first, or it is lost. */
static _Noreturn void fail_run(const run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cosched-train: rank %d: ", r->rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* MPI_Abort is not declared noreturn */
}

/* Close one phase of a step that began at `since`: its time and its trace event. */
static double phase_end(run *r, double *times, int phase, long step, double since)
{
    double now = train_now();
    times[phase] = now - since;
    train_trace_add(&r->trace, phase, step, since, now);
    return now;
}

/* Load, build and allocate everything this rank needs; 0, or -1 with a message. */
static int setup_rank(run *r, char *err, size_t errlen)
{
    const train_options *o = r->o;
    if (setup_binding(o, r->rank, &r->cpus, &r->mems, &r->threads, err, errlen) != 0)
        return -1;
    omp_set_num_threads(r->threads);
    if (train_data_load(&r->data, o->data, o->image_size, o->classes, err, errlen) != 0)
        return -1;
    if (o->max_samples) {
        if (r->data.train.n > o->max_samples)
            r->data.train.n = (int)o->max_samples;
        if (r->data.test.n > o->max_samples)
            r->data.test.n = (int)o->max_samples;
    }
    if (train_model_build(&r->model, o->model, r->data.C, r->data.H, r->data.W, r->data.classes, o->batchnorm, err,
                          errlen) != 0 ||
        train_net_create(&r->net, &r->model, r->batch, o->backend, err, errlen) != 0 ||
        train_comm_init(&r->comm, strcmp(o->allreduce, "ring") == 0 ? TRAIN_ALLREDUCE_RING : TRAIN_ALLREDUCE_MPI,
                        o->fusion_mb, &r->model, err, errlen) != 0)
        return -1;
    r->steps_per_epoch = r->data.train.n / ((long)r->batch * r->size);
    if (r->steps_per_epoch == 0) {
        snprintf(err, errlen,
                 "%s has %d training samples, fewer than one global batch "
                 "of %d x %d ranks",
                 o->data, r->data.train.n, r->batch, r->size);
        return -1;
    }
    r->perm = malloc(sizeof(int) * r->data.train.n);
    r->test_idx = malloc(sizeof(int) * (r->data.test.n + 1));
    r->pad_idx = malloc(sizeof(int) * r->batch);
    if (!r->perm || !r->test_idx || !r->pad_idx) {
        snprintf(err, errlen, "out of memory for sample indices");
        return -1;
    }
    for (int i = 0; i < r->data.test.n; i++)
        r->test_idx[i] = i;
    r->net.smoothing = (float)o->smoothing;
    return 0;
}

/* Same starting point on every rank: rank 0's parameters (Horovod's broadcast_parameters),
 * or the checkpoint to resume from, which must come from a run of the same shape. */
static int setup_parameters(run *r, char *err, size_t errlen)
{
    const train_options *o = r->o;
    train_model_init(&r->model, r->net.params, r->net.state, o->seed);
    train_comm_bcast(r->net.params, r->model.nparams);
    train_comm_bcast(r->net.state, r->model.nstate);
    if (!o->resume)
        return 0;
    train_ckpt_meta meta;
    int rc = train_checkpoint_read(o->resume, &r->net, &meta, err, errlen);
    if (rc == 0 && (meta.ranks != r->size || meta.batch != r->batch || meta.seed != o->seed)) {
        snprintf(err, errlen,
                 "%s was written by a run with %d ranks, batch %d, seed %llu; "
                 "this one has %d ranks, batch %d, seed %llu",
                 o->resume, meta.ranks, meta.batch, meta.seed, r->size, r->batch, (unsigned long long)o->seed);
        rc = -1;
    }
    if (agree(rc) != 0) {
        if (rc == 0)
            snprintf(err, errlen, "another rank could not resume from %s", o->resume);
        return -1;
    }
    r->first_step = meta.step;
    return 0;
}

/* Everything before the first step, agreed on by all ranks; 0, or -1 with a message. */
static int setup_run(run *r, char *err, size_t errlen)
{
    int ok = setup_rank(r, err, errlen) == 0;
    if (agree(ok ? 0 : -1) != 0) {
        if (ok)
            snprintf(err, errlen, "another rank failed to set up");
        return -1;
    }
    if (setup_parameters(r, err, errlen) != 0)
        return -1;
    const train_options *o = r->o;
    long spe = r->steps_per_epoch;
    r->total_steps = o->steps ? o->steps : o->epochs * spe;
    r->sched = (train_schedule){.lr = o->lr,
                                .ranks = r->size,
                                .kind = train_sched_parse(o->schedule),
                                .total_steps = r->total_steps,
                                .steps_per_epoch = spe,
                                .warmup_steps = (long)(o->warmup_epochs * spe)};
    size_t events = (size_t)(r->total_steps - r->first_step + 2) * TRAIN_NPHASES + 64;
    if (events > TRAIN_TRACE_MAX_EVENTS)
        events = TRAIN_TRACE_MAX_EVENTS; /* an open-ended run (stopped by a signal) keeps its first ones */
    if (o->trace && train_trace_init(&r->trace, events, 0) != 0) {
        snprintf(err, errlen, "cannot allocate the trace buffer");
        return -1;
    }
    return 0;
}

static void print_start(const run *r)
{
    const train_options *o = r->o;
    print_json(json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:f, "
                         "s:s, s:s, s:s, s:f, s:I}",
                         RUNOUT_EVENT, "start", "model", r->model.name, "data", r->data.name, "backend",
                         r->net.backend.name, "ranks", r->size, "threads", r->threads, "batch", r->batch, "params",
                         (json_int_t)r->model.nparams, "train_samples", (json_int_t)r->data.train.n, "steps_per_epoch",
                         (json_int_t)r->steps_per_epoch, "total_steps", (json_int_t)r->total_steps,
                         "fwd_gflop_per_image", r->model.fwd_flops * 1e-9, "cpus", r->cpus, "mems", r->mems,
                         "allreduce", o->allreduce, "fusion_mb", o->fusion_mb, "first_step",
                         (json_int_t)r->first_step));
}

/* One optimiser step: data, forward, backward, gradient allreduce, update. Adds its times
 * to the totals and returns the loss averaged over ranks. A failure ends the whole run. */
static double run_step(run *r, long step, run_totals *tot)
{
    const train_options *o = r->o;
    int B = r->batch;
    long spe = r->steps_per_epoch, epoch = step / spe;
    double t[TRAIN_NPHASES] = {0}, start = train_now(), mark = start;
    if (step == r->first_step || step % spe == 0)
        train_data_shuffle(r->perm, r->data.train.n, o->seed, (int)epoch);
    train_data_batch(&r->data, &r->data.train, train_data_shard(r->perm, (int)(step % spe), r->rank, r->size, B), B,
                     o->augment, o->seed, (int)epoch, train_net_act(&r->net, r->model.input), r->net.labels);
    mark = phase_end(r, t, TRAIN_PH_DATA, step, mark);
    memset(r->net.grads, 0, sizeof(float) * r->model.nparams);
    float loss = train_net_forward(&r->net, B, 1);
    mark = phase_end(r, t, TRAIN_PH_FWD, step, mark);
    if (train_net_backward(&r->net, B) != 0)
        fail_run(r, "backward pass failed at step %ld", step);
    mark = phase_end(r, t, TRAIN_PH_BWD, step, mark);
    if (train_comm_average_grads(&r->comm, &r->model, r->net.grads) != 0)
        fail_run(r, "gradient allreduce failed at step %ld", step);
    double global_loss = loss;
    if (r->size > 1) {
        if (MPI_Allreduce(MPI_IN_PLACE, &global_loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
            fail_run(r, "loss allreduce failed at step %ld", step);
        global_loss /= r->size;
    }
    mark = phase_end(r, t, TRAIN_PH_COMM, step, mark);
    double lr = train_lr(&r->sched, step);
    train_sgd(r->net.params, r->net.momentum, r->net.grads, r->model.nparams, (float)lr, (float)o->momentum,
              (float)o->weight_decay);
    mark = phase_end(r, t, TRAIN_PH_UPDATE, step, mark);
    double step_time = mark - start;
    for (int p = 0; p < TRAIN_NPHASES; p++)
        tot->phase[p] += t[p];
    tot->step += step_time;
    tot->steps++;
    tot->last_loss = global_loss;
    if (step % o->log_every == 0 || step + 1 == r->total_steps)
        train_report_step(stdout, step, epoch, r->rank, t, step_time, global_loss, lr, (double)B * r->size / step_time);
    return global_loss;
}

/* After the last step of an epoch (or of the run): validation, reported by rank 0. */
static int end_epoch(run *r, long step, double train_loss, run_totals *tot, char *err, size_t errlen)
{
    double a = train_now();
    if (evaluate(r, &tot->val_loss, &tot->val_acc) != 0) {
        snprintf(err, errlen, "validation failed after step %ld", step);
        return -1;
    }
    double b = train_now();
    train_trace_add(&r->trace, TRAIN_PH_EVAL, step, a, b);
    if (r->rank == 0)
        print_json(json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:f}", RUNOUT_EVENT, "epoch", "epoch",
                             (json_int_t)((step - 1) / r->steps_per_epoch), "step", (json_int_t)step, "train_loss",
                             isfinite(train_loss) ? train_loss : -1.0, "val_loss",
                             isfinite(tot->val_loss) ? tot->val_loss : -1.0, "val_accuracy", tot->val_acc, "t_eval",
                             b - a));
    return 0;
}

/* Rank 0 writes the checkpoint; every rank learns whether it worked. */
static int write_checkpoint(run *r, long step, char *err, size_t errlen)
{
    double a = train_now();
    train_ckpt_meta meta = {step, r->size, r->batch, r->o->seed};
    int rc = sync_state(r);
    if (rc == 0 && r->rank == 0)
        rc = train_checkpoint_write(r->o->checkpoint, &r->net, &meta, err, errlen);
    if (agree(rc) != 0) {
        if (r->rank != 0)
            snprintf(err, errlen, "rank 0 could not write the checkpoint");
        return -1;
    }
    train_trace_add(&r->trace, TRAIN_PH_CKPT, step, a, train_now());
    return 0;
}

static void print_summary(const run *r, const run_totals *tot, double wall)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const double *ph = tot->phase;
    double compute = ph[TRAIN_PH_FWD] + ph[TRAIN_PH_BWD] + ph[TRAIN_PH_UPDATE];
    double ips = tot->step > 0 ? (double)tot->steps * r->batch * r->size / tot->step : 0;
    double denom = tot->step > 0 ? tot->step : 1;
    char hash[32];
    snprintf(hash, sizeof(hash), "%016llx", train_hash(r->net.params, sizeof(float) * r->model.nparams));
    print_json(json_pack("{s:s, s:i, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
                         "s:f, s:s, s:I}",
                         RUNOUT_EVENT, RUNOUT_EVENT_SUMMARY, RUNOUT_RANK, r->rank, "steps", (json_int_t)tot->steps,
                         "t_train", tot->step, "t_wall", wall, "images_per_s", ips, "gflop_per_s",
                         ips * 3 * r->model.fwd_flops * 1e-9, RUNOUT_SHARE_COMPUTE, compute / denom, RUNOUT_SHARE_COMM,
                         ph[TRAIN_PH_COMM] / denom, RUNOUT_SHARE_DATA, ph[TRAIN_PH_DATA] / denom, "final_loss",
                         isfinite(tot->last_loss) ? tot->last_loss : -1.0, "val_loss",
                         isfinite(tot->val_loss) ? tot->val_loss : -1.0, "val_accuracy",
                         isfinite(tot->val_acc) ? tot->val_acc : -1.0, "peak_rss_mib", ru.ru_maxrss / 1024.0,
                         "param_hash", hash, "threads", (json_int_t)r->threads));
}

/* SIGTERM or SIGINT: the run ends after the step under way, as if it had reached its last step
 * (summary, trace and checkpoint written), so that a runner can stop an open-ended run cleanly
 * (cosched experiment stops its trainer when its blocks are precise enough). */
static volatile sig_atomic_t stop_signal;

static void note_stop(int sig)
{
    stop_signal = sig;
}

static void catch_stop_signals(void)
{
    struct sigaction sa = {.sa_handler = note_stop, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* Whether any rank was asked to stop: all ranks stop at the same step, or the next allreduce
 * would wait for ever. One rank needs no agreement. */
static int stop_requested(const run *r)
{
    int any = stop_signal != 0;
    if (r->size > 1)
        MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

/* The steps from first_step to the stop, with validation at each epoch's end and checkpoints
 * as asked; 0, or -1 with a message (all ranks then return -1 together). */
static int train_steps(run *r, run_totals *tot, char *err, size_t errlen)
{
    const train_options *o = r->o;
    long stop = o->stop_after ? r->first_step + o->stop_after : r->total_steps;
    if (stop > r->total_steps)
        stop = r->total_steps;
    for (long step = r->first_step; step < stop;) {
        double loss = run_step(r, step, tot);
        step++;
        if (stop_requested(r))
            stop = step;
        if ((step % r->steps_per_epoch == 0 || step == r->total_steps) &&
            end_epoch(r, step, loss, tot, err, errlen) != 0)
            return -1;
        int checkpoint_due = (o->checkpoint_every && step % o->checkpoint_every == 0) || step == stop;
        if (o->checkpoint && checkpoint_due && write_checkpoint(r, step, err, errlen) != 0)
            return -1;
    }
    return 0;
}

int train_run(const train_options *o, char *err, size_t errlen)
{
    run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.batch = (int)o->batch;
    r.threads = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.size);
    int rc = -1;
    if (setup_run(&r, err, errlen) != 0)
        goto out;
    catch_stop_signals();
    MPI_Barrier(MPI_COMM_WORLD);
    double t_start = train_now();
    r.trace.t0 = t_start;
    r.trace.t0_unix = train_wall();
    if (r.rank == 0)
        print_start(&r);
    run_totals tot = {.last_loss = NAN, .val_loss = NAN, .val_acc = NAN};
    if (train_steps(&r, &tot, err, errlen) != 0)
        goto out;
    print_summary(&r, &tot, train_now() - t_start);
    if (o->trace && train_trace_write(&r.trace, o->trace, r.rank, r.size, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    free_run(&r);
    return rc;
}
