/* onednn: the oneDNN (2.6, v2 C API) backend. Activations live in the blocked layout the CPU
 * likes (nChw16c / nChw8c); convolution, batch-norm (with its ReLU), the global average
 * pooling and the classifier run as primitives built once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "layers.h"
#include "net.h"

/* A primitive and its scratchpad, which points into the backend's one scratchpad arena so
 * that oneDNN allocates nothing while executing (user scratchpad mode). */
typedef struct {
    dnnl_primitive_t p;
    dnnl_memory_desc_t pad_md;
    dnnl_memory_t pad;
} prim;

/* A tensor as we keep it (our layout, in our blocks) and as a primitive wants it; when the
 * two differ, prim is an own buffer allocated at start-up and a reorder converts. */
typedef struct {
    dnnl_memory_t user, prim;
    prim reorder;
} port;

typedef struct {
    prim fwd, bwd_data, bwd_weights;
    port src, wei, dst;       /* forward */
    port ddst_d, wei_d, dsrc; /* backward data */
    port src_w, ddst_w, dwei; /* backward weights */
    int accumulate;
} conv_prims;

typedef struct {
    prim fwd, infer, bwd;
    dnnl_memory_t src, dst, mean, var, rmean, rvar, scale, shift, dsrc, ddst, dscale, dshift;
    dnnl_memory_t ws; /* fused ReLU: the mask forward keeps for backward */
    int accumulate, fused;
} bn_prims;

/* Global average pooling: (B,C,H,W) in our layout to (B,C,1,1), which we keep plain for
 * the classifier; the pooled end goes through a port when the primitive wants it blocked. */
typedef struct {
    prim fwd, bwd;
    dnnl_memory_t src, dsrc;
    port dst, ddst;
    int accumulate;
} pool_prims;

/* The classifier: inner product with bias on plain (B,C) input, (K,C) weights, (B,K) output. */
typedef struct {
    prim fwd, bwd_data, bwd_weights;
    dnnl_memory_t src, wei, bias, dst, ddst, dsrc, dwei, dbias;
    int accumulate;
} fc_prims;

