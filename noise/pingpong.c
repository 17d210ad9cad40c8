/* pingpong: MPI point-to-point noise and measurements between rank pairs, OSU-style
 * (uncounted warm-up, barrier, timed loop; latency = round trip / 2; bandwidth with a
 * window of non-blocking sends and an ack), plus a Linktest-like all-pairs sweep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_glue.h"
#include "noise_clock.h"
#include "noise_progress.h"
#include "phase_line.h"
#include "run.h"
#include "run_output.h"
#include "stop.h"

#ifdef NOISE_HAVE_MPI
#include <mpi.h>

int noise_mpi_available(void)
{
    return 1;
}

int noise_mpi_start(int *argc, char ***argv, int *rank, int *nranks, char *err, size_t errlen)
{
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init failed");
        return -1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nranks);
    return 0;
}

void noise_mpi_end(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}

enum { TAG_DATA = 1, TAG_ACK = 2 };

/* Sizes 0, 1, 2, 4, ... up to max, from min; max itself even when not a power of two. */
static int next_size(uint64_t size, uint64_t max, uint64_t *out)
{
    uint64_t next = size == 0 ? 1 : size * 2;
    if (size >= max)
        return 0;
    *out = next > max ? max : next;
    return 1;
}

/* Both ranks of a pair must agree to stop, or one would wait forever for the other. */
static int everyone_continues(void)
{
    int mine = noise_stop_requested(), any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return !any;
}

static double latency_us(int me_first, int peer, char *sbuf, char *rbuf, uint64_t size, long warmup, long iters)
{
    double t0 = 0;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = MPI_Wtime();
        if (me_first) {
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * (double)iters);
}

static double bandwidth_mbs(int me_first, int peer, char *sbuf, char *rbuf, uint64_t size, int window, long warmup,
                            long iters)
{
    MPI_Request req[4096];
    char ack[4] = {0};
    double t0 = 0;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = MPI_Wtime();
        if (me_first) {
            for (int w = 0; w < window; w++)
                MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; w++)
                MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, peer, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    return (double)size * window * (double)iters / t / 1e6;
}

static json_t *result(const char *test, int a, int b, uint64_t size, long iters)
{
    json_t *r = json_object();
    json_object_set_new(r, RUNOUT_EVENT, json_string("result"));
    json_object_set_new(r, RUNOUT_MODE, json_string("pingpong"));
    json_object_set_new(r, "test", json_string(test));
    json_object_set_new(r, "pair", json_pack("[ii]", a, b));
    json_object_set_new(r, "size", json_integer((json_int_t)size));
    json_object_set_new(r, "iterations", json_integer(iters));
    return r;
}

static int benchmark(const struct noise_opts *o, struct noise_ctx *ctx, char *sbuf, char *rbuf, double *bytes)
{
    int me = ctx->rank, peer = me ^ 1, first = (me & 1) == 0;
    int active = peer < ctx->nranks;
    uint64_t size = o->min_size;
    do {
        if (!everyone_continues())
            return 0;
        int large = size > 8192;
        long iters = o->iterations ? o->iterations : large ? 100 : 1000;
        long warm = o->warmup ? o->warmup : large ? 10 : 100;
        long bw_iters = o->iterations ? o->iterations : large ? 20 : 100;
        long bw_warm = o->warmup ? o->warmup : large ? 2 : 10;
        if (active)
            latency_us(first, peer, sbuf, rbuf, size, warm, 0); /* warm-up, not counted */
        MPI_Barrier(MPI_COMM_WORLD);
        double lat = active ? latency_us(first, peer, sbuf, rbuf, size, 0, iters) : 0;
        double bw = 0;
        if (size > 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (active)
                bw = bandwidth_mbs(first, peer, sbuf, rbuf, size, (int)o->window, bw_warm, bw_iters);
        }
        *bytes += (double)size * (2.0 * (double)iters + (double)(o->window * bw_iters)) * (active ? 1 : 0);
        if (active && first) {
            json_t *r = result("pingpong", me, peer, size, iters);
            json_object_set_new(r, "latency_us", json_real(lat));
            if (size > 0) {
                json_object_set_new(r, "bandwidth_mbs", json_real(bw));
                json_object_set_new(r, "bandwidth_iterations", json_integer(bw_iters));
                json_object_set_new(r, "window", json_integer(o->window));
            }
            noise_out_emit(ctx->out, r);
        }
    } while (next_size(size, o->max_size, &size));
    return 0;
}

