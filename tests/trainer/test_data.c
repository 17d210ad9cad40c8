/* test_data: the dataset readers on files written by gen-data, refusal of truncated or
 * missing files, shuffling and sharding over ranks, augmentation, and the LR schedules. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "data.h"
#include "optim.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/cosched-train-data-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void load_generated(const char *format, const char *spec_kind, int C, int H, int classes)
{
    char sub[512], spec[600], err[512];
    snprintf(sub, sizeof(sub), "%s/%s", dir, format);
    assert_int_equal(train_data_generate(format, sub, 50, 20, 3, err, sizeof(err)), 0);
    snprintf(spec, sizeof(spec), "%s:%s", spec_kind, sub);
    train_data d;
    if (train_data_load(&d, spec, 32, 10, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(d.train.n, 50);
    assert_int_equal(d.test.n, 20);
    assert_int_equal(d.C, C);
    assert_int_equal(d.H, H);
    assert_int_equal(d.classes, classes);
    for (int i = 0; i < d.train.n; i++)
        assert_true(d.train.y[i] < classes);
    assert_true(d.mean[0] > 0.2 && d.mean[0] < 0.8 && d.std[0] > 0.05);
    train_data_free(&d);
}

static void gen_data_cifar10_cifar100_and_fashion_mnist_load_back(void **state)
{
    (void)state;
    load_generated("cifar10", "cifar10", 3, 32, 10);
    load_generated("cifar100", "cifar100", 3, 32, 100);
    load_generated("fashion-mnist", "fashion-mnist", 1, 28, 10);
}

static void truncate_file(const char *path, long by)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, len - by), 0);
}

static void truncated_and_missing_files_are_refused_with_their_name(void **state)
{
    (void)state;
    char sub[512], path[600], spec[600], err[512];
    train_data d;
    snprintf(sub, sizeof(sub), "%s/cut10", dir);
    assert_int_equal(train_data_generate("cifar10", sub, 30, 10, 1, err, sizeof(err)), 0);
    snprintf(path, sizeof(path), "%s/data_batch_1.bin", sub);
    truncate_file(path, 100);
    snprintf(spec, sizeof(spec), "cifar10:%s", sub);
    assert_int_equal(train_data_load(&d, spec, 32, 10, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "truncated"));
    assert_non_null(strstr(err, "data_batch_1.bin"));

    snprintf(sub, sizeof(sub), "%s/cutf", dir);
    assert_int_equal(train_data_generate("fashion-mnist", sub, 30, 10, 1, err, sizeof(err)), 0);
    snprintf(path, sizeof(path), "%s/t10k-images-idx3-ubyte.gz", sub);
    truncate_file(path, 40);
    snprintf(spec, sizeof(spec), "fashion-mnist:%s", sub);
    assert_int_equal(train_data_load(&d, spec, 32, 10, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "t10k-images-idx3-ubyte.gz"));

    snprintf(spec, sizeof(spec), "cifar100:%s/nonexistent", dir);
    assert_int_equal(train_data_load(&d, spec, 32, 10, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "cannot open"));
    assert_int_equal(train_data_load(&d, "imagenet:/x", 32, 10, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "unknown dataset"));
    assert_int_equal(train_data_load(&d, "synthetic:0", 32, 10, err, sizeof(err)), -1);
    assert_int_equal(train_data_generate("mnist", sub, 3, 3, 1, err, sizeof(err)), -1);
}

static void every_sample_is_seen_once_per_epoch_across_ranks(void **state)
{
    (void)state;
    enum { N = 1003, B = 8, RANKS = 3 };
    int perm[N], seen[N], other[N];
    train_data_shuffle(perm, N, 7, 0);
    train_data_shuffle(other, N, 7, 1);
    assert_memory_not_equal(perm, other, sizeof(perm));
    memset(seen, 0, sizeof(seen));
    int steps = N / (B * RANKS);
    for (int s = 0; s < steps; s++)
        for (int r = 0; r < RANKS; r++) {
            const int *idx = train_data_shard(perm, s, r, RANKS, B);
            for (int b = 0; b < B; b++)
                seen[idx[b]]++;
        }
    int once = 0;
    for (int i = 0; i < N; i++) {
        assert_true(seen[i] <= 1);
        once += seen[i];
    }
    assert_int_equal(once, steps * B * RANKS);
    /* the shuffle depends only on (seed, epoch): what every rank computes alike */
    train_data_shuffle(other, N, 7, 0);
    assert_memory_equal(perm, other, sizeof(perm));
}