typedef struct {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_attr_t attr;
    int block;              /* channel block of the activation layout */
    dnnl_memory_desc_t *md; /* per activation tensor: its layout in our blocks */
    conv_prims *conv;       /* per op, zero where the op is no convolution */
    bn_prims *bn;
    pool_prims *pool;
    fc_prims *fc;
    unsigned char *skip;      /* ReLU ops done inside the batch-norm or add before them */
    unsigned char *add_relu;  /* add ops that apply the following ReLU themselves */
    unsigned char *add_first; /* ... and are the first to write their first input's gradient */
    prim **prims;             /* every primitive, to attach scratchpads at the end */
    int nprims, capprims;
    void *pad; /* the scratchpad arena */
    size_t pad_size;
    float *scratch; /* a gradient that must be summed, not overwritten */
} onednn;

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        dnnl_status_t s_ = (call);                                                                                     \
        if (s_ != dnnl_success) {                                                                                      \
            snprintf(err, errlen, "oneDNN: %s failed (status %d)", #call, (int)s_);                                    \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

static int track(onednn *d, prim *p, const_dnnl_primitive_desc_t pd, char *err, size_t errlen)
{
    CHECK(dnnl_primitive_create(&p->p, pd));
    p->pad_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sz = dnnl_memory_desc_get_size(&p->pad_md);
    if (sz > d->pad_size)
        d->pad_size = sz;
    if (d->nprims == d->capprims) {
        d->capprims = d->capprims ? 2 * d->capprims : 256;
        prim **np = realloc(d->prims, sizeof(*np) * d->capprims);
        if (!np) {
            snprintf(err, errlen, "out of memory for oneDNN primitives");
            return -1;
        }
        d->prims = np;
    }
    d->prims[d->nprims++] = p;
    return 0;
}

static int make(onednn *d, prim *p, dnnl_primitive_desc_t *pd, const void *desc, const_dnnl_primitive_desc_t hint,
                char *err, size_t errlen)
{
    CHECK(dnnl_primitive_desc_create(pd, desc, d->attr, d->engine, hint));
    return track(d, p, *pd, err, errlen);
}

/* dir > 0: user -> prim before the primitive; dir < 0: prim -> user after it. */
static int port_init(onednn *d, port *p, const dnnl_memory_desc_t *user_md, void *ptr,
                     const dnnl_memory_desc_t *prim_md, int dir, char *err, size_t errlen)
{
    CHECK(dnnl_memory_create(&p->user, user_md, d->engine, ptr));
    if (dnnl_memory_desc_equal(user_md, prim_md)) {
        p->prim = p->user;
        return 0;
    }
    CHECK(dnnl_memory_create(&p->prim, prim_md, d->engine, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t pd;
    if (dir > 0)
        CHECK(dnnl_reorder_primitive_desc_create(&pd, user_md, d->engine, prim_md, d->engine, d->attr));
    else
        CHECK(dnnl_reorder_primitive_desc_create(&pd, prim_md, d->engine, user_md, d->engine, d->attr));
    int rc = track(d, &p->reorder, pd, err, errlen);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

static int exec(onednn *d, prim *p, int nargs, dnnl_exec_arg_t *args)
{
    if (p->pad)
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->pad};
    return dnnl_primitive_execute(p->p, d->stream, nargs, args) == dnnl_success ? 0 : -1;
}

static int port_reorder(onednn *d, port *p, int dir)
{
    if (!p->reorder.p)
        return 0;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, dir > 0 ? p->user : p->prim},
                               {DNNL_ARG_TO, dir > 0 ? p->prim : p->user}};
    return exec(d, &p->reorder, 2, args);
}

static void prim_free(prim *p)
{
    if (p->p)
        dnnl_primitive_destroy(p->p);
    if (p->pad)
        dnnl_memory_destroy(p->pad);
    memset(p, 0, sizeof(*p));
}

static void port_free(port *p)
{
    prim_free(&p->reorder);
    if (p->prim && p->prim != p->user)
        dnnl_memory_destroy(p->prim);
    if (p->user)
        dnnl_memory_destroy(p->user);
    memset(p, 0, sizeof(*p));
}

/* Whether an op later in the list also reads tensor t: backward reaches that op first, so
 * this op's input gradient must be added to what is there rather than written over it. */
static int shared_input(const train_net *n, int i, int t)
{
    for (int j = i + 1; j < n->m->nops; j++) {
        const train_op *o = &n->m->ops[j];
        if ((o->in == t || o->in2 == t) && o->kind != TRAIN_OP_RELU)
            return 1;
    }
    return 0;
}

static int conv_init(onednn *d, train_net *n, int i, char *err, size_t errlen)
{
    const train_op *op = &n->m->ops[i];
    conv_prims *c = &d->conv[i];
    dnnl_memory_desc_t src_a, dst_a, wei_u, wei_a;
    const dnnl_memory_desc_t *src_u = &d->md[op->in], *dst_u = &d->md[op->out];
    dnnl_dims_t sd = {n->batch, op->C, op->H, op->W}, dd = {n->batch, op->K, op->OH, op->OW};
    dnnl_dims_t wd = {op->K, op->C, op->k, op->k};
    dnnl_dims_t strides = {op->stride, op->stride}, pad = {op->pad, op->pad};
    /* every layout left to oneDNN (format_tag_any); ports reorder where it differs from ours */
    CHECK(dnnl_memory_desc_init_by_tag(&src_a, 4, sd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&dst_a, 4, dd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&wei_a, 4, wd, dnnl_f32, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&wei_u, 4, wd, dnnl_f32, dnnl_oihw));

    dnnl_convolution_desc_t fd, bd, wdsc;
    dnnl_primitive_desc_t fpd, bpd = NULL, wpd;
    CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &src_a, &wei_a, NULL,
                                             &dst_a, strides, pad, pad));
    if (make(d, &c->fwd, &fpd, &fd, NULL, err, errlen) != 0)
        return -1;
    int first = op->in == n->m->input;
    if (!first) {
        CHECK(dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &src_a, &wei_a, &dst_a, strides,
                                                       pad, pad));
        if (make(d, &c->bwd_data, &bpd, &bd, fpd, err, errlen) != 0)
            return -1;
    }
    CHECK(dnnl_convolution_backward_weights_desc_init(&wdsc, dnnl_convolution_direct, &src_a, &wei_a, NULL, &dst_a,
                                                      strides, pad, pad));
    if (make(d, &c->bwd_weights, &wpd, &wdsc, fpd, err, errlen) != 0)
        return -1;

    float *x = train_net_act(n, op->in), *y = train_net_act(n, op->out);
    float *dy = train_net_dact(n, op->out), *w = n->params + op->w, *dw = n->grads + op->w;
    c->accumulate = !first && shared_input(n, i, op->in);
    float *dx = first || c->accumulate ? d->scratch : train_net_dact(n, op->in);