/* Linktest-like: every pair of ranks in turn, n-1 rounds by the circle method. */
static int allpairs(const struct noise_opts *o, struct noise_ctx *ctx, char *sbuf, char *rbuf, double *bytes)
{
    int n = ctx->nranks + (ctx->nranks & 1), me = ctx->rank;
    long iters = o->iterations ? o->iterations : 100, warm = o->warmup ? o->warmup : 10;
    for (int round = 0; round < n - 1; round++) {
        if (!everyone_continues())
            return 0;
        /* Circle method: n-1 is fixed, the others rotate; the ghost rank n-1 (odd n) means a rest. */
        int partner;
        if (me == n - 1)
            partner = round;
        else if ((me - round + n - 1) % (n - 1) == 0)
            partner = n - 1;
        else
            partner = (2 * round - me + 2 * (n - 1)) % (n - 1);
        int active = partner < ctx->nranks && partner != me;
        double lat = 0;
        if (active) {
            int first = me < partner;
            latency_us(first, partner, sbuf, rbuf, o->msg_size, warm, 0);
            lat = latency_us(first, partner, sbuf, rbuf, o->msg_size, 0, iters);
            *bytes += 2.0 * (double)o->msg_size * (double)(iters + warm);
            if (first) {
                json_t *r = result("allpairs", me, partner, o->msg_size, iters);
                json_object_set_new(r, "latency_us", json_real(lat));
                json_object_set_new(r, "bandwidth_mbs",
                                    json_real(lat > 0 ? (double)o->msg_size / lat : 0)); /* bytes/us = MB/s */
                noise_out_emit(ctx->out, r);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return 0;
}

/* Noise: the even rank pings, the odd rank answers. The first byte of every message carries
 * "stop", so both ranks of a pair finish on the same exchange without any extra messages. */
static double noise(const struct noise_opts *o, struct noise_ctx *ctx, char *sbuf, char *rbuf, double *ops)
{
    int me = ctx->rank, peer = me ^ 1;
    uint64_t size = o->msg_size ? o->msg_size : 1;
    double t0 = noise_now(), bytes = 0;
    struct noise_duty duty = {.intensity = o->intensity, .period = o->period, .origin = t0};
    struct noise_meter meter = {0};
    struct noise_progress progress;
    noise_progress_init(&progress, ctx, o, "noise", t0);
    progress.meters = &meter;
    progress.nmeters = 1;
    if (peer >= ctx->nranks) {
        noise_progress_sleep_until(&progress, t0 + o->duration); /* odd rank out */
        return 0;
    }
    for (;;) {
        if ((me & 1) == 0) {
            noise_duty_pace(&duty);
            sbuf[0] = (char)(noise_stop_requested() || noise_now() - t0 >= o->duration);
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            /* Poll with naps: a blocking receive spins a core through the idle part of the duty cycle. */
            MPI_Request req;
            int done = 0;
            MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD, &req);
            for (long spins = 0; !done; spins++) {
                MPI_Test(&req, &done, MPI_STATUS_IGNORE);
                if (!done && spins > 1000) {
                    struct timespec ts = {0, 100000};
                    nanosleep(&ts, NULL);
                }
            }
            sbuf[0] = (char)(rbuf[0] || noise_stop_requested() || noise_now() - t0 >= o->duration);
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, TAG_DATA, MPI_COMM_WORLD);
        }
        bytes += 2.0 * (double)size;
        *ops += 1;
        noise_meter_add(&meter, 2 * size, 1);
        if (rbuf[0] || sbuf[0])
            break;
        /* This thread owns the loop and the clock: it prints its rank's lines itself. */
        if (progress.due > 0)
            noise_progress_poll(&progress, noise_now());
    }
    return bytes;
}

int noise_pingpong_run(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen)
{
    if (ctx->nranks < 2) {
        snprintf(err, errlen,
                 "pingpong needs at least 2 MPI ranks: start it with mpirun -np 2 "
                 "(as root add --allow-run-as-root)");
        return -1;
    }
    uint64_t max = o->max_size > o->msg_size ? o->max_size : o->msg_size;
    if (max > (1u << 30)) {
        snprintf(err, errlen, "messages above 1 GiB are not supported");
        return -1;
    }
    char *sbuf = calloc(1, (size_t)max + 1), *rbuf = calloc(1, (size_t)max + 1);
    if (!sbuf || !rbuf) {
        free(sbuf);
        free(rbuf);
        snprintf(err, errlen, "cannot allocate two %llu-byte message buffers", (unsigned long long)max);
        return -1;
    }
    double start_wall = noise_wall(), t0 = noise_now(), cpu0 = noise_cpu_seconds(), bytes = 0, ops = 0;
    noise_place_note_self(ctx->place);
    MPI_Barrier(MPI_COMM_WORLD);
    const char *phase = "benchmark";
    if (o->duration > 0) {
        bytes = noise(o, ctx, sbuf, rbuf, &ops);
        phase = "noise";
    } else if (o->allpairs) {
        allpairs(o, ctx, sbuf, rbuf, &bytes);
        phase = "allpairs";
    } else {
        benchmark(o, ctx, sbuf, rbuf, &bytes);
    }
    noise_place_note_self(ctx->place);
    json_t *x = json_object();
    json_object_set_new(x, "peer", (ctx->rank ^ 1) < ctx->nranks ? json_integer(ctx->rank ^ 1) : json_null());
    noise_emit_phase(ctx, o, phase, start_wall, noise_now() - t0, bytes, ops, noise_cpu_seconds() - cpu0, x);
    free(sbuf);
    free(rbuf);
    return 0;
}

#else /* built without MPI */

int noise_mpi_available(void)
{
    return 0;
}

int noise_mpi_start(int *argc, char ***argv, int *rank, int *nranks, char *err, size_t errlen)
{
    (void)argc;
    (void)argv;
    *rank = 0;
    *nranks = 1;
    snprintf(err, errlen, "this cosched-noise was built without MPI (install libopenmpi-dev and rebuild)");
    return -1;
}

void noise_mpi_end(void)
{
}

int noise_pingpong_run(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen)
{
    (void)o;
    (void)ctx;
    snprintf(err, errlen, "this cosched-noise was built without MPI");
    return -1;
}

#endif
