/* pointwise: the elementwise layers (ReLU, residual add), global average pooling and the
 * fully connected classifier head, all reference C. */
#include <string.h>

#include "layers.h"

void train_relu_forward(float *out, const float *inp, size_t n)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++)
        out[i] = inp[i] > 0 ? inp[i] : 0;
}

void train_relu_backward(float *dinp, const float *dout, const float *out, size_t n)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++)
        dinp[i] += out[i] > 0 ? dout[i] : 0;
}

void train_relu_backward_inplace(float *d, const float *out, size_t n)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++)
        d[i] = out[i] > 0 ? d[i] : 0;
}

void train_add_forward(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void train_add_backward(float *da, float *db, const float *dout, size_t n)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

void train_gap_forward(float *out, const float *inp, int B, int C, int HW)
{
    for (int r = 0; r < B * C; r++) {
        const float *x = inp + (size_t)r * HW;
        float s = 0;
        for (int i = 0; i < HW; i++)
            s += x[i];
        out[r] = s / HW;
    }
}

void train_gap_backward(float *dinp, const float *dout, int B, int C, int HW)
{
    for (int r = 0; r < B * C; r++) {
        float g = dout[r] / HW;
        float *dx = dinp + (size_t)r * HW;
        for (int i = 0; i < HW; i++)
            dx[i] += g;
    }
}

void train_fc_forward(float *out, const float *inp, const float *w, const float *bias, int B, int IN, int OUT,
                      float *scratch)
{
    for (int b = 0; b < B; b++)
        memcpy(out + (size_t)b * OUT, bias, sizeof(float) * OUT);
    train_gemm(0, 1, B, OUT, IN, inp, w, out, scratch);
}

void train_fc_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp, const float *w, int B,
                       int IN, int OUT, float *scratch)
{
    for (int b = 0; b < B; b++)
        for (int o = 0; o < OUT; o++)
            dbias[o] += dout[(size_t)b * OUT + o];
    train_gemm(1, 0, OUT, IN, B, dout, inp, dw, scratch);
    if (dinp)
        train_gemm(0, 0, B, IN, OUT, dout, w, dinp, scratch);
}