#define Q(pd, what) dnnl_primitive_desc_query_md(pd, what, 0)
    int rc = 0;
    rc |= port_init(d, &c->src, src_u, x, Q(fpd, dnnl_query_src_md), 1, err, errlen);
    rc |= port_init(d, &c->wei, &wei_u, w, Q(fpd, dnnl_query_weights_md), 1, err, errlen);
    rc |= port_init(d, &c->dst, dst_u, y, Q(fpd, dnnl_query_dst_md), -1, err, errlen);
    if (bpd) {
        rc |= port_init(d, &c->ddst_d, dst_u, dy, Q(bpd, dnnl_query_diff_dst_md), 1, err, errlen);
        rc |= port_init(d, &c->wei_d, &wei_u, w, Q(bpd, dnnl_query_weights_md), 1, err, errlen);
        rc |= port_init(d, &c->dsrc, src_u, dx, Q(bpd, dnnl_query_diff_src_md), -1, err, errlen);
    }
    rc |= port_init(d, &c->src_w, src_u, x, Q(wpd, dnnl_query_src_md), 1, err, errlen);
    rc |= port_init(d, &c->ddst_w, dst_u, dy, Q(wpd, dnnl_query_diff_dst_md), 1, err, errlen);
    rc |= port_init(d, &c->dwei, &wei_u, dw, Q(wpd, dnnl_query_diff_weights_md), -1, err, errlen);
#undef Q
    dnnl_primitive_desc_destroy(fpd);
    if (bpd)
        dnnl_primitive_desc_destroy(bpd);
    dnnl_primitive_desc_destroy(wpd);
    return rc ? -1 : 0;
}

static int bn_init(onednn *d, train_net *n, int i, char *err, size_t errlen)
{
    const train_op *op = &n->m->ops[i];
    bn_prims *b = &d->bn[i];
    const dnnl_memory_desc_t *md = &d->md[op->in];
    dnnl_memory_desc_t cmd;
    dnnl_dims_t cd = {op->C};
    CHECK(dnnl_memory_desc_init_by_tag(&cmd, 1, cd, dnnl_f32, dnnl_a));
    unsigned ss = dnnl_use_scale | dnnl_use_shift | (b->fused ? dnnl_fuse_norm_relu : 0);
    dnnl_batch_normalization_desc_t fd, id, bd;
    dnnl_primitive_desc_t fpd, ipd, bpd;
    CHECK(dnnl_batch_normalization_forward_desc_init(&fd, dnnl_forward_training, md, n->bn_eps, ss));
    if (make(d, &b->fwd, &fpd, &fd, NULL, err, errlen) != 0)
        return -1;
    CHECK(dnnl_batch_normalization_forward_desc_init(&id, dnnl_forward_inference, md, n->bn_eps,
                                                     ss | dnnl_use_global_stats));
    if (make(d, &b->infer, &ipd, &id, NULL, err, errlen) != 0)
        return -1;
    CHECK(dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, md, md, n->bn_eps, ss));
    if (make(d, &b->bwd, &bpd, &bd, fpd, err, errlen) != 0)
        return -1;
    if (b->fused)
        CHECK(dnnl_memory_create(&b->ws, dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0), d->engine,
                                 DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(ipd);
    dnnl_primitive_desc_destroy(bpd);
    b->accumulate = shared_input(n, i, op->in);
    dnnl_engine_t e = d->engine;
    /* with this backend the saved-statistics slots hold mean and (biased) variance */
    CHECK(dnnl_memory_create(&b->src, md, e, train_net_act(n, op->in)));
    CHECK(dnnl_memory_create(&b->dst, &d->md[op->out], e, train_net_act(n, op->out)));
    CHECK(dnnl_memory_create(&b->mean, &cmd, e, n->saved + op->smean));
    CHECK(dnnl_memory_create(&b->var, &cmd, e, n->saved + op->sinvstd));
    CHECK(dnnl_memory_create(&b->rmean, &cmd, e, n->state + op->rmean));
    CHECK(dnnl_memory_create(&b->rvar, &cmd, e, n->state + op->rvar));
    CHECK(dnnl_memory_create(&b->scale, &cmd, e, n->params + op->w));
    CHECK(dnnl_memory_create(&b->shift, &cmd, e, n->params + op->b));
    CHECK(dnnl_memory_create(&b->dscale, &cmd, e, n->grads + op->w));
    CHECK(dnnl_memory_create(&b->dshift, &cmd, e, n->grads + op->b));
    CHECK(dnnl_memory_create(&b->ddst, &d->md[op->out], e, train_net_dact(n, op->out)));
    CHECK(dnnl_memory_create(&b->dsrc, md, e, b->accumulate ? d->scratch : train_net_dact(n, op->in)));
    return 0;
}

