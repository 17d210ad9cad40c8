/* model: builds the op list and block layout of every network in the table, and initialises it.
 * One table row per model; the builder below turns (block kind, widths, depths) into ops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "model.h"
#include "rng.h"

enum { BASIC, BOTTLENECK };

static const struct {
    const char *name;
    int block; /* BASIC (two 3x3) or BOTTLENECK (1x1, 3x3, 1x1 x4) */
    int stem;  /* channels of the 3x3 stem convolution */
    int nstages;
    int width[4]; /* channels of each stage (before bottleneck expansion) */
    int depth[4]; /* blocks per stage */
} table[] = {
    /* He et al. 2016, section 4.2: 6n+2 layers, n blocks per stage of 16/32/64 */
    {"resnet8", BASIC, 16, 3, {16, 32, 64}, {1, 1, 1}},
    {"resnet20", BASIC, 16, 3, {16, 32, 64}, {3, 3, 3}},
    {"resnet32", BASIC, 16, 3, {16, 32, 64}, {5, 5, 5}},
    {"resnet44", BASIC, 16, 3, {16, 32, 64}, {7, 7, 7}},
    {"resnet56", BASIC, 16, 3, {16, 32, 64}, {9, 9, 9}},
    {"resnet110", BASIC, 16, 3, {16, 32, 64}, {18, 18, 18}},
    /* ImageNet ResNets with the CIFAR stem (3x3 conv, no max-pool) */
    {"resnet18", BASIC, 64, 4, {64, 128, 256, 512}, {2, 2, 2, 2}},
    {"resnet50", BOTTLENECK, 64, 4, {64, 128, 256, 512}, {3, 4, 6, 3}},
};

const char *train_model_names(void)
{
    return "resnet8, resnet20, resnet32, resnet44, resnet56, resnet110, resnet18, resnet50";
}

typedef struct {
    train_model *m;
    int cap_ops, cap_acts, cap_params;
    size_t act_off;
} builder;

static int new_tensor(builder *b, int C, int H, int W)
{
    train_model *m = b->m;
    if (m->nacts == b->cap_acts) {
        b->cap_acts = b->cap_acts ? 2 * b->cap_acts : 64;
        m->acts = realloc(m->acts, sizeof(*m->acts) * b->cap_acts);
    }
    train_tensor *t = &m->acts[m->nacts];
    t->C = C, t->H = H, t->W = W, t->off = b->act_off;
    b->act_off += (size_t)C * H * W;
    return m->nacts++;
}

static size_t new_param(builder *b, size_t n)
{
    train_model *m = b->m;
    if (m->nparams_tensors == b->cap_params) {
        b->cap_params = b->cap_params ? 2 * b->cap_params : 64;
        m->params = realloc(m->params, sizeof(*m->params) * b->cap_params);
    }
    size_t off = m->nparams;
    m->params[m->nparams_tensors].off = off;
    m->params[m->nparams_tensors].n = n;
    m->nparams_tensors++;
    m->nparams += n;
    return off;
}

