/* net: allocation of the blocks of one network and the pass over its ops; the plain C
 * reference backend lives here too, as the op-by-op dispatch onto layers.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "layers.h"
#include "net.h"

/* Arenas of a few MiB or more start on a 2 MiB boundary and ask for transparent huge pages
 * (where the kernel grants them only on request): a step streams through hundreds of MiB of
 * activations and gradients, and with 4 KiB pages the TLB misses on most of it. */
#define HUGE_PAGE (2u << 20)

float *train_alloc_floats(size_t n)
{
    /* 64-byte alignment for vector loads; calloc semantics for a defined start */
    void *p = NULL;
    size_t bytes = (n ? n : 1) * sizeof(float);
    size_t align = bytes >= 2 * HUGE_PAGE ? HUGE_PAGE : 64;
    if (posix_memalign(&p, align, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (align == HUGE_PAGE)
        madvise(p, bytes, MADV_HUGEPAGE); /* advice only: 4 KiB pages work too */
#endif
    memset(p, 0, bytes);
    return p;
}

float *train_net_act(const train_net *n, int t)
{
    return n->acts + n->m->acts[t].off * (size_t)n->batch;
}

float *train_net_dact(const train_net *n, int t)
{
    return n->dacts + n->m->acts[t].off * (size_t)n->batch;
}

int train_net_create(train_net *n, const train_model *m, int batch, const char *backend, char *err, size_t errlen)
{
    memset(n, 0, sizeof(*n));
    n->m = m;
    n->batch = batch;
    n->bn_momentum = 0.1f;
    n->bn_eps = 1e-5f;
    size_t fc_scratch = 0;
    for (int i = 0; i < m->nops; i++)
        if (m->ops[i].kind == TRAIN_OP_FC) {
            size_t a = (size_t)m->ops[i].K * m->ops[i].C, b = (size_t)batch * m->ops[i].K;
            fc_scratch = a > b ? a : b;
        }
    size_t scratch = m->conv_scratch > fc_scratch ? m->conv_scratch : fc_scratch;
    n->params = train_alloc_floats(m->nparams);
    n->grads = train_alloc_floats(m->nparams);
    n->momentum = train_alloc_floats(m->nparams);
    n->state = train_alloc_floats(m->nstate);
    n->saved = train_alloc_floats(m->nsaved);
    n->acts = train_alloc_floats(m->act_per_sample * batch);
    n->dacts = train_alloc_floats(m->act_per_sample * batch);
    n->scratch = train_alloc_floats(scratch);
    n->probs = train_alloc_floats((size_t)batch * m->classes);
    n->labels = calloc(batch, sizeof(int));
    if (!n->params || !n->grads || !n->momentum || !n->state || !n->saved || !n->acts || !n->dacts || !n->scratch ||
        !n->probs || !n->labels) {
        snprintf(err, errlen, "cannot allocate %.1f MiB for %s at batch %d",
                 (3.0 * m->nparams + 2.0 * m->act_per_sample * batch) * 4 / 1048576, m->name, batch);
        train_net_free(n);
        return -1;
    }
    n->backend.name = "ref";
    n->backend.forward = train_ref_forward;
    n->backend.backward = train_ref_backward;
    int rc = 0;
    if (strcmp(backend, "onednn") == 0 || strcmp(backend, "onednn:nofuse") == 0) {
        rc = train_onednn_init(n, strcmp(backend, "onednn") == 0, err, errlen);
    } else if (strcmp(backend, "ref") != 0) {
        snprintf(err, errlen, "unknown backend '%s' (known: onednn, ref)", backend);
        rc = -1;
    }
    if (rc == 0 && !(n->zero = calloc(m->nacts, 1))) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    if (rc != 0) {
        train_net_free(n);
        return -1;
    }
    /* Zeroing the whole gradient block costs a pass over all activations every step: only
     * tensors whose first writer in backward order adds to it need it. */
    for (int t = 0; t < m->nacts; t++) {
        int first = -1;
        for (int i = m->nops - 1; i >= 0 && first < 0; i--)
            if ((m->ops[i].in == t || m->ops[i].in2 == t) && m->ops[i].kind != TRAIN_OP_RELU)
                first = i;
        n->zero[t] = !(first >= 0 && m->ops[first].in == t && m->ops[first].in2 != t && n->backend.overwrites &&
                       n->backend.overwrites(n, first));
    }
    return 0;
}

void train_net_free(train_net *n)
{
    if (n->backend.destroy)
        n->backend.destroy(n);
    free(n->params);
    free(n->grads);
    free(n->momentum);
    free(n->state);
    free(n->saved);
    free(n->acts);
    free(n->dacts);
    free(n->scratch);
    free(n->probs);
    free(n->labels);
    free(n->zero);
    memset(n, 0, sizeof(*n));
}

int train_net_get(train_net *n, int t, int grad, float *plain)
{
    const train_tensor *x = &n->m->acts[t];
    float *src = grad ? train_net_dact(n, t) : train_net_act(n, t);
    if (n->backend.convert)
        return n->backend.convert(n, t, src, plain, 1);
    memcpy(plain, src, sizeof(float) * n->batch * x->C * x->H * x->W);
    return 0;
}

int train_net_set(train_net *n, int t, int grad, const float *plain)
{
    const train_tensor *x = &n->m->acts[t];
    float *dst = grad ? train_net_dact(n, t) : train_net_act(n, t);
    if (n->backend.convert)
        return n->backend.convert(n, t, plain, dst, 0);
    memcpy(dst, plain, sizeof(float) * n->batch * x->C * x->H * x->W);
    return 0;
}

int train_ref_forward(train_net *n, int i, int B, int training)
{
    const train_op *op = &n->m->ops[i];
    float *x = train_net_act(n, op->in), *y = train_net_act(n, op->out), *p = n->params;
    size_t len = (size_t)B * op->C * op->H * op->W;
    switch (op->kind) {
    case TRAIN_OP_CONV:
        train_conv_forward(y, x, p + op->w, B, op->C, op->H, op->W, op->K, op->k, op->stride, op->pad, n->scratch);
        break;
    case TRAIN_OP_BN:
        if (training)
            train_bn_forward(y, n->saved + op->smean, n->saved + op->sinvstd, n->state + op->rmean, n->state + op->rvar,
                             x, p + op->w, p + op->b, B, op->C, op->H * op->W, n->bn_momentum, n->bn_eps);
        else
            train_bn_inference(y, x, p + op->w, p + op->b, n->state + op->rmean, n->state + op->rvar, B, op->C,
                               op->H * op->W, n->bn_eps);
        break;
    case TRAIN_OP_RELU: train_relu_forward(y, x, len); break;
    case TRAIN_OP_ADD: train_add_forward(y, x, train_net_act(n, op->in2), len); break;
    case TRAIN_OP_GAP: train_gap_forward(y, x, B, op->C, op->H * op->W); break;
    case TRAIN_OP_FC: train_fc_forward(y, x, p + op->w, p + op->b, B, op->C, op->K, n->scratch); break;
    }
    return 0;
}

int train_ref_backward(train_net *n, int i, int B)
{
    const train_op *op = &n->m->ops[i];
    const train_model *m = n->m;
    float *x = train_net_act(n, op->in), *y = train_net_act(n, op->out);
    float *dx = op->in == m->input ? NULL : train_net_dact(n, op->in);
    float *dy = train_net_dact(n, op->out), *p = n->params, *g = n->grads;
    size_t len = (size_t)B * op->C * op->H * op->W;
    switch (op->kind) {
    case TRAIN_OP_CONV:
        train_conv_backward(dx, g + op->w, dy, x, p + op->w, B, op->C, op->H, op->W, op->K, op->k, op->stride, op->pad,
                            n->scratch);
        break;
    case TRAIN_OP_BN:
        train_bn_backward(dx, g + op->w, g + op->b, dy, x, n->saved + op->smean, n->saved + op->sinvstd, p + op->w, B,
                          op->C, op->H * op->W);
        break;
    case TRAIN_OP_RELU: train_relu_backward_inplace(dy, y, len); break;
    case TRAIN_OP_ADD: train_add_backward(dx, train_net_dact(n, op->in2), dy, len); break;
    case TRAIN_OP_GAP: train_gap_backward(dx, dy, B, op->C, op->H * op->W); break;
    case TRAIN_OP_FC: train_fc_backward(dx, g + op->w, g + op->b, dy, x, p + op->w, B, op->C, op->K, n->scratch); break;
    }
    return 0;
}

float train_net_forward(train_net *n, int B, int training)
{
    for (int i = 0; i < n->m->nops; i++)
        if (n->backend.forward(n, i, B, training) != 0)
            return NAN;
    return train_xent_forward(n->probs, train_net_act(n, n->m->logits), n->labels, B, n->m->classes, n->smoothing);
}

int train_net_backward(train_net *n, int B)
{
    /* ops add into their input's gradient, so those tensors start from zero */
    for (int t = 0; t < n->m->nacts; t++)
        if (n->zero[t]) {
            const train_tensor *x = &n->m->acts[t];
            memset(train_net_dact(n, t), 0, sizeof(float) * n->batch * x->C * x->H * x->W);
        }
    train_xent_backward(train_net_dact(n, n->m->logits), n->probs, n->labels, B, n->m->classes, n->smoothing, 1.0f);
    for (int i = n->m->nops - 1; i >= 0; i--)
        if (n->backend.backward(n, i, B) != 0)
            return -1;
    return 0;
}