static int pool_init(onednn *d, train_net *n, int i, char *err, size_t errlen)
{
    const train_op *op = &n->m->ops[i];
    pool_prims *p = &d->pool[i];
    const dnnl_memory_desc_t *src = &d->md[op->in], *dst_u = &d->md[op->out];
    dnnl_dims_t dd = {n->batch, op->C, 1, 1};
    dnnl_dims_t kernel = {op->H, op->W}, strides = {1, 1}, dil = {0, 0}, pad = {0, 0};
    dnnl_memory_desc_t dst_a;
    CHECK(dnnl_memory_desc_init_by_tag(&dst_a, 4, dd, dnnl_f32, dnnl_format_tag_any));
    dnnl_pooling_v2_desc_t fd, bd;
    dnnl_primitive_desc_t fpd, bpd;
    CHECK(dnnl_pooling_v2_forward_desc_init(&fd, dnnl_forward_training, dnnl_pooling_avg_exclude_padding, src, &dst_a,
                                            strides, kernel, dil, pad, pad));
    if (make(d, &p->fwd, &fpd, &fd, NULL, err, errlen) != 0)
        return -1;
    const dnnl_memory_desc_t *dst_p = dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0);
    CHECK(dnnl_pooling_v2_backward_desc_init(&bd, dnnl_pooling_avg_exclude_padding, src, dst_p, strides, kernel, dil,
                                             pad, pad));
    if (make(d, &p->bwd, &bpd, &bd, fpd, err, errlen) != 0)
        return -1;
    p->accumulate = shared_input(n, i, op->in);
    int rc = 0;
    rc |= port_init(d, &p->dst, dst_u, train_net_act(n, op->out), dst_p, -1, err, errlen);
    rc |= port_init(d, &p->ddst, dst_u, train_net_dact(n, op->out),
                    dnnl_primitive_desc_query_md(bpd, dnnl_query_diff_dst_md, 0), 1, err, errlen);
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bpd);
    if (rc)
        return -1;
    CHECK(dnnl_memory_create(&p->src, src, d->engine, train_net_act(n, op->in)));
    CHECK(dnnl_memory_create(&p->dsrc, src, d->engine, p->accumulate ? d->scratch : train_net_dact(n, op->in)));
    return 0;
}

static int fc_init(onednn *d, train_net *n, int i, char *err, size_t errlen)
{
    const train_op *op = &n->m->ops[i];
    fc_prims *f = &d->fc[i];
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_dims_t sd = {n->batch, op->C}, wd = {op->K, op->C}, bd = {op->K}, dd = {n->batch, op->K};
    CHECK(dnnl_memory_desc_init_by_tag(&src, 2, sd, dnnl_f32, dnnl_nc));
    CHECK(dnnl_memory_desc_init_by_tag(&wei, 2, wd, dnnl_f32, dnnl_oi));
    CHECK(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a));
    CHECK(dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_nc));
    dnnl_inner_product_desc_t fdsc, bdsc, wdsc;
    dnnl_primitive_desc_t fpd, bpd, wpd;
    CHECK(dnnl_inner_product_forward_desc_init(&fdsc, dnnl_forward_training, &src, &wei, &bias, &dst));
    if (make(d, &f->fwd, &fpd, &fdsc, NULL, err, errlen) != 0)
        return -1;
    CHECK(dnnl_inner_product_backward_data_desc_init(&bdsc, &src, &wei, &dst));
    if (make(d, &f->bwd_data, &bpd, &bdsc, fpd, err, errlen) != 0)
        return -1;
    CHECK(dnnl_inner_product_backward_weights_desc_init(&wdsc, &src, &wei, &bias, &dst));
    if (make(d, &f->bwd_weights, &wpd, &wdsc, fpd, err, errlen) != 0)
        return -1;
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bpd);
    dnnl_primitive_desc_destroy(wpd);
    f->accumulate = shared_input(n, i, op->in);
    dnnl_engine_t e = d->engine;
    CHECK(dnnl_memory_create(&f->src, &src, e, train_net_act(n, op->in)));
    CHECK(dnnl_memory_create(&f->wei, &wei, e, n->params + op->w));
    CHECK(dnnl_memory_create(&f->bias, &bias, e, n->params + op->b));
    CHECK(dnnl_memory_create(&f->dst, &dst, e, train_net_act(n, op->out)));
    CHECK(dnnl_memory_create(&f->ddst, &dst, e, train_net_dact(n, op->out)));
    CHECK(dnnl_memory_create(&f->dsrc, &src, e, f->accumulate ? d->scratch : train_net_dact(n, op->in)));
    CHECK(dnnl_memory_create(&f->dwei, &wei, e, n->grads + op->w));
    CHECK(dnnl_memory_create(&f->dbias, &bias, e, n->grads + op->b));
    return 0;
}

/* The end of a residual block, out = max(a + b, 0), in one pass instead of two. restrict,
 * omp simd and loads outside the conditional let the compiler emit branch-free vector code:
 * a data-dependent branch here mispredicts on about half the elements. */
static void add_relu_forward(float *restrict out, const float *restrict a, const float *restrict b, size_t len)
{
#pragma omp parallel for simd schedule(static) if (len > 65536)
    for (size_t k = 0; k < len; k++) {
        float v = a[k] + b[k];
        out[k] = v > 0.0f ? v : 0.0f;
    }
}

