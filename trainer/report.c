/* report: JSON step lines written without allocation, Chrome trace events gathered over MPI,
 * and small helpers (clock, hash) the summary uses. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"
#include "run_output.h"

static const char *phase_names[TRAIN_NPHASES] = {"data",   "forward",    "backward",  "allreduce",
                                                 "update", "validation", "checkpoint"};

double train_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double train_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* JSON has no NaN or infinity: a diverged loss is written as null. */
static void num(FILE *f, const char *key, double v)
{
    if (isfinite(v))
        fprintf(f, ",\"%s\":%.6g", key, v);
    else
        fprintf(f, ",\"%s\":null", key);
}

void train_report_step(FILE *f, long step, long epoch, int rank, const double t[TRAIN_NPHASES], double t_step,
                       double loss, double lr, double images_per_s)
{
    fprintf(f,
            "{\"" RUNOUT_EVENT "\":\"" RUNOUT_EVENT_STEP "\",\"" RUNOUT_STEP "\":%ld,\"epoch\":%ld,\"" RUNOUT_RANK
            "\":%d",
            step, epoch, rank);
    num(f, "t_data", t[TRAIN_PH_DATA]);
    num(f, "t_fwd", t[TRAIN_PH_FWD]);
    num(f, "t_bwd", t[TRAIN_PH_BWD]);
    num(f, "t_comm", t[TRAIN_PH_COMM]);
    num(f, "t_update", t[TRAIN_PH_UPDATE]);
    num(f, RUNOUT_T_STEP, t_step);
    num(f, "loss", loss);
    num(f, "lr", lr);
    num(f, "images_per_s", images_per_s);
    /* the wall clock at the step's end, so that readers can place steps beside other runs' events
     * (cosched experiment's noise blocks) */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    fprintf(f, ",\"" RUNOUT_TIME "\":%.6f", (double)now.tv_sec + now.tv_nsec * 1e-9);
    fputs("}\n", f);
    fflush(f);
}

int train_trace_init(train_trace *t, size_t cap, double t0)
{
    t->n = 0;
    t->cap = cap;
    t->t0 = t0;
    t->ev = malloc(sizeof(double) * 4 * (cap ? cap : 1));
    return t->ev ? 0 : -1;
}

void train_trace_add(train_trace *t, int phase, long step, double start, double end)
{
    if (!t->ev || t->n == t->cap)
        return; /* a full trace drops events rather than allocating in the step */
    double *e = t->ev + 4 * t->n++;
    e[0] = phase, e[1] = (double)step, e[2] = (start - t->t0) * 1e6, e[3] = (end - start) * 1e6;
}

int train_trace_write(train_trace *t, const char *path, int rank, int size, char *err, size_t errlen)
{
    int count = (int)(4 * t->n), rc = 0;
    int *counts = NULL, *displs = NULL;
    double *all = NULL, *origins = NULL;
    if (rank == 0) {
        counts = calloc(size, sizeof(int));
        displs = calloc(size, sizeof(int));
        origins = calloc(size, sizeof(double));
    }
    MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(&t->t0_unix, 1, MPI_DOUBLE, origins, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    size_t total = 0;
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            displs[r] = (int)total;
            total += (size_t)counts[r];
        }
        all = malloc(sizeof(double) * (total ? total : 1));
    }
    MPI_Gatherv(t->ev, count, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *f = fopen(path, "w");
        if (!f) {
            snprintf(err, errlen, "cannot write trace %s", path);
            rc = -1;
        } else {
            /* ts counts from rank 0's start; otherData says when that was by the wall clock. */
            fprintf(f,
                    "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"time_origin_unix\":%.6f},"
                    "\"traceEvents\":[\n",
                    origins[0]);
            int first = 1;
            for (int r = 0; r < size; r++) {
                fprintf(f,
                        "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
                        "\"args\":{\"name\":\"rank %d\"}}",
                        first ? "" : ",\n", r, r);
                first = 0;
                for (int p = 0; p < TRAIN_NPHASES; p++)
                    fprintf(f,
                            ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
                            "\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                            r, p, phase_names[p]);
                double shift = (origins[r] - origins[0]) * 1e6;
                for (int i = 0; i < counts[r]; i += 4) {
                    const double *e = all + displs[r] + i;
                    fprintf(f,
                            ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                            "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"step\":%ld}}",
                            phase_names[(int)e[0]], r, (int)e[0], e[2] + shift, e[3], (long)e[1]);
                }
            }
            fputs("\n]}\n", f);
            if (fclose(f) != 0) {
                snprintf(err, errlen, "cannot write trace %s", path);
                rc = -1;
            }
        }
    }
    free(counts);
    free(displs);
    free(origins);
    free(all);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc != 0 && rank != 0)
        snprintf(err, errlen, "rank 0 could not write the trace %s", path);
    return rc;
}

void train_trace_free(train_trace *t)
{
    free(t->ev);
    memset(t, 0, sizeof(*t));
}

unsigned long long train_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}
