/* onednn: the oneDNN (v2 C API) backend. Convolutions forward, backward-data and
 * backward-weights run as oneDNN primitives built once at start-up; other ops use ref. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "layers.h"
#include "net.h"

/* A tensor as we keep it (user layout, in our blocks) and as the primitive wants it; when the
 * layouts differ, prim is an own buffer and a reorder primitive converts, built once. */
typedef struct {
	dnnl_memory_t user, prim;
	dnnl_primitive_t reorder;
} port;

typedef struct {
	dnnl_primitive_t fwd, bwd_data, bwd_weights;
	port src, wei, dst;                 /* forward */
	port ddst_d, wei_d, dsrc;           /* backward data */
	port src_w, ddst_w, dwei;           /* backward weights */
	int accumulate;                     /* dsrc lands in scratch and is added: input shared */
	float *dsrc_buf;
} conv_prims;

typedef struct {
	dnnl_engine_t engine;
	dnnl_stream_t stream;
	conv_prims *conv;                   /* per op; zeroed for ops that are not conv */
	float *scratch;                     /* batch * largest activation */
} onednn;

#define CHECK(call)                                                                     \
	do {                                                                            \
		dnnl_status_t s_ = (call);                                              \
		if (s_ != dnnl_success) {                                               \
			snprintf(err, errlen, "oneDNN: %s failed (status %d)", #call, (int)s_); \
			return -1;                                                      \
		}                                                                       \
	} while (0)

/* dir > 0: user -> prim before the primitive; dir < 0: prim -> user after it. */
static int port_init(port *p, dnnl_engine_t e, const dnnl_memory_desc_t *user_md, void *ptr,
                     const dnnl_memory_desc_t *prim_md, int dir, char *err, size_t errlen)
{
	CHECK(dnnl_memory_create(&p->user, user_md, e, ptr));
	if (dnnl_memory_desc_equal(user_md, prim_md)) {
		p->prim = p->user;
		return 0;
	}
	CHECK(dnnl_memory_create(&p->prim, prim_md, e, DNNL_MEMORY_ALLOCATE));
	dnnl_primitive_desc_t pd;
	if (dir > 0)
		CHECK(dnnl_reorder_primitive_desc_create(&pd, user_md, e, prim_md, e, NULL));
	else
		CHECK(dnnl_reorder_primitive_desc_create(&pd, prim_md, e, user_md, e, NULL));
	dnnl_status_t s = dnnl_primitive_create(&p->reorder, pd);
	dnnl_primitive_desc_destroy(pd);
	CHECK(s);
	return 0;
}

static void port_free(port *p)
{
	if (p->reorder)
		dnnl_primitive_destroy(p->reorder);
	if (p->prim && p->prim != p->user)
		dnnl_memory_destroy(p->prim);
	if (p->user)
		dnnl_memory_destroy(p->user);
	memset(p, 0, sizeof(*p));
}

static int port_reorder(port *p, dnnl_stream_t s, int dir)
{
	if (!p->reorder)
		return 0;
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, dir > 0 ? p->user : p->prim },
		                    { DNNL_ARG_TO, dir > 0 ? p->prim : p->user } };
	return dnnl_primitive_execute(p->reorder, s, 2, args) == dnnl_success ? 0 : -1;
}

static int make(dnnl_primitive_t *prim, dnnl_primitive_desc_t *pd, const void *desc,
                dnnl_engine_t e, const_dnnl_primitive_desc_t hint, char *err, size_t errlen)
{
	CHECK(dnnl_primitive_desc_create(pd, desc, NULL, e, hint));
	CHECK(dnnl_primitive_create(prim, *pd));
	return 0;
}