/* The gradient passes the ReLU where the output is positive, then goes to both inputs; the
 * first input's gradient is written when no other op adds to it (first). */
static void add_relu_backward(float *restrict da, float *restrict db, const float *restrict dout,
                              const float *restrict out, size_t len, int first)
{
    if (first) {
#pragma omp parallel for simd schedule(static) if (len > 65536)
        for (size_t k = 0; k < len; k++) {
            float g = dout[k];
            g = out[k] > 0.0f ? g : 0.0f;
            da[k] = g;
            db[k] += g;
        }
    } else {
#pragma omp parallel for simd schedule(static) if (len > 65536)
        for (size_t k = 0; k < len; k++) {
            float g = dout[k];
            g = out[k] > 0.0f ? g : 0.0f;
            da[k] += g;
            db[k] += g;
        }
    }
}

static int blocked(const onednn *d, const train_net *n, int t)
{
    const train_tensor *x = &n->m->acts[t];
    return t != n->m->input && x->C % d->block == 0 && x->H * x->W > 1;
}

static void add_into(float *restrict dst, const float *restrict src, size_t len)
{
#pragma omp parallel for simd schedule(static) if (len > 65536)
    for (size_t k = 0; k < len; k++)
        dst[k] += src[k];
}

static int onednn_forward(train_net *n, int i, int B, int training)
{
    onednn *d = n->backend.priv;
    const train_op *op = &n->m->ops[i];
    if (B != n->batch)
        return -1; /* primitives and layouts are fixed to the batch; callers pad */
    if (d->skip[i])
        return 0;
    if (op->kind == TRAIN_OP_CONV) {
        conv_prims *c = &d->conv[i];
        if (port_reorder(d, &c->src, 1) || port_reorder(d, &c->wei, 1))
            return -1;
        dnnl_exec_arg_t a[4] = {{DNNL_ARG_SRC, c->src.prim},
                                {DNNL_ARG_WEIGHTS, c->wei.prim},
                                {DNNL_ARG_DST, c->dst.prim}};
        return exec(d, &c->fwd, 3, a) || port_reorder(d, &c->dst, -1);
    }
    if (op->kind == TRAIN_OP_BN) {
        bn_prims *b = &d->bn[i];
        dnnl_exec_arg_t a[8] = {{DNNL_ARG_SRC, b->src},
                                {DNNL_ARG_DST, b->dst},
                                {DNNL_ARG_MEAN, training ? b->mean : b->rmean},
                                {DNNL_ARG_VARIANCE, training ? b->var : b->rvar},
                                {DNNL_ARG_SCALE, b->scale},
                                {DNNL_ARG_SHIFT, b->shift},
                                {DNNL_ARG_WORKSPACE, b->ws}};
        if (exec(d, training ? &b->fwd : &b->infer, training && b->fused ? 7 : 6, a))
            return -1;
        if (training) {
            /* oneDNN leaves running statistics to us: PyTorch's update, unbiased variance */
            float *mean = n->saved + op->smean, *var = n->saved + op->sinvstd;
            float *rm = n->state + op->rmean, *rv = n->state + op->rvar, mo = n->bn_momentum;
            double cnt = (double)B * op->H * op->W, unbias = cnt > 1 ? cnt / (cnt - 1) : 1;
            for (int c = 0; c < op->C; c++) {
                rm[c] = (1 - mo) * rm[c] + mo * mean[c];
                rv[c] = (1 - mo) * rv[c] + mo * (float)(var[c] * unbias);
            }
        }
        return 0;
    }
    if (op->kind == TRAIN_OP_ADD && d->add_relu[i]) {
        add_relu_forward(train_net_act(n, op->out), train_net_act(n, op->in), train_net_act(n, op->in2),
                         (size_t)B * op->C * op->H * op->W);
        return 0;
    }
    if (op->kind == TRAIN_OP_GAP) {
        pool_prims *p = &d->pool[i];
        dnnl_exec_arg_t a[3] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DST, p->dst.prim}};
        return exec(d, &p->fwd, 2, a) || port_reorder(d, &p->dst, -1);
    }
    if (op->kind == TRAIN_OP_FC && d->fc[i].fwd.p) {
        fc_prims *f = &d->fc[i];
        dnnl_exec_arg_t a[5] = {{DNNL_ARG_SRC, f->src},
                                {DNNL_ARG_WEIGHTS, f->wei},
                                {DNNL_ARG_BIAS, f->bias},
                                {DNNL_ARG_DST, f->dst}};
        return exec(d, &f->fwd, 4, a);
    }
    /* ReLU and add are elementwise, so the reference runs on any layout */
    return train_ref_forward(n, i, B, training);
}

