/* test_layers: every reference layer against a naive double-precision forward and central
 * finite differences of L = sum(out * R); backward must also accumulate, not overwrite. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layers.h"
#include "rng.h"

#define MAXN 4096

static void fill(float *f, double *d, size_t n, uint64_t seed, double lo, double hi)
{
    train_rng r = train_rng_seed(seed, 7, 9);
    for (size_t i = 0; i < n; i++) {
        double v = lo + (hi - lo) * train_rng_uniform(&r);
        if (f)
            f[i] = (float)v;
        if (d)
            d[i] = (float)v; /* the double copy holds exactly the float value */
    }
}

/* Double-precision layer definitions, written as plainly as possible. */
typedef struct {
    int B, C, H, W, K, k, s, p, OH, OW;
    double *x, *w, *b, *R;
    double *out;
    int kind;
    int *labels;
    double smoothing;
} ctx;

enum { CONV, BN, RELU, ADD, GAP, FC, XENT };

static double forward_d(ctx *c)
{
    size_t n = 0;
    switch (c->kind) {
    case CONV:
        for (int b = 0; b < c->B; b++)
            for (int o = 0; o < c->K; o++)
                for (int oh = 0; oh < c->OH; oh++)
                    for (int ow = 0; ow < c->OW; ow++) {
                        double s = 0;
                        for (int i = 0; i < c->C; i++)
                            for (int kh = 0; kh < c->k; kh++)
                                for (int kw = 0; kw < c->k; kw++) {
                                    int ih = oh * c->s - c->p + kh, iw = ow * c->s - c->p + kw;
                                    if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W)
                                        continue;
                                    s += c->x[((b * c->C + i) * c->H + ih) * c->W + iw] *
                                         c->w[((o * c->C + i) * c->k + kh) * c->k + kw];
                                }
                        c->out[n++] = s;
                    }
        break;
    case BN: {
        int HW = c->H * c->W;
        for (int ch = 0; ch < c->C; ch++) {
            double m = 0, v = 0, N = (double)c->B * HW;
            for (int b = 0; b < c->B; b++)
                for (int i = 0; i < HW; i++)
                    m += c->x[(b * c->C + ch) * HW + i];
            m /= N;
            for (int b = 0; b < c->B; b++)
                for (int i = 0; i < HW; i++) {
                    double d = c->x[(b * c->C + ch) * HW + i] - m;
                    v += d * d;
                }
            v /= N;
            for (int b = 0; b < c->B; b++)
                for (int i = 0; i < HW; i++) {
                    size_t j = (size_t)(b * c->C + ch) * HW + i;
                    c->out[j] = (c->x[j] - m) / sqrt(v + 1e-5) * c->w[ch] + c->b[ch];
                }
        }
        n = (size_t)c->B * c->C * HW;
        break;
    }
    case RELU:
        n = (size_t)c->B * c->C;
        for (size_t i = 0; i < n; i++)
            c->out[i] = c->x[i] > 0 ? c->x[i] : 0;
        break;
    case ADD:
        n = (size_t)c->B * c->C;
        for (size_t i = 0; i < n; i++)
            c->out[i] = c->x[i] + c->w[i];
        break;
    case GAP:
        for (int r = 0; r < c->B * c->C; r++) {
            double s = 0;
            for (int i = 0; i < c->H * c->W; i++)
                s += c->x[r * c->H * c->W + i];
            c->out[n++] = s / (c->H * c->W);
        }
        break;
    case FC:
        for (int b = 0; b < c->B; b++)
            for (int o = 0; o < c->K; o++) {
                double s = c->b[o];
                for (int i = 0; i < c->C; i++)
                    s += c->x[b * c->C + i] * c->w[o * c->C + i];
                c->out[n++] = s;
            }
        break;
    case XENT: {
        double total = 0;
        for (int b = 0; b < c->B; b++) {
            const double *z = c->x + b * c->C;
            double mx = z[0], s = 0;
            for (int v = 1; v < c->C; v++)
                mx = z[v] > mx ? z[v] : mx;
            for (int v = 0; v < c->C; v++)
                s += exp(z[v] - mx);
            for (int v = 0; v < c->C; v++) {
                double t = c->smoothing / c->C + (v == c->labels[b] ? 1 - c->smoothing : 0);
                total -= t * (z[v] - mx - log(s));
            }
        }
        return total / c->B;
    }
    }
    double L = 0;
    for (size_t i = 0; i < n; i++)
        L += c->out[i] * c->R[i];
    return L;
}

