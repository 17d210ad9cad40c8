/* net: one model instance: the parameter, gradient, momentum, state and activation blocks,
 * and the forward/backward pass over the op list through a backend (ref or onednn). */
#ifndef COSCHED_TRAIN_NET_H
#define COSCHED_TRAIN_NET_H

#include <stddef.h>

#include "model.h"

struct train_net;

/* A backend runs one op forward or backward; the ref backend is net.c's plain C layers. */
typedef struct train_backend {
    const char *name;
    int (*forward)(struct train_net *n, int op, int B, int training);
    int (*backward)(struct train_net *n, int op, int B);
    /* tensor t between the backend's layout and plain NCHW; NULL: it is plain already */
    int (*convert)(struct train_net *n, int t, const float *from, float *to, int to_plain);
    /* whether op's backward writes (not adds) its input gradient; NULL: all add */
    int (*overwrites)(struct train_net *n, int op);
    void (*destroy)(struct train_net *n);
    void *priv;
} train_backend;

typedef struct train_net {
    const train_model *m;
    int batch;                        /* the batch the activation block was sized for */
    float *params, *grads, *momentum; /* m->nparams floats each */
    float *state;                     /* m->nstate: BN running statistics */
    float *saved;                     /* m->nsaved: BN batch statistics for backward */
    float *acts, *dacts;              /* batch * m->act_per_sample floats each */
    float *scratch;                   /* scratch floats for the ref conv and fc */
    float *probs;                     /* batch * classes */
    int *labels;                      /* batch */
    float bn_momentum, bn_eps, smoothing;
    unsigned char *zero; /* per tensor: its gradient must be zeroed before backward */
    train_backend backend;
} train_net;

/* Allocate every block once for batch; backend is "ref" or "onednn" ("onednn:nofuse" keeps
 * batch-norm and ReLU apart, so that every op can be compared with ref on its own). */
int train_net_create(train_net *n, const train_model *m, int batch, const char *backend, char *err, size_t errlen);
void train_net_free(train_net *n);

/* n zeroed floats, 64-byte aligned; arenas of 4 MiB or more on huge pages where the kernel
 * grants them. Release with free(). NULL when out of memory. */
float *train_alloc_floats(size_t n);

/* Where tensor t of the activation block (or its gradient) starts. */
float *train_net_act(const train_net *n, int t);
float *train_net_dact(const train_net *n, int t);

/* Copy activation tensor t (or its gradient) out to / in from plain NCHW (not in the step:
 * a blocked layout is converted with a temporary primitive). */
int train_net_get(train_net *n, int t, int grad, float *plain);
int train_net_set(train_net *n, int t, int grad, const float *plain);

/* Forward B <= batch samples already in the input tensor with labels; returns the mean loss
 * (NAN if a backend op failed). training selects batch statistics for BN. The onednn
 * backend only runs B == batch (its primitives are built for it): pad short batches. */
float train_net_forward(train_net *n, int B, int training);
/* Backward from the loss of the last forward; accumulates into grads (zero them first). */
int train_net_backward(train_net *n, int B);

/* The reference implementation of one op, also used by other backends for ops they leave. */
int train_ref_forward(train_net *n, int op, int B, int training);
int train_ref_backward(train_net *n, int op, int B);

/* Set up the onednn backend on n (defined in onednn.c); fuse: BN+ReLU as one primitive. */
int train_onednn_init(train_net *n, int fuse, char *err, size_t errlen);

#endif