static int onednn_backward(train_net *n, int i, int B)
{
    onednn *d = n->backend.priv;
    const train_op *op = &n->m->ops[i];
    size_t in_len = (size_t)B * op->C * op->H * op->W;
    if (B != n->batch)
        return -1;
    if (d->skip[i])
        return 0;
    if (op->kind == TRAIN_OP_CONV) {
        conv_prims *c = &d->conv[i];
        if (port_reorder(d, &c->src_w, 1) || port_reorder(d, &c->ddst_w, 1))
            return -1;
        dnnl_exec_arg_t w[4] = {{DNNL_ARG_SRC, c->src_w.prim},
                                {DNNL_ARG_DIFF_DST, c->ddst_w.prim},
                                {DNNL_ARG_DIFF_WEIGHTS, c->dwei.prim}};
        if (exec(d, &c->bwd_weights, 3, w) || port_reorder(d, &c->dwei, -1))
            return -1;
        if (!c->bwd_data.p)
            return 0; /* the network input needs no gradient */
        if (port_reorder(d, &c->ddst_d, 1) || port_reorder(d, &c->wei_d, 1))
            return -1;
        dnnl_exec_arg_t a[4] = {{DNNL_ARG_DIFF_DST, c->ddst_d.prim},
                                {DNNL_ARG_WEIGHTS, c->wei_d.prim},
                                {DNNL_ARG_DIFF_SRC, c->dsrc.prim}};
        if (exec(d, &c->bwd_data, 3, a) || port_reorder(d, &c->dsrc, -1))
            return -1;
        if (c->accumulate)
            add_into(train_net_dact(n, op->in), d->scratch, in_len);
        return 0;
    }
    if (op->kind == TRAIN_OP_BN) {
        bn_prims *b = &d->bn[i];
        dnnl_exec_arg_t a[11] = {{DNNL_ARG_SRC, b->src},           {DNNL_ARG_MEAN, b->mean},
                                 {DNNL_ARG_VARIANCE, b->var},      {DNNL_ARG_DIFF_DST, b->ddst},
                                 {DNNL_ARG_SCALE, b->scale},       {DNNL_ARG_SHIFT, b->shift},
                                 {DNNL_ARG_DIFF_SRC, b->dsrc},     {DNNL_ARG_DIFF_SCALE, b->dscale},
                                 {DNNL_ARG_DIFF_SHIFT, b->dshift}, {DNNL_ARG_WORKSPACE, b->ws}};
        if (exec(d, &b->bwd, b->fused ? 10 : 9, a))
            return -1;
        if (b->accumulate)
            add_into(train_net_dact(n, op->in), d->scratch, in_len);
        return 0;
    }
    if (op->kind == TRAIN_OP_ADD && d->add_relu[i]) {
        add_relu_backward(train_net_dact(n, op->in), train_net_dact(n, op->in2), train_net_dact(n, op->out),
                          train_net_act(n, op->out), in_len, d->add_first[i]);
        return 0;
    }
    if (op->kind == TRAIN_OP_GAP) {
        pool_prims *p = &d->pool[i];
        if (port_reorder(d, &p->ddst, 1))
            return -1;
        dnnl_exec_arg_t a[3] = {{DNNL_ARG_DIFF_DST, p->ddst.prim}, {DNNL_ARG_DIFF_SRC, p->dsrc}};
        if (exec(d, &p->bwd, 2, a))
            return -1;
        if (p->accumulate)
            add_into(train_net_dact(n, op->in), d->scratch, in_len);
        return 0;
    }
    if (op->kind == TRAIN_OP_FC && d->fc[i].fwd.p) {
        fc_prims *f = &d->fc[i];
        dnnl_exec_arg_t w[5] = {{DNNL_ARG_SRC, f->src},
                                {DNNL_ARG_DIFF_DST, f->ddst},
                                {DNNL_ARG_DIFF_WEIGHTS, f->dwei},
                                {DNNL_ARG_DIFF_BIAS, f->dbias}};
        dnnl_exec_arg_t a[4] = {{DNNL_ARG_DIFF_DST, f->ddst}, {DNNL_ARG_WEIGHTS, f->wei}, {DNNL_ARG_DIFF_SRC, f->dsrc}};
        if (exec(d, &f->bwd_weights, 4, w) || exec(d, &f->bwd_data, 3, a))
            return -1;
        if (f->accumulate)
            add_into(train_net_dact(n, op->in), d->scratch, in_len);
        return 0;
    }
    return train_ref_backward(n, i, B);
}

/* Primitives write their input gradient when no later op shares the input. */
static int onednn_overwrites(train_net *n, int i)
{
    onednn *d = n->backend.priv;
    const train_op *op = &n->m->ops[i];
    if (op->kind == TRAIN_OP_CONV)
        return d->conv[i].bwd_data.p && !d->conv[i].accumulate;
    if (op->kind == TRAIN_OP_BN)
        return !d->bn[i].accumulate;
    if (op->kind == TRAIN_OP_ADD)
        return d->add_first[i];
    if (op->kind == TRAIN_OP_GAP)
        return !d->pool[i].accumulate;
    if (op->kind == TRAIN_OP_FC)
        return d->fc[i].fwd.p && !d->fc[i].accumulate;
    return 0;
}