/* Central differences of L with respect to each element of p, against analytic. The analytic
 * gradient was accumulated on top of `base`, which is subtracted first. */
static void check_grad(ctx *c, double *p, size_t n, const float *analytic, float base, const char *what)
{
    const double h = 1e-4;
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double keep = p[i];
        p[i] = keep + h;
        double lp = forward_d(c);
        p[i] = keep - h;
        double lm = forward_d(c);
        p[i] = keep;
        double num = (lp - lm) / (2 * h), got = analytic[i] - base;
        double e = fabs(got - num) / (1e-2 + fabs(num));
        if (e > worst)
            worst = e, at = i;
    }
    if (worst > 2e-3)
        fail_msg("%s: gradient %zu off by %.3g (relative)", what, at, worst);
}

static void check_close(const float *got, const double *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > tol * (1 + fabs(want[i])))
            fail_msg("%s: element %zu is %.7g, expected %.7g", what, i, got[i], want[i]);
}

static float fx[MAXN], fw[MAXN], fb[MAXN], fy[MAXN], fdy[MAXN], fdx[MAXN], fdw[MAXN], fdb[MAXN];
static float scratch[1 << 16];
static double dx[MAXN], dw[MAXN], db[MAXN], dR[MAXN], dout[MAXN];

static void conv_case(int B, int C, int H, int K, int k, int s, int p)
{
    ctx c = {.B = B,
             .C = C,
             .H = H,
             .W = H,
             .K = K,
             .k = k,
             .s = s,
             .p = p,
             .kind = CONV,
             .x = dx,
             .w = dw,
             .R = dR,
             .out = dout};
    c.OH = c.OW = (H + 2 * p - k) / s + 1;
    size_t nx = (size_t)B * C * H * H, nw = (size_t)K * C * k * k, ny = (size_t)B * K * c.OH * c.OW;
    assert_true(nx <= MAXN && nw <= MAXN && ny <= MAXN);
    assert_true(train_conv_scratch(C, k, c.OH, c.OW, K) <= sizeof(scratch) / sizeof(float));
    fill(fx, dx, nx, 1, -1, 1);
    fill(fw, dw, nw, 2, -1, 1);
    fill(fdy, dR, ny, 3, -1, 1);
    train_conv_forward(fy, fx, fw, B, C, H, H, K, k, s, p, scratch);
    forward_d(&c);
    check_close(fy, dout, ny, 1e-5, "conv forward");
    for (size_t i = 0; i < nx; i++)
        fdx[i] = 1.0f;
    for (size_t i = 0; i < nw; i++)
        fdw[i] = 1.0f;
    train_conv_backward(fdx, fdw, fdy, fx, fw, B, C, H, H, K, k, s, p, scratch);
    check_grad(&c, dx, nx, fdx, 1.0f, "conv dinp");
    check_grad(&c, dw, nw, fdw, 1.0f, "conv dw");
}

static void conv_3x3_stride1_pad1_matches_finite_differences(void **state)
{
    (void)state;
    conv_case(2, 3, 5, 4, 3, 1, 1);
}

static void conv_3x3_stride2_matches_finite_differences(void **state)
{
    (void)state;
    conv_case(2, 3, 6, 5, 3, 2, 1);
}

static void conv_1x1_stride1_and_stride2_match_finite_differences(void **state)
{
    (void)state;
    conv_case(2, 4, 4, 3, 1, 1, 0);
    conv_case(2, 4, 6, 3, 1, 2, 0);
}