static int conv_init(onednn *d, train_net *n, int i, char *err, size_t errlen)
{
	const train_op *op = &n->m->ops[i];
	conv_prims *c = &d->conv[i];
	dnnl_engine_t e = d->engine;
	dnnl_memory_desc_t src_u, dst_u, wei_u, src_a, dst_a, wei_a;
	dnnl_dims_t sd = { n->batch, op->C, op->H, op->W }, dd = { n->batch, op->K, op->OH, op->OW };
	dnnl_dims_t wd = { op->K, op->C, op->k, op->k };
	dnnl_dims_t strides = { op->stride, op->stride }, pad = { op->pad, op->pad };
	CHECK(dnnl_memory_desc_init_by_tag(&src_u, 4, sd, dnnl_f32, dnnl_nchw));
	CHECK(dnnl_memory_desc_init_by_tag(&dst_u, 4, dd, dnnl_f32, dnnl_nchw));
	CHECK(dnnl_memory_desc_init_by_tag(&wei_u, 4, wd, dnnl_f32, dnnl_oihw));
	/* activations stay NCHW in our blocks (the other ops are ref); weights as oneDNN likes */
	src_a = src_u, dst_a = dst_u;
	CHECK(dnnl_memory_desc_init_by_tag(&wei_a, 4, wd, dnnl_f32, dnnl_format_tag_any));

	dnnl_convolution_desc_t fd, bd, wdsc;
	dnnl_primitive_desc_t fpd, bpd, wpd;
	CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct,
	                                         &src_a, &wei_a, NULL, &dst_a, strides, pad, pad));
	if (make(&c->fwd, &fpd, &fd, e, NULL, err, errlen) != 0)
		return -1;
	CHECK(dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &src_a, &wei_a,
	                                               &dst_a, strides, pad, pad));
	if (make(&c->bwd_data, &bpd, &bd, e, fpd, err, errlen) != 0)
		return -1;
	CHECK(dnnl_convolution_backward_weights_desc_init(&wdsc, dnnl_convolution_direct, &src_a,
	                                                  &wei_a, NULL, &dst_a, strides, pad, pad));
	if (make(&c->bwd_weights, &wpd, &wdsc, e, fpd, err, errlen) != 0)
		return -1;

	float *x = train_net_act(n, op->in), *y = train_net_act(n, op->out);
	float *dy = train_net_dact(n, op->out), *w = n->params + op->w, *dw = n->grads + op->w;
	/* the gradient of a tensor read by several ops must be summed, not overwritten: the
	 * first op to reach it in backward order writes, later ones go through scratch */
	c->accumulate = 0;
	for (int j = i + 1; j < n->m->nops; j++) {
		const train_op *o = &n->m->ops[j];
		if ((o->in == op->in || o->in2 == op->in) && o->kind != TRAIN_OP_RELU)
			c->accumulate = 1;
	}
	float *dx = op->in == n->m->input ? d->scratch
	            : c->accumulate ? d->scratch : train_net_dact(n, op->in);
	const dnnl_memory_desc_t *q;
	int rc = 0;
	q = dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0);
	rc |= port_init(&c->src, e, &src_u, x, q, 1, err, errlen);
	q = dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
	rc |= port_init(&c->wei, e, &wei_u, w, q, 1, err, errlen);
	q = dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0);
	rc |= port_init(&c->dst, e, &dst_u, y, q, -1, err, errlen);
	q = dnnl_primitive_desc_query_md(bpd, dnnl_query_diff_dst_md, 0);
	rc |= port_init(&c->ddst_d, e, &dst_u, dy, q, 1, err, errlen);
	q = dnnl_primitive_desc_query_md(bpd, dnnl_query_weights_md, 0);
	rc |= port_init(&c->wei_d, e, &wei_u, w, q, 1, err, errlen);
	q = dnnl_primitive_desc_query_md(bpd, dnnl_query_diff_src_md, 0);
	rc |= port_init(&c->dsrc, e, &src_u, dx, q, -1, err, errlen);
	q = dnnl_primitive_desc_query_md(wpd, dnnl_query_src_md, 0);
	rc |= port_init(&c->src_w, e, &src_u, x, q, 1, err, errlen);
	q = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_dst_md, 0);
	rc |= port_init(&c->ddst_w, e, &dst_u, dy, q, 1, err, errlen);
	q = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 0);
	rc |= port_init(&c->dwei, e, &wei_u, dw, q, -1, err, errlen);
	dnnl_primitive_desc_destroy(fpd);
	dnnl_primitive_desc_destroy(bpd);
	dnnl_primitive_desc_destroy(wpd);
	return rc ? -1 : 0;
}

static int exec(dnnl_primitive_t p, dnnl_stream_t s, int nargs, const dnnl_exec_arg_t *args)
{
	return dnnl_primitive_execute(p, s, nargs, args) == dnnl_success ? 0 : -1;
}

static int onednn_forward(train_net *n, int i, int B, int training)
{
	onednn *d = n->backend.priv;
	conv_prims *c = &d->conv[i];
	/* primitives are built for the full batch; a short validation batch takes ref */
	if (n->m->ops[i].kind != TRAIN_OP_CONV || B != n->batch || !c->fwd)
		return train_ref_forward(n, i, B, training);
	if (port_reorder(&c->src, d->stream, 1) || port_reorder(&c->wei, d->stream, 1))
		return -1;
	dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, c->src.prim }, { DNNL_ARG_WEIGHTS, c->wei.prim },
		                    { DNNL_ARG_DST, c->dst.prim } };
	if (exec(c->fwd, d->stream, 3, args) || port_reorder(&c->dst, d->stream, -1))
		return -1;
	return dnnl_stream_wait(d->stream) == dnnl_success ? 0 : -1;
}

