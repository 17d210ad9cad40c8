/* test_net: the model table and whole networks: depth and parameter counts, initial loss,
 * overfitting one batch, gradients of the wired network, and onednn against ref everywhere. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layers.h"
#include "model.h"
#include "net.h"
#include "optim.h"
#include "rng.h"

static void random_batch(train_net *n, int B, uint64_t seed)
{
    train_rng r = train_rng_seed(seed, 1, 2);
    const train_model *m = n->m;
    float *x = train_net_act(n, m->input);
    for (size_t i = 0; i < (size_t)B * m->C * m->H * m->W; i++)
        x[i] = (float)train_rng_normal(&r);
    for (int b = 0; b < B; b++)
        n->labels[b] = (int)train_rng_below(&r, (uint64_t)m->classes);
}

static int count(const train_model *m, train_op_kind kind, int k)
{
    int c = 0;
    for (int i = 0; i < m->nops; i++)
        if (m->ops[i].kind == kind && (k == 0 || m->ops[i].k == k))
            c++;
    return c;
}

static void table_builds_cifar_resnets_with_6n_plus_2_layers(void **state)
{
    (void)state;
    const char *names[] = {"resnet20", "resnet32", "resnet44", "resnet56", "resnet110"};
    int depth[] = {20, 32, 44, 56, 110};
    char err[256];
    for (int i = 0; i < 5; i++) {
        train_model m;
        assert_int_equal(train_model_build(&m, names[i], 3, 32, 32, 10, 1, err, sizeof(err)), 0);
        /* 3x3 convolutions plus the classifier; the two projection shortcuts are 1x1 */
        assert_int_equal(count(&m, TRAIN_OP_CONV, 3) + count(&m, TRAIN_OP_FC, 0), depth[i]);
        assert_int_equal(count(&m, TRAIN_OP_CONV, 1), 2);
        assert_int_equal(m.acts[m.logits].C, 10);
        train_model_free(&m);
    }
}

static void resnet18_and_50_have_the_parameter_counts_of_the_cifar_pytorch_models(void **state)
{
    (void)state;
    char err[256];
    train_model m;
    /* kuangliu/pytorch-cifar ResNet18 / ResNet50 (projection shortcuts), 10 classes */
    assert_int_equal(train_model_build(&m, "resnet18", 3, 32, 32, 10, 1, err, sizeof(err)), 0);
    assert_int_equal(m.nparams, 11173962);
    train_model_free(&m);
    assert_int_equal(train_model_build(&m, "resnet50", 3, 32, 32, 10, 1, err, sizeof(err)), 0);
    assert_int_equal(m.nparams, 23520842);
    assert_int_equal(count(&m, TRAIN_OP_CONV, 0), 53);
    train_model_free(&m);
}

static void unknown_model_and_too_small_images_are_refused(void **state)
{
    (void)state;
    char err[256];
    train_model m;
    assert_int_equal(train_model_build(&m, "resnet21", 3, 32, 32, 10, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "unknown model 'resnet21'"));
    assert_int_equal(train_model_build(&m, "resnet18", 3, 4, 4, 10, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "too small"));
}

static void initial_loss_is_close_to_log_of_the_classes(void **state)
{
    (void)state;
    int classes[] = {10, 100};
    for (int c = 0; c < 2; c++) {
        char err[256];
        train_model m;
        train_net n;
        assert_int_equal(train_model_build(&m, "resnet8", 3, 8, 8, classes[c], 1, err, sizeof(err)), 0);
        assert_int_equal(train_net_create(&n, &m, 16, "ref", err, sizeof(err)), 0);
        train_model_init(&m, n.params, n.state, 3);
        random_batch(&n, 16, 5);
        float l = train_net_forward(&n, 16, 1);
        assert_true(fabs(l - log((double)classes[c])) < 0.15 * log((double)classes[c]));
        train_net_free(&n);
        train_model_free(&m);
    }
}