static train_op *new_op(builder *b, train_op_kind kind, int in)
{
    train_model *m = b->m;
    if (m->nops == b->cap_ops) {
        b->cap_ops = b->cap_ops ? 2 * b->cap_ops : 64;
        m->ops = realloc(m->ops, sizeof(*m->ops) * b->cap_ops);
    }
    train_op *op = &m->ops[m->nops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    op->in = in;
    op->in2 = -1;
    op->C = m->acts[in].C, op->H = m->acts[in].H, op->W = m->acts[in].W;
    op->K = op->C, op->OH = op->H, op->OW = op->W;
    return op;
}

static int conv(builder *b, int in, int K, int k, int stride)
{
    train_op *op = new_op(b, TRAIN_OP_CONV, in);
    op->K = K, op->k = k, op->stride = stride, op->pad = k / 2;
    op->OH = (op->H + 2 * op->pad - k) / stride + 1;
    op->OW = (op->W + 2 * op->pad - k) / stride + 1;
    op->w = new_param(b, (size_t)K * op->C * k * k);
    b->m->fwd_flops += 2.0 * K * op->C * k * k * op->OH * op->OW;
    size_t s = train_conv_scratch(op->C, k, op->OH, op->OW, K);
    if (s > b->m->conv_scratch)
        b->m->conv_scratch = s;
    int out = new_tensor(b, K, op->OH, op->OW);
    b->m->ops[b->m->nops - 1].out = out;
    return out;
}

static int bn(builder *b, int in)
{
    if (!b->m->batchnorm)
        return in;
    train_op *op = new_op(b, TRAIN_OP_BN, in);
    op->w = new_param(b, op->C);
    op->b = new_param(b, op->C);
    op->rmean = b->m->nstate;
    op->rvar = b->m->nstate + op->C;
    b->m->nstate += 2 * (size_t)op->C;
    op->smean = b->m->nsaved;
    op->sinvstd = b->m->nsaved + op->C;
    b->m->nsaved += 2 * (size_t)op->C;
    int out = new_tensor(b, op->C, op->H, op->W);
    b->m->ops[b->m->nops - 1].out = out;
    return out;
}

static int relu(builder *b, int in)
{
    /* in place, as torchvision's ReLU(inplace=True): the input's only consumer is this ReLU */
    train_op *op = new_op(b, TRAIN_OP_RELU, in);
    op->out = in;
    return in;
}

static int add(builder *b, int x, int y)
{
    train_op *op = new_op(b, TRAIN_OP_ADD, x);
    op->in2 = y;
    int out = new_tensor(b, op->C, op->H, op->W);
    b->m->ops[b->m->nops - 1].out = out;
    return out;
}

static int block(builder *b, int kind, int in, int width, int stride)
{
    int cin = b->m->acts[in].C, cout = kind == BASIC ? width : 4 * width, x;
    if (kind == BASIC) {
        x = relu(b, bn(b, conv(b, in, width, 3, stride)));
        x = bn(b, conv(b, x, width, 3, 1));
    } else {
        x = relu(b, bn(b, conv(b, in, width, 1, 1)));
        x = relu(b, bn(b, conv(b, x, width, 3, stride)));
        x = bn(b, conv(b, x, cout, 1, 1));
    }
    /* projection shortcut (option B) where the shape changes */
    int sc = in;
    if (stride != 1 || cin != cout)
        sc = bn(b, conv(b, in, cout, 1, stride));
    return relu(b, add(b, x, sc));
}

int train_model_build(train_model *m, const char *name, int C, int H, int W, int classes, int batchnorm, char *err,
                      size_t errlen)
{
    int row = -1;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(table[i].name, name) == 0)
            row = (int)i;
    if (row < 0) {
        snprintf(err, errlen, "unknown model '%s' (known: %s)", name, train_model_names());
        return -1;
    }
    int shrink = 1 << (table[row].nstages - 1);
    if (H < shrink || W < shrink) {
        snprintf(err, errlen, "model %s halves the image %d times: %dx%d images are too small", name,
                 table[row].nstages - 1, H, W);
        return -1;
    }
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->classes = classes, m->C = C, m->H = H, m->W = W, m->batchnorm = batchnorm;
    builder b = {.m = m};
    m->input = new_tensor(&b, C, H, W);
    int x = relu(&b, bn(&b, conv(&b, m->input, table[row].stem, 3, 1)));
    for (int s = 0; s < table[row].nstages; s++)
        for (int j = 0; j < table[row].depth[s]; j++)
            x = block(&b, table[row].block, x, table[row].width[s], s > 0 && j == 0 ? 2 : 1);
    train_op *op = new_op(&b, TRAIN_OP_GAP, x);
    op->K = op->C, op->OH = op->OW = 1;
    int pooled = new_tensor(&b, op->C, 1, 1);
    m->ops[m->nops - 1].out = pooled;
    op = new_op(&b, TRAIN_OP_FC, pooled);
    op->K = classes, op->OH = op->OW = 1;
    op->w = new_param(&b, (size_t)classes * op->C);
    op->b = new_param(&b, classes);
    m->fwd_flops += 2.0 * classes * op->C;
    m->logits = new_tensor(&b, classes, 1, 1);
    m->ops[m->nops - 1].out = m->logits;
    m->act_per_sample = b.act_off;
    return 0;
}

void train_model_free(train_model *m)
{
    free(m->ops);
    free(m->acts);
    free(m->params);
    memset(m, 0, sizeof(*m));
}

void train_model_init(const train_model *m, float *params, float *state, uint64_t seed)
{
    for (int i = 0; i < m->nops; i++) {
        const train_op *op = &m->ops[i];
        train_rng r = train_rng_seed(seed, 0x1417, (uint64_t)i);
        if (op->kind == TRAIN_OP_CONV) {
            /* Kaiming normal, fan_out, as torchvision's ResNet */
            size_t n = (size_t)op->K * op->C * op->k * op->k;
            double sd = sqrt(2.0 / ((double)op->K * op->k * op->k));
            for (size_t j = 0; j < n; j++)
                params[op->w + j] = (float)(sd * train_rng_normal(&r));
        } else if (op->kind == TRAIN_OP_BN) {
            for (int c = 0; c < op->C; c++) {
                params[op->w + c] = 1, params[op->b + c] = 0;
                state[op->rmean + c] = 0, state[op->rvar + c] = 1;
            }
        } else if (op->kind == TRAIN_OP_FC) {
            double bound = 1.0 / sqrt((double)op->C);
            for (size_t j = 0; j < (size_t)op->K * op->C; j++)
                params[op->w + j] = (float)(bound * (2 * train_rng_uniform(&r) - 1));
            for (int j = 0; j < op->K; j++)
                params[op->b + j] = (float)(bound * (2 * train_rng_uniform(&r) - 1));
        }
    }
}
