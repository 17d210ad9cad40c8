/* comm: MPI broadcast and allreduce for the trainer. The ring is the bandwidth-optimal
 * algorithm Horovod uses: reduce-scatter then allgather around the ranks, 2(N-1) exchanges. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm.h"

/* MPI counts are int; a chunk never exceeds this many floats per call. */
#define MAX_COUNT ((size_t)INT_MAX / 2)

int train_comm_init(train_comm *c, train_allreduce_kind kind, double fusion_mb, const train_model *m, char *err,
                    size_t errlen)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    c->kind = kind;
    c->fusion = (size_t)(fusion_mb * 1048576.0 / sizeof(float));
    size_t largest = 0;
    for (int i = 0; i < m->nparams_tensors; i++)
        if (m->params[i].n > largest)
            largest = m->params[i].n;
    size_t chunk = c->fusion > largest ? c->fusion : largest;
    if (chunk > m->nparams)
        chunk = m->nparams;
    if (m->nstate > chunk) /* BN running statistics are averaged through the same path */
        chunk = m->nstate;
    c->tmp_n = chunk / (size_t)c->size + 1;
    c->tmp = NULL;
    if (kind == TRAIN_ALLREDUCE_RING && !(c->tmp = malloc(c->tmp_n * sizeof(float)))) {
        snprintf(err, errlen, "cannot allocate the %zu-float ring buffer", c->tmp_n);
        return -1;
    }
    return 0;
}

void train_comm_free(train_comm *c)
{
    free(c->tmp);
    c->tmp = NULL;
}

int train_comm_bcast(float *buf, size_t n)
{
    for (size_t off = 0; off < n; off += MAX_COUNT) {
        size_t k = n - off < MAX_COUNT ? n - off : MAX_COUNT;
        if (MPI_Bcast(buf + off, (int)k, MPI_FLOAT, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
            return -1;
    }
    return 0;
}

/* Segment s of n floats split into size parts: the first n%size parts are one longer. */
static void segment(size_t n, int size, int s, size_t *off, size_t *len)
{
    size_t q = n / (size_t)size, r = n % (size_t)size, u = (size_t)s;
    *off = u * q + (u < r ? u : r);
    *len = q + (u < r ? 1 : 0);
}

int train_ring_allreduce(float *buf, size_t n, float *tmp, int rank, int size)
{
    if (size == 1 || n == 0)
        return 0;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    /* reduce-scatter: after size-1 steps rank r holds the full sum of segment (r+1)%size */
    for (int s = 0; s < size - 1; s++) {
        int send = ((rank - s) % size + size) % size, recv = ((rank - s - 1) % size + size) % size;
        size_t so, sl, ro, rl;
        segment(n, size, send, &so, &sl);
        segment(n, size, recv, &ro, &rl);
        if (MPI_Sendrecv(buf + so, (int)sl, MPI_FLOAT, right, 17, tmp, (int)rl, MPI_FLOAT, left, 17, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        for (size_t i = 0; i < rl; i++)
            buf[ro + i] += tmp[i];
    }
    /* allgather: pass the finished segments around; every rank ends with the same bits */
    for (int s = 0; s < size - 1; s++) {
        int send = ((rank + 1 - s) % size + size) % size, recv = ((rank - s) % size + size) % size;
        size_t so, sl, ro, rl;
        segment(n, size, send, &so, &sl);
        segment(n, size, recv, &ro, &rl);
        if (MPI_Sendrecv(buf + so, (int)sl, MPI_FLOAT, right, 18, buf + ro, (int)rl, MPI_FLOAT, left, 18,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
    }
    return 0;
}

int train_allreduce(train_comm *c, float *buf, size_t n)
{
    for (size_t off = 0; off < n; off += MAX_COUNT) {
        size_t k = n - off < MAX_COUNT ? n - off : MAX_COUNT;
        int rc;
        if (c->kind == TRAIN_ALLREDUCE_RING)
            rc = train_ring_allreduce(buf + off, k, c->tmp, c->rank, c->size);
        else
            rc = MPI_Allreduce(MPI_IN_PLACE, buf + off, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS ? 0
                                                                                                                   : -1;
        if (rc != 0)
            return -1;
    }
    return 0;
}

int train_comm_average_grads(train_comm *c, const train_model *m, float *grads)
{
    if (c->size == 1)
        return 0;
    int i = 0;
    while (i < m->nparams_tensors) {
        size_t off = m->params[i].off, n = m->params[i].n;
        i++;
        while (i < m->nparams_tensors && n + m->params[i].n <= c->fusion)
            n += m->params[i++].n;
        if (train_allreduce(c, grads + off, n) != 0)
            return -1;
    }
    float k = 1.0f / (float)c->size;
    for (size_t j = 0; j < m->nparams; j++)
        grads[j] *= k;
    return 0;
}