static void one_batch_overfits(void **state)
{
    (void)state;
    char err[256];
    train_model m;
    train_net n;
    assert_int_equal(train_model_build(&m, "resnet8", 3, 8, 8, 10, 1, err, sizeof(err)), 0);
    assert_int_equal(train_net_create(&n, &m, 8, "ref", err, sizeof(err)), 0);
    train_model_init(&m, n.params, n.state, 4);
    random_batch(&n, 8, 6);
    float first = 0, l = 0;
    for (int s = 0; s < 60; s++) {
        memset(n.grads, 0, sizeof(float) * m.nparams);
        l = train_net_forward(&n, 8, 1);
        if (s == 0)
            first = l;
        assert_int_equal(train_net_backward(&n, 8), 0);
        train_sgd(n.params, n.momentum, n.grads, m.nparams, 0.05f, 0.9f, 0);
    }
    assert_true(l < 0.05f * first);
    train_net_free(&n);
    train_model_free(&m);
}

/* Central differences of the whole network's loss on the parameters with the largest
 * gradients: checks the wiring (residual sums, in-place ReLU, shortcut convolutions). */
static void network_gradients_match_finite_differences(void **state)
{
    (void)state;
    for (int bn = 0; bn < 2; bn++) {
        char err[256];
        train_model m;
        train_net n;
        int B = 4;
        assert_int_equal(train_model_build(&m, "resnet8", 3, 8, 8, 5, bn, err, sizeof(err)), 0);
        assert_int_equal(train_net_create(&n, &m, B, "ref", err, sizeof(err)), 0);
        train_model_init(&m, n.params, n.state, 8);
        random_batch(&n, B, 9);
        memset(n.grads, 0, sizeof(float) * m.nparams);
        train_net_forward(&n, B, 1);
        train_net_backward(&n, B);
        /* one parameter from each tensor: its largest gradient */
        int checked = 0;
        for (int t = 0; t < m.nparams_tensors; t++) {
            size_t best = m.params[t].off;
            for (size_t j = m.params[t].off; j < m.params[t].off + m.params[t].n; j++)
                if (fabsf(n.grads[j]) > fabsf(n.grads[best]))
                    best = j;
            double g = n.grads[best];
            if (fabs(g) < 1e-2)
                continue;
            float keep = n.params[best], h = 2e-3f;
            n.params[best] = keep + h;
            double lp = train_net_forward(&n, B, 1);
            n.params[best] = keep - h;
            double lm = train_net_forward(&n, B, 1);
            n.params[best] = keep;
            double num = (lp - lm) / (2.0 * h);
            if (fabs(num - g) > 0.05 * fabs(g) + 2e-3)
                fail_msg("bn=%d tensor %d: analytic %.6g, numeric %.6g", bn, t, g, num);
            checked++;
        }
        assert_true(checked >= 5);
        train_net_free(&n);
        train_model_free(&m);
    }
}