static void augmentation_depends_on_the_sample_not_its_position(void **state)
{
    (void)state;
    char err[256];
    train_data d;
    assert_int_equal(train_data_load(&d, "synthetic:40", 8, 4, err, sizeof(err)), 0);
    int idx1[3] = {5, 9, 17}, idx2[2] = {17, 5}, lab[3];
    float a[3 * 192], b[2 * 192], plain[3 * 192];
    train_data_batch(&d, &d.train, idx1, 3, 1, 1, 2, a, lab);
    train_data_batch(&d, &d.train, idx2, 2, 1, 1, 2, b, lab);
    assert_memory_equal(a + 2 * 192, b, 192 * sizeof(float));
    assert_memory_equal(a, b + 192, 192 * sizeof(float));
    assert_int_equal(lab[0], d.train.y[17]);
    train_data_batch(&d, &d.train, idx1, 3, 0, 1, 2, plain, lab);
    assert_memory_not_equal(a, plain, sizeof(plain));
    train_data_free(&d);
}

static void normalisation_centres_the_training_set(void **state)
{
    (void)state;
    char err[256];
    train_data d;
    assert_int_equal(train_data_load(&d, "synthetic:64", 8, 4, err, sizeof(err)), 0);
    int idx[64], lab[64];
    static float x[64 * 192];
    for (int i = 0; i < 64; i++)
        idx[i] = i;
    train_data_batch(&d, &d.train, idx, 64, 0, 0, 0, x, lab);
    double s = 0, s2 = 0;
    for (int i = 0; i < 64 * 192; i++)
        s += x[i], s2 += (double)x[i] * x[i];
    assert_true(fabs(s / (64 * 192)) < 0.05);
    assert_true(fabs(s2 / (64 * 192) - 1) < 0.1);
    train_data_free(&d);
}

static void schedules_warm_up_scale_and_decay(void **state)
{
    (void)state;
    train_schedule s = {.lr = 0.1,
                        .ranks = 4,
                        .kind = TRAIN_SCHED_STEP,
                        .total_steps = 1000,
                        .steps_per_epoch = 100,
                        .warmup_steps = 100};
    assert_float_equal(train_lr(&s, 0), 0.1, 1e-12);
    assert_float_equal(train_lr(&s, 50), 0.25, 1e-12);
    assert_float_equal(train_lr(&s, 100), 0.4, 1e-12);
    assert_float_equal(train_lr(&s, 499), 0.4, 1e-12);
    assert_float_equal(train_lr(&s, 500), 0.04, 1e-12);
    assert_float_equal(train_lr(&s, 750), 0.004, 1e-12);
    s.kind = TRAIN_SCHED_COSINE;
    assert_float_equal(train_lr(&s, 100), 0.4, 1e-12);
    assert_float_equal(train_lr(&s, 550), 0.2, 1e-9);
    assert_true(train_lr(&s, 999) < 1e-4);
    s.kind = TRAIN_SCHED_EXPONENTIAL;
    assert_float_equal(train_lr(&s, 350), 0.4 * pow(0.95, 3), 1e-12);
    assert_int_equal(train_sched_parse("cosine"), TRAIN_SCHED_COSINE);
    assert_int_equal(train_sched_parse("linear"), -1);
}

static void sgd_applies_weight_decay_and_momentum_like_pytorch(void **state)
{
    (void)state;
    float w[2] = {1, -2}, v[2] = {0.5f, 0}, g[2] = {0.1f, 0.2f};
    train_sgd(w, v, g, 2, 0.1f, 0.9f, 0.01f);
    /* v = 0.9*v + g + wd*w; w -= lr*v */
    assert_float_equal(v[0], 0.9 * 0.5 + 0.1 + 0.01, 1e-6);
    assert_float_equal(w[0], 1 - 0.1 * (0.45 + 0.11), 1e-6);
    assert_float_equal(v[1], 0.2 - 0.02, 1e-6);
    assert_float_equal(w[1], -2 - 0.1 * 0.18, 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gen_data_cifar10_cifar100_and_fashion_mnist_load_back),
        cmocka_unit_test(truncated_and_missing_files_are_refused_with_their_name),
        cmocka_unit_test(every_sample_is_seen_once_per_epoch_across_ranks),
        cmocka_unit_test(augmentation_depends_on_the_sample_not_its_position),
        cmocka_unit_test(normalisation_centres_the_training_set),
        cmocka_unit_test(schedules_warm_up_scale_and_decay),
        cmocka_unit_test(sgd_applies_weight_decay_and_momentum_like_pytorch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
