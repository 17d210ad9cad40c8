/* train: the run of cosched-train: setup (binding, data, model, backend, broadcast), the
 * step loop (data, forward, backward, allreduce, update), validation and reporting. */
#include <hwloc.h>
#include <jansson.h>
#include <math.h>
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
#include "train.h"

typedef struct {
	const train_options *o;
	int rank, size;
	train_data data;
	train_model model;
	train_net net;
	train_comm comm;
	train_trace trace;
	int *perm, *test_idx, *pad_idx;
} run;

/* Bind as asked, then say where we run; threads default to the CPUs we may use. */
static int setup_binding(const train_options *o, int rank, char **cpus, char **mems,
                         int *threads, char *err, size_t errlen)
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
	double sums[2] = { 0, 0 }; /* loss summed over samples, correct */
	if (sync_state(r) != 0)
		return -1;
	for (int start = r->rank * B; start < t->n; start += r->size * B) {
		int b = t->n - start < B ? t->n - start : B;
		for (int i = 0; i < B; i++)
			r->pad_idx[i] = r->test_idx[start + (i < b ? i : b - 1)];
		train_data_batch(&r->data, t, r->pad_idx, B, 0, 0, 0,
		                 train_net_act(&r->net, r->model.input), r->net.labels);
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

int train_run(const train_options *o, char *err, size_t errlen)
{
	run r;
	memset(&r, 0, sizeof(r));
	r.o = o;
	MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &r.size);
	char *cpus = NULL, *mems = NULL;
	int threads = 1, rc = -1, B = (int)o->batch;
	int ok = setup_binding(o, r.rank, &cpus, &mems, &threads, err, errlen) == 0;
	if (ok) {
		omp_set_num_threads(threads);
		ok = train_data_load(&r.data, o->data, o->image_size, o->classes, err, errlen) == 0;
	}
	if (ok && o->max_samples) {
		if (r.data.train.n > o->max_samples)
			r.data.train.n = (int)o->max_samples;
		if (r.data.test.n > o->max_samples)
			r.data.test.n = (int)o->max_samples;
	}
	if (ok)
		ok = train_model_build(&r.model, o->model, r.data.C, r.data.H, r.data.W,
		                       r.data.classes, o->batchnorm, err, errlen) == 0;
	if (ok)
		ok = train_net_create(&r.net, &r.model, B, o->backend, err, errlen) == 0;
	if (ok)
		ok = train_comm_init(&r.comm, strcmp(o->allreduce, "ring") == 0 ? TRAIN_ALLREDUCE_RING
		                     : TRAIN_ALLREDUCE_MPI, o->fusion_mb, &r.model, err, errlen) == 0;
	long spe = 0;
	if (ok) {
		spe = r.data.train.n / ((long)B * r.size);
		if (spe == 0) {
			snprintf(err, errlen, "%s has %d training samples, fewer than one global batch "
			         "of %d x %d ranks", o->data, r.data.train.n, B, r.size);
			ok = 0;
		}
	}
	if (ok) {
		r.perm = malloc(sizeof(int) * r.data.train.n);
		r.test_idx = malloc(sizeof(int) * (r.data.test.n + 1));
		r.pad_idx = malloc(sizeof(int) * B);
		ok = r.perm && r.test_idx && r.pad_idx;
		if (!ok)
			snprintf(err, errlen, "out of memory for sample indices");
	}
	if (agree(ok ? 0 : -1) != 0) {
		if (ok)
			snprintf(err, errlen, "another rank failed to set up");
		goto out;
	}
	for (int i = 0; i < r.data.test.n; i++)
		r.test_idx[i] = i;
	r.net.smoothing = (float)o->smoothing;

	/* same initial parameters everywhere: rank 0's, broadcast (Horovod's broadcast_parameters) */
	train_model_init(&r.model, r.net.params, r.net.state, o->seed);
	train_comm_bcast(r.net.params, r.model.nparams);
	train_comm_bcast(r.net.state, r.model.nstate);
	long step = 0;
	if (o->resume) {
		train_ckpt_meta meta;
		int lrc = train_checkpoint_read(o->resume, &r.net, &meta, err, errlen);
		if (lrc == 0 && (meta.ranks != r.size || meta.batch != B || meta.seed != o->seed)) {
			snprintf(err, errlen, "%s was written by a run with %d ranks, batch %d, seed %llu; "
			         "this one has %d ranks, batch %d, seed %llu", o->resume, meta.ranks,
			         meta.batch, meta.seed, r.size, B, (unsigned long long)o->seed);
			lrc = -1;
		}
		if (agree(lrc) != 0)
			goto out;
		step = meta.step;
	}
	long total = o->steps ? o->steps : o->epochs * spe;
	train_schedule sched = { .lr = o->lr, .ranks = r.size, .kind = train_sched_parse(o->schedule),
	                         .total_steps = total, .steps_per_epoch = spe,
	                         .warmup_steps = (long)(o->warmup_epochs * spe) };
	if (o->trace && train_trace_init(&r.trace, (size_t)(total - step + 2) * TRAIN_NPHASES + 64,
	                                 0) != 0) {
		snprintf(err, errlen, "cannot allocate the trace buffer");
		goto out;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	double t_start = train_now();
	r.trace.t0 = t_start;
	r.trace.t0_unix = train_wall();
	if (r.rank == 0)
		print_json(json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:f, "
		                     "s:s, s:s, s:s, s:f, s:I}",
		                     "event", "start", "model", r.model.name, "data", r.data.name,
		                     "backend", r.net.backend.name, "ranks", r.size, "threads", threads,
		                     "batch", B, "params", (json_int_t)r.model.nparams,
		                     "train_samples", (json_int_t)r.data.train.n,
		                     "steps_per_epoch", (json_int_t)spe, "total_steps", (json_int_t)total,
		                     "fwd_gflop_per_image", r.model.fwd_flops * 1e-9, "cpus", cpus,
		                     "mems", mems, "allreduce", o->allreduce, "fusion_mb", o->fusion_mb,
		                     "first_step", (json_int_t)step));

	double sum[TRAIN_NPHASES] = { 0 }, sum_step = 0, last_loss = NAN, val_loss = NAN,
	       val_acc = NAN;
	long done = 0;
	int shuffled_epoch = -1;
	long stop = o->stop_after ? step + o->stop_after : total;
	if (stop > total)
		stop = total;
	while (step < stop) {
		long epoch = step / spe;
		int in_epoch = (int)(step % spe);
		double t[TRAIN_NPHASES] = { 0 }, t0 = train_now(), a, b;
		if (shuffled_epoch != (int)epoch) {
			train_data_shuffle(r.perm, r.data.train.n, o->seed, (int)epoch);
			shuffled_epoch = (int)epoch;
		}
		train_data_batch(&r.data, &r.data.train,
		                 train_data_shard(r.perm, in_epoch, r.rank, r.size, B), B, o->augment,
		                 o->seed, (int)epoch, train_net_act(&r.net, r.model.input), r.net.labels);
		a = train_now();
		t[TRAIN_PH_DATA] = a - t0;
		train_trace_add(&r.trace, TRAIN_PH_DATA, step, t0, a);
		memset(r.net.grads, 0, sizeof(float) * r.model.nparams);
		float loss = train_net_forward(&r.net, B, 1);
		b = train_now();
		t[TRAIN_PH_FWD] = b - a;
		train_trace_add(&r.trace, TRAIN_PH_FWD, step, a, b);
		if (train_net_backward(&r.net, B) != 0) {
			snprintf(err, errlen, "rank %d: backward failed at step %ld", r.rank, step);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		a = train_now();
		t[TRAIN_PH_BWD] = a - b;
		train_trace_add(&r.trace, TRAIN_PH_BWD, step, b, a);
		if (train_comm_average_grads(&r.comm, &r.model, r.net.grads) != 0) {
			snprintf(err, errlen, "rank %d: gradient allreduce failed", r.rank);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		double gl = loss;
		if (r.size > 1) {
			MPI_Allreduce(MPI_IN_PLACE, &gl, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
			gl /= r.size;
		}
		b = train_now();
		t[TRAIN_PH_COMM] = b - a;
		train_trace_add(&r.trace, TRAIN_PH_COMM, step, a, b);
		double lr = train_lr(&sched, step);
		train_sgd(r.net.params, r.net.momentum, r.net.grads, r.model.nparams, (float)lr,
		          (float)o->momentum, (float)o->weight_decay);
		a = train_now();
		t[TRAIN_PH_UPDATE] = a - b;
		train_trace_add(&r.trace, TRAIN_PH_UPDATE, step, b, a);
		double ts = a - t0;
		for (int p = 0; p < TRAIN_NPHASES; p++)
			sum[p] += t[p];
		sum_step += ts;
		done++;
		last_loss = gl;
		if (step % o->log_every == 0 || step + 1 == total)
			train_report_step(stdout, step, epoch, r.rank, t, ts, gl, lr,
			                  (double)B * r.size / ts);
		step++;
		if (step % spe == 0 || step == total) {
			a = train_now();
			if (evaluate(&r, &val_loss, &val_acc) != 0) {
				snprintf(err, errlen, "validation failed");
				goto out;
			}
			b = train_now();
			train_trace_add(&r.trace, TRAIN_PH_EVAL, step, a, b);
			if (r.rank == 0)
				print_json(json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:f}", "event", "epoch",
				                     "epoch", (json_int_t)epoch, "step", (json_int_t)step,
				                     "train_loss", isfinite(gl) ? gl : -1.0,
				                     "val_loss", isfinite(val_loss) ? val_loss : -1.0,
				                     "val_accuracy", val_acc, "t_eval", b - a));
		}
		if (o->checkpoint && ((o->checkpoint_every && step % o->checkpoint_every == 0) ||
		                      step == stop)) {
			a = train_now();
			train_ckpt_meta meta = { step, r.size, B, o->seed };
			int crc = sync_state(&r);
			if (crc == 0 && r.rank == 0)
				crc = train_checkpoint_write(o->checkpoint, &r.net, &meta, err, errlen);
			if (agree(crc) != 0) {
				if (r.rank != 0)
					snprintf(err, errlen, "rank 0 could not write the checkpoint");
				goto out;
			}
			b = train_now();
			train_trace_add(&r.trace, TRAIN_PH_CKPT, step, a, b);
		}
	}
	double wall = train_now() - t_start;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double compute = sum[TRAIN_PH_FWD] + sum[TRAIN_PH_BWD] + sum[TRAIN_PH_UPDATE];
	double ips = sum_step > 0 ? (double)done * B * r.size / sum_step : 0;
	char hash[32];
	snprintf(hash, sizeof(hash), "%016llx",
	         train_hash(r.net.params, sizeof(float) * r.model.nparams));
	double denom = sum_step > 0 ? sum_step : 1;
	print_json(json_pack("{s:s, s:i, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
	                     "s:f, s:s, s:I}",
	                     "event", "summary", "rank", r.rank, "steps", (json_int_t)done,
	                     "t_train", sum_step, "t_wall", wall, "images_per_s", ips,
	                     "gflop_per_s", ips * 3 * r.model.fwd_flops * 1e-9,
	                     "share_compute", compute / denom,
	                     "share_comm", sum[TRAIN_PH_COMM] / denom,
	                     "share_data", sum[TRAIN_PH_DATA] / denom,
	                     "final_loss", isfinite(last_loss) ? last_loss : -1.0,
	                     "val_loss", isfinite(val_loss) ? val_loss : -1.0,
	                     "val_accuracy", isfinite(val_acc) ? val_acc : -1.0,
	                     "peak_rss_mib", ru.ru_maxrss / 1024.0, "param_hash", hash,
	                     "threads", (json_int_t)threads));
	if (o->trace && train_trace_write(&r.trace, o->trace, r.rank, r.size, err, errlen) != 0)
		goto out;
	rc = 0;
out:
	free(cpus);
	free(mems);
	free_run(&r);
	return rc;
}
