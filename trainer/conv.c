/* conv: reference 2-D convolution (square kernel, no bias) as im2col + GEMM per sample.
 * The unfolded input lives in caller-provided scratch, so nothing is allocated per step. */
#include <string.h>

#include "layers.h"

size_t train_conv_scratch(int C, int k, int OH, int OW, int K)
{
    size_t ckk = (size_t)C * k * k, p = (size_t)OH * OW;
    size_t t = ckk * p > (size_t)K * ckk ? ckk * p : (size_t)K * ckk;
    return 2 * ckk * p + t;
}

/* col (C*k*k, OH*OW) from one sample x (C,H,W); zero outside the padded border. */
static void im2col(float *col, const float *x, int C, int H, int W, int k, int stride, int pad, int OH, int OW)
{
#pragma omp parallel for schedule(static) if (C * k * k > 64)
    for (int r = 0; r < C * k * k; r++) {
        int c = r / (k * k), kh = (r / k) % k, kw = r % k;
        float *dst = col + (size_t)r * OH * OW;
        for (int oh = 0; oh < OH; oh++) {
            int ih = oh * stride - pad + kh;
            for (int ow = 0; ow < OW; ow++) {
                int iw = ow * stride - pad + kw;
                dst[oh * OW + ow] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[((size_t)c * H + ih) * W + iw] : 0.0f;
            }
        }
    }
}

/* dx (C,H,W) += fold(col); serial over channels' rows would race, so split by channel. */
static void col2im(float *dx, const float *col, int C, int H, int W, int k, int stride, int pad, int OH, int OW)
{
#pragma omp parallel for schedule(static) if (C > 4)
    for (int c = 0; c < C; c++)
        for (int kh = 0; kh < k; kh++)
            for (int kw = 0; kw < k; kw++) {
                const float *src = col + ((size_t)(c * k + kh) * k + kw) * OH * OW;
                for (int oh = 0; oh < OH; oh++) {
                    int ih = oh * stride - pad + kh;
                    if (ih < 0 || ih >= H)
                        continue;
                    for (int ow = 0; ow < OW; ow++) {
                        int iw = ow * stride - pad + kw;
                        if (iw >= 0 && iw < W)
                            dx[((size_t)c * H + ih) * W + iw] += src[oh * OW + ow];
                    }
                }
            }
}

static int out_size(int n, int k, int stride, int pad)
{
    return (n + 2 * pad - k) / stride + 1;
}

void train_conv_forward(float *out, const float *inp, const float *w, int B, int C, int H, int W, int K, int k,
                        int stride, int pad, float *scratch)
{
    int OH = out_size(H, k, stride, pad), OW = out_size(W, k, stride, pad);
    int ckk = C * k * k, P = OH * OW;
    float *col = scratch, *tscratch = scratch + 2 * (size_t)ckk * P;
    memset(out, 0, sizeof(float) * (size_t)B * K * P);
    for (int n = 0; n < B; n++) {
        const float *x = inp + (size_t)n * C * H * W;
        /* a 1x1 stride-1 convolution already has its input in column form */
        const float *cx = x;
        if (!(k == 1 && stride == 1 && pad == 0)) {
            im2col(col, x, C, H, W, k, stride, pad, OH, OW);
            cx = col;
        }
        train_gemm(0, 0, K, P, ckk, w, cx, out + (size_t)n * K * P, tscratch);
    }
}

void train_conv_backward(float *dinp, float *dw, const float *dout, const float *inp, const float *w, int B, int C,
                         int H, int W, int K, int k, int stride, int pad, float *scratch)
{
    int OH = out_size(H, k, stride, pad), OW = out_size(W, k, stride, pad);
    int ckk = C * k * k, P = OH * OW;
    int direct = k == 1 && stride == 1 && pad == 0;
    float *col = scratch, *dcol = scratch + (size_t)ckk * P;
    float *tscratch = scratch + 2 * (size_t)ckk * P;
    for (int n = 0; n < B; n++) {
        const float *x = inp + (size_t)n * C * H * W;
        const float *g = dout + (size_t)n * K * P;
        const float *cx = x;
        if (!direct) {
            im2col(col, x, C, H, W, k, stride, pad, OH, OW);
            cx = col;
        }
        /* dw (K,ckk) += g (K,P) * col^T */
        train_gemm(0, 1, K, ckk, P, g, cx, dw, tscratch);
        if (!dinp)
            continue;
        float *dx = dinp + (size_t)n * C * H * W;
        if (direct) {
            train_gemm(1, 0, ckk, P, K, w, g, dx, tscratch);
        } else {
            memset(dcol, 0, sizeof(float) * (size_t)ckk * P);
            train_gemm(1, 0, ckk, P, K, w, g, dcol, tscratch);
            col2im(dx, dcol, C, H, W, k, stride, pad, OH, OW);
        }
    }
}