static int onednn_backward(train_net *n, int i, int B)
{
	onednn *d = n->backend.priv;
	conv_prims *c = &d->conv[i];
	const train_op *op = &n->m->ops[i];
	if (op->kind != TRAIN_OP_CONV || B != n->batch || !c->fwd)
		return train_ref_backward(n, i, B);
	if (port_reorder(&c->src_w, d->stream, 1) || port_reorder(&c->ddst_w, d->stream, 1))
		return -1;
	dnnl_exec_arg_t wargs[3] = { { DNNL_ARG_SRC, c->src_w.prim },
		                     { DNNL_ARG_DIFF_DST, c->ddst_w.prim },
		                     { DNNL_ARG_DIFF_WEIGHTS, c->dwei.prim } };
	if (exec(c->bwd_weights, d->stream, 3, wargs) || port_reorder(&c->dwei, d->stream, -1))
		return -1;
	if (op->in == n->m->input)
		return dnnl_stream_wait(d->stream) == dnnl_success ? 0 : -1;
	if (port_reorder(&c->ddst_d, d->stream, 1) || port_reorder(&c->wei_d, d->stream, 1))
		return -1;
	dnnl_exec_arg_t dargs[3] = { { DNNL_ARG_DIFF_DST, c->ddst_d.prim },
		                     { DNNL_ARG_WEIGHTS, c->wei_d.prim },
		                     { DNNL_ARG_DIFF_SRC, c->dsrc.prim } };
	if (exec(c->bwd_data, d->stream, 3, dargs) || port_reorder(&c->dsrc, d->stream, -1))
		return -1;
	if (dnnl_stream_wait(d->stream) != dnnl_success)
		return -1;
	if (c->accumulate) {
		size_t len = (size_t)B * op->C * op->H * op->W;
		float *dx = train_net_dact(n, op->in);
#pragma omp parallel for schedule(static) if (len > 65536)
		for (size_t k = 0; k < len; k++)
			dx[k] += d->scratch[k];
	}
	return 0;
}

static void onednn_destroy(train_net *n)
{
	onednn *d = n->backend.priv;
	if (!d)
		return;
	for (int i = 0; d->conv && i < n->m->nops; i++) {
		conv_prims *c = &d->conv[i];
		port *ports[] = { &c->src, &c->wei, &c->dst, &c->ddst_d, &c->wei_d, &c->dsrc,
			          &c->src_w, &c->ddst_w, &c->dwei };
		for (size_t k = 0; k < sizeof(ports) / sizeof(ports[0]); k++)
			port_free(ports[k]);
		if (c->fwd)
			dnnl_primitive_destroy(c->fwd);
		if (c->bwd_data)
			dnnl_primitive_destroy(c->bwd_data);
		if (c->bwd_weights)
			dnnl_primitive_destroy(c->bwd_weights);
	}
	free(d->conv);
	free(d->scratch);
	if (d->stream)
		dnnl_stream_destroy(d->stream);
	if (d->engine)
		dnnl_engine_destroy(d->engine);
	free(d);
	n->backend.priv = NULL;
}

int train_onednn_init(train_net *n, char *err, size_t errlen)
{
	onednn *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory for the onednn backend");
		return -1;
	}
	n->backend.name = "onednn";
	n->backend.forward = onednn_forward;
	n->backend.backward = onednn_backward;
	n->backend.destroy = onednn_destroy;
	n->backend.priv = d;
	size_t largest = 0;
	for (int t = 0; t < n->m->nacts; t++) {
		size_t s = (size_t)n->m->acts[t].C * n->m->acts[t].H * n->m->acts[t].W;
		if (s > largest)
			largest = s;
	}
	d->conv = calloc(n->m->nops, sizeof(*d->conv));
	d->scratch = malloc(sizeof(float) * largest * n->batch);
	if (!d->conv || !d->scratch) {
		snprintf(err, errlen, "out of memory for the onednn backend");
		return -1;
	}
	CHECK(dnnl_engine_create(&d->engine, dnnl_cpu, 0));
	CHECK(dnnl_stream_create(&d->stream, d->engine, dnnl_stream_default_flags));
	for (int i = 0; i < n->m->nops; i++)
		if (n->m->ops[i].kind == TRAIN_OP_CONV && conv_init(d, n, i, err, errlen) != 0)
			return -1;
	return 0;
}