/* Tensor t between our layout and plain NCHW, for tests and inspection (allocates). */
static int onednn_convert(train_net *n, int t, const float *from, float *to, int to_plain)
{
    onednn *d = n->backend.priv;
    const train_tensor *x = &n->m->acts[t];
    if (!blocked(d, n, t)) {
        memcpy(to, from, sizeof(float) * n->batch * x->C * x->H * x->W);
        return 0;
    }
    dnnl_memory_desc_t plain;
    dnnl_dims_t dims = {n->batch, x->C, x->H, x->W};
    dnnl_memory_t a = NULL, b = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t r = NULL;
    int rc = -1;
    if (dnnl_memory_desc_init_by_tag(&plain, 4, dims, dnnl_f32, dnnl_nchw) != dnnl_success)
        return -1;
    const dnnl_memory_desc_t *src = to_plain ? &d->md[t] : &plain, *dst = to_plain ? &plain : &d->md[t];
    if (dnnl_memory_create(&a, src, d->engine, (void *)from) == dnnl_success &&
        dnnl_memory_create(&b, dst, d->engine, to) == dnnl_success &&
        dnnl_reorder_primitive_desc_create(&pd, src, d->engine, dst, d->engine, NULL) == dnnl_success &&
        dnnl_primitive_create(&r, pd) == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
        rc = dnnl_primitive_execute(r, d->stream, 2, args) == dnnl_success &&
                     dnnl_stream_wait(d->stream) == dnnl_success
                 ? 0
                 : -1;
    }
    if (r)
        dnnl_primitive_destroy(r);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (a)
        dnnl_memory_destroy(a);
    if (b)
        dnnl_memory_destroy(b);
    return rc;
}

static void onednn_destroy(train_net *n)
{
    onednn *d = n->backend.priv;
    if (!d)
        return;
    for (int i = 0; i < n->m->nops; i++) {
        if (d->conv) {
            conv_prims *c = &d->conv[i];
            port *ports[] = {&c->src,  &c->wei,   &c->dst,    &c->ddst_d, &c->wei_d,
                             &c->dsrc, &c->src_w, &c->ddst_w, &c->dwei};
            for (size_t k = 0; k < sizeof(ports) / sizeof(ports[0]); k++)
                port_free(ports[k]);
            prim_free(&c->fwd);
            prim_free(&c->bwd_data);
            prim_free(&c->bwd_weights);
        }
        if (d->bn) {
            bn_prims *b = &d->bn[i];
            dnnl_memory_t mems[] = {b->src,   b->dst,  b->mean, b->var,    b->rmean,  b->rvar, b->scale,
                                    b->shift, b->dsrc, b->ddst, b->dscale, b->dshift, b->ws};
            for (size_t k = 0; k < sizeof(mems) / sizeof(mems[0]); k++)
                if (mems[k])
                    dnnl_memory_destroy(mems[k]);
            prim_free(&b->fwd);
            prim_free(&b->infer);
            prim_free(&b->bwd);
        }
        if (d->pool) {
            pool_prims *p = &d->pool[i];
            port_free(&p->dst);
            port_free(&p->ddst);
            if (p->src)
                dnnl_memory_destroy(p->src);
            if (p->dsrc)
                dnnl_memory_destroy(p->dsrc);
            prim_free(&p->fwd);
            prim_free(&p->bwd);
        }
        if (d->fc) {
            fc_prims *f = &d->fc[i];
            dnnl_memory_t mems[] = {f->src, f->wei, f->bias, f->dst, f->ddst, f->dsrc, f->dwei, f->dbias};
            for (size_t k = 0; k < sizeof(mems) / sizeof(mems[0]); k++)
                if (mems[k])
                    dnnl_memory_destroy(mems[k]);
            prim_free(&f->fwd);
            prim_free(&f->bwd_data);
            prim_free(&f->bwd_weights);
        }
    }
    free(d->conv);
    free(d->bn);
    free(d->pool);
    free(d->fc);
    free(d->skip);
    free(d->add_relu);
    free(d->add_first);
    free(d->md);
    free(d->prims);
    free(d->pad);
    free(d->scratch);
    if (d->attr)
        dnnl_primitive_attr_destroy(d->attr);
    if (d->stream)
        dnnl_stream_destroy(d->stream);
    if (d->engine)
        dnnl_engine_destroy(d->engine);
    free(d);
    n->backend.priv = NULL;
}