static double max_abs(const float *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

static void expect_close(const float *got, const float *want, size_t n, double rel, const char *what, int idx)
{
    double scale = max_abs(want, n), tol = rel * scale + 1e-6;
    for (size_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > tol)
            fail_msg("%s %d: element %zu: onednn %.7g, ref %.7g (scale %.3g)", what, idx, i, got[i], want[i], scale);
}

static size_t tensor_len(const train_model *m, int t, int B)
{
    return (size_t)B * m->acts[t].C * m->acts[t].H * m->acts[t].W;
}

/* Tensor t of both nets in plain layout: onednn keeps most activations blocked. */
static void expect_tensor(train_net *a, train_net *r, int t, int grad, double rel, const char *what, int idx)
{
    size_t len = tensor_len(a->m, t, a->batch);
    float *x = malloc(len * sizeof(float)), *y = malloc(len * sizeof(float));
    assert_int_equal(train_net_get(a, t, grad, x), 0);
    assert_int_equal(train_net_get(r, t, grad, y), 0);
    expect_close(x, y, len, rel, what, idx);
    free(x);
    free(y);
}

/* Every op's output, every activation gradient and every parameter gradient of onednn
 * against ref on the same weights and batch; op by op, each op starting from ref's input. */
static void compare_backends(const char *model, int C, int H, int classes, int B)
{
    char err[256];
    train_model m;
    train_net a, r;
    assert_int_equal(train_model_build(&m, model, C, H, H, classes, 1, err, sizeof(err)), 0);
    /* unfused, so that batch-norm and ReLU outputs can be compared one by one */
    if (train_net_create(&a, &m, B, "onednn:nofuse", err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(train_net_create(&r, &m, B, "ref", err, sizeof(err)), 0);
    train_model_init(&m, r.params, r.state, 11);
    memcpy(a.params, r.params, sizeof(float) * m.nparams);
    memcpy(a.state, r.state, sizeof(float) * m.nstate);
    random_batch(&r, B, 12);
    memcpy(train_net_act(&a, m.input), train_net_act(&r, m.input), sizeof(float) * B * C * H * H);
    memcpy(a.labels, r.labels, sizeof(int) * B);
    size_t big = 0;
    for (int t = 0; t < m.nacts; t++)
        big = tensor_len(&m, t, B) > big ? tensor_len(&m, t, B) : big;
    float *buf = malloc(big * sizeof(float));
    /* inference (running statistics) first, then training, whose activations and batch
     * statistics the backward pass below uses */
    for (int training = 0; training < 2; training++)
        for (int i = 0; i < m.nops; i++) {
            const train_op *op = &m.ops[i];
            assert_int_equal(a.backend.forward(&a, i, B, training), 0);
            assert_int_equal(r.backend.forward(&r, i, B, training), 0);
            expect_tensor(&a, &r, op->out, 0, 1e-4, training ? "training op" : "inference op", i);
            assert_int_equal(train_net_get(&r, op->out, 0, buf), 0);
            assert_int_equal(train_net_set(&a, op->out, 0, buf), 0);
        }
    expect_close(a.state, r.state, m.nstate, 1e-4, "running statistics", 0);
    float la = train_xent_forward(a.probs, train_net_act(&a, m.logits), a.labels, B, classes, 0);
    float lr = train_xent_forward(r.probs, train_net_act(&r, m.logits), r.labels, B, classes, 0);
    assert_float_equal(la, lr, 1e-4);
    memset(a.grads, 0, sizeof(float) * m.nparams);
    memset(r.grads, 0, sizeof(float) * m.nparams);
    assert_int_equal(train_net_backward(&a, B), 0);
    assert_int_equal(train_net_backward(&r, B), 0);
    for (int t = 0; t < m.nparams_tensors; t++)
        expect_close(a.grads + m.params[t].off, r.grads + m.params[t].off, m.params[t].n, 2e-3, "parameter gradient",
                     t);
    for (int t = 1; t < m.nacts; t++)
        expect_tensor(&a, &r, t, 1, 2e-3, "activation gradient", t);
    free(buf);
    train_net_free(&a);
    train_net_free(&r);
    train_model_free(&m);
}

static void onednn_matches_ref_on_every_layer_of_a_basic_block_resnet(void **state)
{
    (void)state;
    compare_backends("resnet8", 3, 8, 10, 4);
}

static void onednn_matches_ref_on_every_layer_of_a_bottleneck_resnet(void **state)
{
    (void)state;
    compare_backends("resnet50", 1, 8, 7, 2);
}

/* The fused backend (BN+ReLU in one primitive, gradients written in place of zeroing) through
 * whole training steps: losses, parameters and running statistics stay with ref's. */
static void fused_onednn_trains_like_ref(void **state)
{
    (void)state;
    char err[256];
    train_model m;
    train_net a, r;
    int B = 8;
    assert_int_equal(train_model_build(&m, "resnet8", 3, 8, 8, 10, 1, err, sizeof(err)), 0);
    if (train_net_create(&a, &m, B, "onednn", err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(train_net_create(&r, &m, B, "ref", err, sizeof(err)), 0);
    train_model_init(&m, r.params, r.state, 21);
    memcpy(a.params, r.params, sizeof(float) * m.nparams);
    memcpy(a.state, r.state, sizeof(float) * m.nstate);
    for (int s = 0; s < 3; s++) {
        random_batch(&r, B, 30 + s);
        memcpy(train_net_act(&a, m.input), train_net_act(&r, m.input), sizeof(float) * B * 3 * 64);
        memcpy(a.labels, r.labels, sizeof(int) * B);
        memset(a.grads, 0, sizeof(float) * m.nparams);
        memset(r.grads, 0, sizeof(float) * m.nparams);
        float la = train_net_forward(&a, B, 1), lr = train_net_forward(&r, B, 1);
        assert_float_equal(la, lr, 1e-3 * lr);
        assert_int_equal(train_net_backward(&a, B), 0);
        assert_int_equal(train_net_backward(&r, B), 0);
        for (int t = 0; t < m.nparams_tensors; t++)
            expect_close(a.grads + m.params[t].off, r.grads + m.params[t].off, m.params[t].n, 5e-3, "step gradient", t);
        train_sgd(a.params, a.momentum, a.grads, m.nparams, 0.05f, 0.9f, 5e-4f);
        train_sgd(r.params, r.momentum, r.grads, m.nparams, 0.05f, 0.9f, 5e-4f);
    }
    expect_close(a.params, r.params, m.nparams, 1e-3, "parameters after 3 steps", 0);
    expect_close(a.state, r.state, m.nstate, 1e-3, "running statistics after 3 steps", 0);
    train_net_free(&a);
    train_net_free(&r);
    train_model_free(&m);
}

/* "THPeligible:" of the mapping that holds p, from /proc/self/smaps; -1 when not found. */
static int thp_eligible(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0, eligible = -1;
    uintptr_t a = (uintptr_t)p;
    while (f && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            inside = a >= lo && a < hi;
        else if (inside && sscanf(line, "THPeligible: %d", &eligible) == 1)
            break;
    }
    if (f)
        fclose(f);
    return eligible;
}

static void big_arenas_ask_for_huge_pages(void **state)
{
    (void)state;
    size_t n = 4u << 20; /* 16 MiB */
    float *big = train_alloc_floats(n), *small = train_alloc_floats(100);
    assert_non_null(big);
    assert_non_null(small);
    assert_int_equal((uintptr_t)big % (2u << 20), 0);
    assert_int_equal((uintptr_t)small % 64, 0);
    for (size_t i = 0; i < n; i += 4096)
        assert_true(big[i] == 0.0f);
    char mode[64] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (!fgets(mode, sizeof(mode), f))
            mode[0] = 0;
        fclose(f);
    }
    /* Eligible means advised (or THP always on); where the kernel has THP off, nothing is. */
    if (strstr(mode, "[never]") == NULL && thp_eligible(big) >= 0)
        assert_int_equal(thp_eligible(big), 1);
    free(big);
    free(small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_builds_cifar_resnets_with_6n_plus_2_layers),
        cmocka_unit_test(resnet18_and_50_have_the_parameter_counts_of_the_cifar_pytorch_models),
        cmocka_unit_test(unknown_model_and_too_small_images_are_refused),
        cmocka_unit_test(initial_loss_is_close_to_log_of_the_classes),
        cmocka_unit_test(one_batch_overfits),
        cmocka_unit_test(network_gradients_match_finite_differences),
        cmocka_unit_test(onednn_matches_ref_on_every_layer_of_a_basic_block_resnet),
        cmocka_unit_test(onednn_matches_ref_on_every_layer_of_a_bottleneck_resnet),
        cmocka_unit_test(fused_onednn_trains_like_ref),
        cmocka_unit_test(big_arenas_ask_for_huge_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
