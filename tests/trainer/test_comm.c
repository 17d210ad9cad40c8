/* test_comm: the collectives under mpirun (3 ranks): ring and MPI allreduce are exact on
 * integer-valued data, and fused gradient averaging equals per-tensor averaging. TAP on rank 0. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "model.h"
#include "report.h"

static int rank, size, test_no, failed;

/* Every rank judges; the test passes when all ranks pass. */
static void report(int ok, const char *name)
{
    int all = ok;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    test_no++;
    if (!all)
        failed++;
    if (rank == 0)
        printf("%sok %d - %s\n", all ? "" : "not ", test_no, name);
}

static float value(size_t i, int r)
{
    return (float)((long)(i * 7919 % 101) - 50 + 3 * r);
}

static int check_sum(const float *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < size; r++)
            want += value(i, r);
        if (buf[i] != want) {
            fprintf(stderr, "rank %d: element %zu is %g, expected %g\n", rank, i, buf[i], want);
            return 0;
        }
    }
    return 1;
}

static void allreduce_is_exact(train_allreduce_kind kind, const char *name)
{
    size_t sizes[] = {1, 2, 3, 7, 1000, 100003};
    int ok = 1;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        float *buf = malloc(n * sizeof(float)), *tmp = malloc((n / size + 1) * sizeof(float));
        for (size_t i = 0; i < n; i++)
            buf[i] = value(i, rank);
        train_comm c = {.rank = rank, .size = size, .kind = kind, .tmp = tmp, .tmp_n = n / size + 1};
        ok &= train_allreduce(&c, buf, n) == 0 && check_sum(buf, n);
        free(buf);
        free(tmp);
    }
    report(ok, name);
}

static void fused_equals_unfused(void)
{
    char err[256];
    train_model m;
    int ok = train_model_build(&m, "resnet8", 3, 8, 8, 10, 1, err, sizeof(err)) == 0;
    size_t n = m.nparams;
    float *g = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
    double fusion[] = {64, 0, 0.01};
    for (int kind = 0; kind < 2; kind++)
        for (int f = 0; f < 3; f++) {
            train_comm c;
            ok &= train_comm_init(&c, kind ? TRAIN_ALLREDUCE_RING : TRAIN_ALLREDUCE_MPI, fusion[f], &m, err,
                                  sizeof(err)) == 0;
            for (size_t i = 0; i < n; i++)
                g[i] = value(i, rank);
            ok &= train_comm_average_grads(&c, &m, g) == 0;
            if (kind == 0 && f == 0) {
                memcpy(ref, g, n * sizeof(float));
                for (size_t i = 0; i < n; i++) {
                    float want = 0;
                    for (int r = 0; r < size; r++)
                        want += value(i, r);
                    ok &= fabsf(g[i] - want / size) <= 1e-6f * fabsf(want);
                }
            } else {
                ok &= memcmp(g, ref, n * sizeof(float)) == 0;
            }
            train_comm_free(&c);
        }
    /* and every rank holds the same bits */
    unsigned long long h = train_hash(g, n * sizeof(float)), h0 = h;
    MPI_Bcast(&h0, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    ok &= h == h0;
    free(g);
    free(ref);
    train_model_free(&m);
    report(ok, "fused, unfused and ring gradient averages are equal on every rank");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("1..3\n# %d ranks\n", size);
    allreduce_is_exact(TRAIN_ALLREDUCE_MPI, "MPI_Allreduce sums integer-valued data exactly");
    allreduce_is_exact(TRAIN_ALLREDUCE_RING, "ring allreduce sums integer-valued data exactly");
    fused_equals_unfused();
    MPI_Finalize();
    return failed ? 1 : 0;
}