int train_onednn_init(train_net *n, int fuse, char *err, size_t errlen)
{
    onednn *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(err, errlen, "out of memory for the onednn backend");
        return -1;
    }
    n->backend.name = "onednn";
    n->backend.forward = onednn_forward;
    n->backend.backward = onednn_backward;
    n->backend.convert = onednn_convert;
    n->backend.overwrites = onednn_overwrites;
    n->backend.destroy = onednn_destroy;
    n->backend.priv = d;
    const train_model *m = n->m;
    /* 16 channels fill an AVX-512 register, 8 an AVX2 one: the blocks oneDNN's kernels use */
    d->block = dnnl_get_effective_cpu_isa() >= dnnl_cpu_isa_avx512_core ? 16 : 8;
    size_t largest = 0;
    for (int t = 0; t < m->nacts; t++) {
        size_t s = (size_t)m->acts[t].C * m->acts[t].H * m->acts[t].W;
        largest = s > largest ? s : largest;
    }
    d->md = calloc(m->nacts, sizeof(*d->md));
    d->conv = calloc(m->nops, sizeof(*d->conv));
    d->bn = calloc(m->nops, sizeof(*d->bn));
    d->pool = calloc(m->nops, sizeof(*d->pool));
    d->fc = calloc(m->nops, sizeof(*d->fc));
    d->skip = calloc(m->nops, 1);
    d->add_relu = calloc(m->nops, 1);
    d->add_first = calloc(m->nops, 1);
    d->scratch = train_alloc_floats(largest * n->batch);
    if (!d->md || !d->conv || !d->bn || !d->pool || !d->fc || !d->skip || !d->add_relu || !d->add_first ||
        !d->scratch) {
        snprintf(err, errlen, "out of memory for the onednn backend");
        return -1;
    }
    for (int t = 0; t < m->nacts; t++) {
        dnnl_dims_t dims = {n->batch, m->acts[t].C, m->acts[t].H, m->acts[t].W};
        dnnl_format_tag_t tag = !blocked(d, n, t) ? dnnl_nchw : d->block == 16 ? dnnl_nChw16c : dnnl_nChw8c;
        CHECK(dnnl_memory_desc_init_by_tag(&d->md[t], 4, dims, dnnl_f32, tag));
    }
    CHECK(dnnl_engine_create(&d->engine, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&d->stream, d->engine, dnnl_stream_default_flags));
    CHECK(dnnl_primitive_attr_create(&d->attr));
    CHECK(dnnl_primitive_attr_set_scratchpad_mode(d->attr, dnnl_scratchpad_mode_user));
    /* a ReLU right after a batch-norm, in place on its output, runs inside it */
    for (int i = 0; fuse && i + 1 < m->nops; i++)
        if (m->ops[i].kind == TRAIN_OP_BN && m->ops[i + 1].kind == TRAIN_OP_RELU && m->ops[i + 1].in == m->ops[i].out)
            d->bn[i].fused = 1, d->skip[i + 1] = 1;
    for (int i = 0; fuse && i + 1 < m->nops; i++)
        if (m->ops[i].kind == TRAIN_OP_ADD && m->ops[i + 1].kind == TRAIN_OP_RELU &&
            m->ops[i + 1].in == m->ops[i].out) {
            d->add_relu[i] = 1, d->skip[i + 1] = 1;
            d->add_first[i] = m->ops[i].in != m->ops[i].in2 && !shared_input(n, i, m->ops[i].in);
        }
    for (int i = 0; i < m->nops; i++) {
        int rc = 0;
        if (m->ops[i].kind == TRAIN_OP_CONV)
            rc = conv_init(d, n, i, err, errlen);
        else if (m->ops[i].kind == TRAIN_OP_BN)
            rc = bn_init(d, n, i, err, errlen);
        else if (m->ops[i].kind == TRAIN_OP_GAP)
            rc = pool_init(d, n, i, err, errlen);
        else if (m->ops[i].kind == TRAIN_OP_FC && m->ops[i].H * m->ops[i].W == 1)
            rc = fc_init(d, n, i, err, errlen); /* on a spatial input the reference runs */
        if (rc != 0)
            return -1;
    }
    /* one scratchpad arena for all primitives: they run one at a time */
    size_t pad_floats = (d->pad_size + sizeof(float) - 1) / sizeof(float);
    if (d->pad_size && !(d->pad = train_alloc_floats(pad_floats))) {
        snprintf(err, errlen, "cannot allocate the %zu-byte oneDNN scratchpad", d->pad_size);
        return -1;
    }
    for (int k = 0; k < d->nprims; k++)
        if (dnnl_memory_desc_get_size(&d->prims[k]->pad_md) > 0)
            CHECK(dnnl_memory_create(&d->prims[k]->pad, &d->prims[k]->pad_md, d->engine, d->pad));
    return 0;
}
