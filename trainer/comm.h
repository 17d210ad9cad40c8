/* comm: the data-parallel collectives over MPI: parameter broadcast and the gradient
 * allreduce over fusion buffers, with MPI_Allreduce or our own ring. */
#ifndef COSCHED_TRAIN_COMM_H
#define COSCHED_TRAIN_COMM_H

#include <stddef.h>

#include "model.h"

typedef enum { TRAIN_ALLREDUCE_MPI, TRAIN_ALLREDUCE_RING } train_allreduce_kind;

typedef struct {
    int rank, size;
    train_allreduce_kind kind;
    size_t fusion; /* floats per fusion buffer; 0: one allreduce per parameter tensor */
    float *tmp;    /* ring receive buffer, sized once */
    size_t tmp_n;
} train_comm;

/* rank/size from MPI_COMM_WORLD; sizes the ring buffer for the largest chunk of model m. */
int train_comm_init(train_comm *c, train_allreduce_kind kind, double fusion_mb, const train_model *m, char *err,
                    size_t errlen);
void train_comm_free(train_comm *c);

/* Sum buf (n floats) over all ranks in place. */
int train_allreduce(train_comm *c, float *buf, size_t n);
/* Ring allreduce: reduce-scatter then allgather, 2(size-1) MPI_Sendrecv steps; tmp holds
 * ceil(n/size) floats. */
int train_ring_allreduce(float *buf, size_t n, float *tmp, int rank, int size);

/* Sum the gradient block over ranks and divide by the number of ranks: consecutive parameter
 * tensors are grouped into chunks of at most c->fusion floats (a tensor larger than that goes
 * alone); the gradients are contiguous, so a chunk is reduced in place, with no packing. */
int train_comm_average_grads(train_comm *c, const train_model *m, float *grads);

/* Broadcast n floats from rank 0. */
int train_comm_bcast(float *buf, size_t n);

#endif
