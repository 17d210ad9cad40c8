/* model: the table of CNNs the trainer knows (CIFAR ResNets, ResNet-18/50 with a CIFAR stem)
 * and the layout they compile to: a flat list of ops over named offsets into contiguous blocks. */
#ifndef COSCHED_TRAIN_MODEL_H
#define COSCHED_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TRAIN_OP_CONV,
    TRAIN_OP_BN,
    TRAIN_OP_RELU, /* in place: out == in */
    TRAIN_OP_ADD,
    TRAIN_OP_GAP,
    TRAIN_OP_FC,
} train_op_kind;

/* One layer. Shapes are per sample; activation tensors are indices into model.acts. */
typedef struct {
    train_op_kind kind;
    int in, in2, out;
    int C, H, W;           /* input */
    int K, OH, OW;         /* output channels (or features) and spatial size */
    int k, stride, pad;    /* conv */
    size_t w, b;           /* offsets in the parameter block: conv/fc weight or bn gamma; bn beta or fc bias */
    size_t rmean, rvar;    /* bn: offsets in the state block (running statistics) */
    size_t smean, sinvstd; /* bn: offsets in the saved-statistics block */
} train_op;

/* An activation tensor: C*H*W floats per sample at off*batch in the activation block. */
typedef struct {
    int C, H, W;
    size_t off;
} train_tensor;

/* A parameter tensor: the unit the unfused allreduce works on. */
typedef struct {
    size_t off, n;
} train_param;

typedef struct {
    char name[32];
    int classes, C, H, W;
    int batchnorm;
    train_op *ops;
    int nops;
    train_tensor *acts;
    int nacts;
    train_param *params;
    int nparams_tensors;
    int input, logits;     /* tensor indices */
    size_t nparams;        /* floats in the parameter block (= gradient, momentum blocks) */
    size_t nstate;         /* floats of BN running statistics */
    size_t nsaved;         /* floats of BN batch statistics kept for backward */
    size_t act_per_sample; /* floats of activations per sample */
    size_t conv_scratch;   /* floats of scratch the largest reference conv needs */
    double fwd_flops;      /* multiply-adds x2 of conv and fc, per sample, forward */
} train_model;

/* Names the table accepts, for --help: "resnet8, resnet20, ...". */
const char *train_model_names(void);

/* Build the layout of model name for input C x H x W and classes. Returns 0, or -1 with a
 * message for an unknown name or an image too small for the network. */
int train_model_build(train_model *m, const char *name, int C, int H, int W, int classes, int batchnorm, char *err,
                      size_t errlen);
void train_model_free(train_model *m);

/* Initialise parameters (Kaiming normal for conv, PyTorch's uniform for fc, BN 1/0) and
 * running statistics (0/1) from seed. */
void train_model_init(const train_model *m, float *params, float *state, uint64_t seed);

#endif
