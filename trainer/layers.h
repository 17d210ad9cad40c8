/* layers: the reference (plain C) forward/backward pair of every layer of the trainer's CNNs.
 * Tensors are float* in NCHW; backward functions accumulate (+=) into the gradients they produce. */
#ifndef COSCHED_TRAIN_LAYERS_H
#define COSCHED_TRAIN_LAYERS_H

#include <stddef.h>

/* C[M,N] += op(A) * op(B); ta/tb say A is stored K x M / B is stored N x K.
 * scratch holds max(M*K, K*N) floats for the transposed copy (NULL when ta == tb == 0). */
void train_gemm(int ta, int tb, int M, int N, int K, const float *A, const float *B, float *C, float *scratch);

/* Scratch floats conv_forward/backward need: the unfolded input of one sample plus the
 * transposed copy the GEMM makes. */
size_t train_conv_scratch(int C, int k, int OH, int OW, int K);

/* out (B,K,OH,OW) = conv(inp (B,C,H,W), w (K,C,k,k)), square kernel, no bias. */
void train_conv_forward(float *out, const float *inp, const float *w, int B, int C, int H, int W, int K, int k,
                        int stride, int pad, float *scratch);
/* dinp (B,C,H,W) += ..., dw (K,C,k,k) += ...; dinp may be NULL (network input). */
void train_conv_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w, int B, int C,
                         int H, int W, int K, int k, int stride, int pad, float *scratch);

/* Training mode: normalise with the batch statistics of inp (B,C,HW); saves mean/invstd (C)
 * for backward and updates running_mean/var (C) with momentum (PyTorch convention, unbiased var). */
void train_bn_forward(float *out, float *mean, float *invstd, float *running_mean, float *running_var, const float *inp,
                      const float *gamma, const float *beta, int B, int C, int HW, float momentum, float eps);
/* Inference mode: normalise with the running statistics. */
void train_bn_inference(float *out, const float *inp, const float *gamma, const float *beta, const float *running_mean,
                        const float *running_var, int B, int C, int HW, float eps);
void train_bn_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp, const float *mean,
                       const float *invstd, const float *gamma, int B, int C, int HW);

/* out (n) = max(inp, 0); backward uses out, so out may alias inp. */
void train_relu_forward(float *out, const float *inp, size_t n);
void train_relu_backward(float *dinp, const float *dout, const float *out, size_t n);
/* In-place ReLU: the gradient buffer of input and output is one, so it is masked, not summed. */
void train_relu_backward_inplace(float *d, const float *out, size_t n);

/* out (n) = a + b */
void train_add_forward(float *out, const float *a, const float *b, size_t n);
void train_add_backward(float *da, float *db, const float *dout, size_t n);

/* out (B,C) = mean over HW of inp (B,C,HW) */
void train_gap_forward(float *out, const float *inp, int B, int C, int HW);
void train_gap_backward(float *dinp, const float *dout, int B, int C, int HW);

/* out (B,OUT) = inp (B,IN) * w^T (w is OUT,IN) + bias (OUT) */
void train_fc_forward(float *out, const float *inp, const float *w, const float *bias, int B, int IN, int OUT,
                      float *scratch);
void train_fc_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp, const float *w, int B,
                       int IN, int OUT, float *scratch);

/* Mean softmax cross-entropy of logits (B,V) against labels (B), with label smoothing eps:
 * the target is (1-eps) one-hot + eps/V. Writes probs (B,V); returns the mean loss. */
float train_xent_forward(float *probs, const float *logits, const int *labels, int B, int V, float smoothing);
/* dlogits (B,V) += d(mean loss)/dlogits; grad_scale multiplies it (1 for a plain mean). */
void train_xent_backward(float *dlogits, const float *probs, const int *labels, int B, int V, float smoothing,
                         float grad_scale);

#endif