static void batchnorm_training_matches_finite_differences_and_updates_running_stats(void **st)
{
    (void)st;
    int B = 3, C = 4, H = 3, HW = H * H;
    size_t n = (size_t)B * C * HW;
    ctx c = {.B = B, .C = C, .H = H, .W = H, .kind = BN, .x = dx, .w = dw, .b = db, .R = dR, .out = dout};
    fill(fx, dx, n, 1, -2, 3);
    fill(fw, dw, C, 2, 0.5, 1.5);
    fill(fb, db, C, 3, -1, 1);
    fill(fdy, dR, n, 4, -1, 1);
    float mean[8], invstd[8], rm[8], rv[8];
    for (int i = 0; i < C; i++)
        rm[i] = 0.5f, rv[i] = 2.0f;
    train_bn_forward(fy, mean, invstd, rm, rv, fx, fw, fb, B, C, HW, 0.1f, 1e-5f);
    forward_d(&c);
    check_close(fy, dout, n, 1e-4, "bn forward");
    for (int ch = 0; ch < C; ch++) {
        double m = 0, v = 0;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < HW; i++)
                m += dx[(b * C + ch) * HW + i];
        m /= B * HW;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < HW; i++)
                v += pow(dx[(b * C + ch) * HW + i] - m, 2);
        assert_float_equal(rm[ch], 0.9 * 0.5 + 0.1 * m, 1e-5);
        assert_float_equal(rv[ch], 0.9 * 2.0 + 0.1 * v / (B * HW - 1), 1e-4);
    }
    memset(fdx, 0, sizeof(fdx));
    memset(fdw, 0, sizeof(fdw));
    memset(fdb, 0, sizeof(fdb));
    train_bn_backward(fdx, fdw, fdb, fdy, fx, mean, invstd, fw, B, C, HW);
    check_grad(&c, dx, n, fdx, 0, "bn dinp");
    check_grad(&c, dw, C, fdw, 0, "bn dgamma");
    check_grad(&c, db, C, fdb, 0, "bn dbeta");
}

static void batchnorm_inference_uses_running_statistics(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4}, y[4], g[2] = {2, 1}, b[2] = {0, 1}, rm[2] = {1, 3}, rv[2] = {4, 1};
    train_bn_inference(y, x, g, b, rm, rv, 1, 2, 2, 0);
    assert_float_equal(y[0], 2 * (1 - 1) / 2.0, 1e-6);
    assert_float_equal(y[1], 2 * (2 - 1) / 2.0, 1e-6);
    assert_float_equal(y[2], 1 * (3 - 3) + 1, 1e-6);
    assert_float_equal(y[3], 1 * (4 - 3) + 1, 1e-6);
}

static void relu_add_gap_match_finite_differences(void **state)
{
    (void)state;
    int B = 2, C = 3, H = 4;
    size_t n = (size_t)B * C * H * H;
    /* ReLU, away from the kink where the derivative is undefined */
    ctx c = {.B = (int)n, .C = 1, .kind = RELU, .x = dx, .R = dR, .out = dout};
    fill(fx, dx, n, 1, -1, 1);
    for (size_t i = 0; i < n; i++)
        if (fabs(dx[i]) < 0.05)
            dx[i] = fx[i] = 0.3f;
    fill(fdy, dR, n, 2, -1, 1);
    train_relu_forward(fy, fx, n);
    forward_d(&c);
    check_close(fy, dout, n, 0, "relu forward");
    memset(fdx, 0, sizeof(fdx));
    train_relu_backward(fdx, fdy, fy, n);
    check_grad(&c, dx, n, fdx, 0, "relu dinp");
    /* the in-place form masks the shared gradient buffer instead of adding */
    memcpy(fdx, fdy, n * sizeof(float));
    train_relu_backward_inplace(fdx, fy, n);
    check_grad(&c, dx, n, fdx, 0, "relu in place");

    c.kind = ADD, c.w = dw;
    fill(fw, dw, n, 3, -1, 1);
    train_add_forward(fy, fx, fw, n);
    forward_d(&c);
    check_close(fy, dout, n, 1e-6, "add forward");
    memset(fdx, 0, sizeof(fdx));
    memset(fdw, 0, sizeof(fdw));
    train_add_backward(fdx, fdw, fdy, n);
    check_grad(&c, dx, n, fdx, 0, "add da");
    check_grad(&c, dw, n, fdw, 0, "add db");

    ctx g = {.B = B, .C = C, .H = H, .W = H, .kind = GAP, .x = dx, .R = dR, .out = dout};
    train_gap_forward(fy, fx, B, C, H * H);
    forward_d(&g);
    check_close(fy, dout, (size_t)B * C, 1e-6, "gap forward");
    memset(fdx, 0, sizeof(fdx));
    train_gap_backward(fdx, fdy, B, C, H * H);
    check_grad(&g, dx, n, fdx, 0, "gap dinp");
}

