/* batchnorm: reference batch normalisation over (B, HW) per channel, training and inference.
 * Sums are taken in double so that the oracle stays accurate for large batches. */
#include <math.h>

#include "layers.h"

void train_bn_forward(float *out, float *mean, float *invstd, float *running_mean, float *running_var, const float *inp,
                      const float *gamma, const float *beta, int B, int C, int HW, float momentum, float eps)
{
    double n = (double)B * HW;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        double s = 0, s2 = 0;
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            for (int i = 0; i < HW; i++)
                s += x[i];
        }
        double m = s / n;
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            for (int i = 0; i < HW; i++)
                s2 += (x[i] - m) * (x[i] - m);
        }
        double var = s2 / n;
        float is = (float)(1.0 / sqrt(var + eps));
        mean[c] = (float)m;
        invstd[c] = is;
        /* running statistics follow PyTorch: unbiased variance, momentum on the new value */
        running_mean[c] = (1 - momentum) * running_mean[c] + momentum * (float)m;
        running_var[c] = (1 - momentum) * running_var[c] + momentum * (float)(n > 1 ? s2 / (n - 1) : var);
        float scale = gamma[c] * is, shift = beta[c] - (float)m * scale;
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            float *y = out + ((size_t)b * C + c) * HW;
            for (int i = 0; i < HW; i++)
                y[i] = x[i] * scale + shift;
        }
    }
}

void train_bn_inference(float *out, const float *inp, const float *gamma, const float *beta, const float *running_mean,
                        const float *running_var, int B, int C, int HW, float eps)
{
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        float scale = gamma[c] / sqrtf(running_var[c] + eps);
        float shift = beta[c] - running_mean[c] * scale;
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            float *y = out + ((size_t)b * C + c) * HW;
            for (int i = 0; i < HW; i++)
                y[i] = x[i] * scale + shift;
        }
    }
}

void train_bn_backward(float *dinp, float *dgamma, float *dbeta, const float *dout, const float *inp, const float *mean,
                       const float *invstd, const float *gamma, int B, int C, int HW)
{
    double n = (double)B * HW;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        double sg = 0, sgx = 0;
        float m = mean[c], is = invstd[c];
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            const float *g = dout + ((size_t)b * C + c) * HW;
            for (int i = 0; i < HW; i++) {
                sg += g[i];
                sgx += g[i] * ((x[i] - m) * is);
            }
        }
        dbeta[c] += (float)sg;
        dgamma[c] += (float)sgx;
        /* dx = gamma*invstd * (g - mean(g) - xhat * mean(g*xhat)) */
        float k = gamma[c] * is, mg = (float)(sg / n), mgx = (float)(sgx / n);
        for (int b = 0; b < B; b++) {
            const float *x = inp + ((size_t)b * C + c) * HW;
            const float *g = dout + ((size_t)b * C + c) * HW;
            float *dx = dinp + ((size_t)b * C + c) * HW;
            for (int i = 0; i < HW; i++)
                dx[i] += k * (g[i] - mg - (x[i] - m) * is * mgx);
        }
    }
}