static void fully_connected_matches_finite_differences(void **state)
{
    (void)state;
    int B = 3, IN = 7, OUT = 5;
    ctx c = {.B = B, .C = IN, .K = OUT, .kind = FC, .x = dx, .w = dw, .b = db, .R = dR, .out = dout};
    fill(fx, dx, (size_t)B * IN, 1, -1, 1);
    fill(fw, dw, (size_t)OUT * IN, 2, -1, 1);
    fill(fb, db, OUT, 3, -1, 1);
    fill(fdy, dR, (size_t)B * OUT, 4, -1, 1);
    train_fc_forward(fy, fx, fw, fb, B, IN, OUT, scratch);
    forward_d(&c);
    check_close(fy, dout, (size_t)B * OUT, 1e-5, "fc forward");
    for (int i = 0; i < MAXN; i++)
        fdx[i] = fdw[i] = fdb[i] = 0.5f;
    train_fc_backward(fdx, fdw, fdb, fdy, fx, fw, B, IN, OUT, scratch);
    check_grad(&c, dx, (size_t)B * IN, fdx, 0.5f, "fc dinp");
    check_grad(&c, dw, (size_t)OUT * IN, fdw, 0.5f, "fc dw");
    check_grad(&c, db, OUT, fdb, 0.5f, "fc dbias");
}

static void cross_entropy_with_and_without_smoothing_matches_finite_differences(void **state)
{
    (void)state;
    int B = 4, V = 6, labels[4] = {0, 5, 2, 2};
    for (int sm = 0; sm < 2; sm++) {
        ctx c = {.B = B, .C = V, .kind = XENT, .x = dx, .labels = labels, .smoothing = sm ? 0.1 : 0};
        fill(fx, dx, (size_t)B * V, 5 + sm, -3, 3);
        float probs[64];
        float l = train_xent_forward(probs, fx, labels, B, V, (float)c.smoothing);
        assert_float_equal(l, forward_d(&c), 1e-5);
        memset(fdx, 0, sizeof(fdx));
        train_xent_backward(fdx, probs, labels, B, V, (float)c.smoothing, 1.0f);
        check_grad(&c, dx, (size_t)B * V, fdx, 0, sm ? "xent smoothed" : "xent");
    }
}

static void cross_entropy_of_uniform_logits_is_log_classes(void **state)
{
    (void)state;
    float z[20] = {0}, p[20];
    int labels[2] = {3, 9};
    assert_float_equal(train_xent_forward(p, z, labels, 2, 10, 0), log(10.0), 1e-6);
    /* large logits must not overflow */
    z[0] = 1000, z[10] = -1000;
    float l = train_xent_forward(p, z, labels, 2, 10, 0);
    assert_true(isfinite(l));
}

static void gemm_transposed_forms_agree_with_plain_product(void **state)
{
    (void)state;
    int M = 5, N = 7, K = 3;
    float A[15], B[21], At[15], Bt[21], C0[35] = {0}, C1[35] = {0}, C2[35] = {0};
    fill(A, NULL, 15, 1, -1, 1);
    fill(B, NULL, 21, 2, -1, 1);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++)
            At[k * M + i] = A[i * K + k];
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++)
            Bt[j * K + k] = B[k * N + j];
    train_gemm(0, 0, M, N, K, A, B, C0, scratch);
    train_gemm(1, 0, M, N, K, At, B, C1, scratch);
    train_gemm(0, 1, M, N, K, A, Bt, C2, scratch);
    for (int i = 0; i < M * N; i++) {
        double want = 0;
        for (int k = 0; k < K; k++)
            want += (double)A[(i / N) * K + k] * B[k * N + i % N];
        assert_float_equal(C0[i], want, 1e-5);
        assert_float_equal(C1[i], want, 1e-5);
        assert_float_equal(C2[i], want, 1e-5);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_3x3_stride1_pad1_matches_finite_differences),
        cmocka_unit_test(conv_3x3_stride2_matches_finite_differences),
        cmocka_unit_test(conv_1x1_stride1_and_stride2_match_finite_differences),
        cmocka_unit_test(batchnorm_training_matches_finite_differences_and_updates_running_stats),
        cmocka_unit_test(batchnorm_inference_uses_running_statistics),
        cmocka_unit_test(relu_add_gap_match_finite_differences),
        cmocka_unit_test(fully_connected_matches_finite_differences),
        cmocka_unit_test(cross_entropy_with_and_without_smoothing_matches_finite_differences),
        cmocka_unit_test(cross_entropy_of_uniform_logits_is_log_classes),
        cmocka_unit_test(gemm_transposed_forms_agree_with_plain_product),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
