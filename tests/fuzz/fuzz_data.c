/* fuzz_data: the trainer's dataset readers — CIFAR-10/100 binary records and Fashion-MNIST
 * IDX files, plain or gzip — through train_data_load, then a batch assembled from the first
 * and last samples of what loaded. The first input byte picks the format; for IDX the rest
 * is the image file, then "@@labels@@", then the label file (used for train and t10k alike);
 * CIFAR files all get the rest. Properties: a refusal says why; a loaded set has samples in
 * both splits and every label below the class count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "fuzz.h"

static const char separator[] = "@@labels@@";

static const char *const files[] = {"data_batch_1.bin",
                                    "test_batch.bin",
                                    "train.bin",
                                    "test.bin",
                                    "train-images-idx3-ubyte",
                                    "train-labels-idx1-ubyte",
                                    "t10k-images-idx3-ubyte",
                                    "t10k-labels-idx1-ubyte"};
static char dir[] = "/tmp/cosched-fuzz-data-XXXXXX";

static void remove_files(void)
{
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
}

static void remove_scratch(void)
{
    remove_files();
    rmdir(dir);
}

static const char *scratch_dir(void)
{
    static int made;
    if (!made) {
        if (!mkdtemp(dir))
            fuzz_fail("mkdtemp: cannot make a scratch directory");
        atexit(remove_scratch);
        made = 1;
    }
    return dir;
}

static void put(const char *name, const uint8_t *data, size_t size)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        fuzz_fail("cannot write %s", path);
}

static void check(const train_data *d)
{
    const train_split *splits[2] = {&d->train, &d->test};
    for (int s = 0; s < 2; s++) {
        const train_split *sp = splits[s];
        if (sp->n < 1)
            fuzz_fail("%s: a loaded split with %d samples", d->name, sp->n);
        for (int i = 0; i < sp->n; i++)
            if (sp->y[i] >= d->classes)
                fuzz_fail("%s: label %d of sample %d is not below %d", d->name, sp->y[i], i, d->classes);
        int idx[2] = {0, sp->n - 1}, labels[2];
        float *x = malloc(sizeof(float) * 2 * (size_t)(d->C * d->H * d->W));
        train_data_batch(d, sp, idx, 2, 1, 7, 0, x, labels);
        free(x);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *spec_kind;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    scratch_dir();
    remove_files();
    switch (data[0] % 3) {
    case 0:
        spec_kind = "cifar10";
        put("data_batch_1.bin", rest, n);
        put("test_batch.bin", rest, n);
        break;
    case 1:
        spec_kind = "cifar100";
        put("train.bin", rest, n);
        put("test.bin", rest, n);
        break;
    default: {
        spec_kind = "fashion-mnist";
        const uint8_t *sep = memmem(rest, n, separator, sizeof separator - 1);
        size_t images = sep ? (size_t)(sep - rest) : n;
        const uint8_t *labels = sep ? sep + sizeof separator - 1 : rest + n;
        size_t nlabels = (size_t)(rest + n - labels);
        put("train-images-idx3-ubyte", rest, images);
        put("t10k-images-idx3-ubyte", rest, images);
        put("train-labels-idx1-ubyte", labels, nlabels);
        put("t10k-labels-idx1-ubyte", labels, nlabels);
    }
    }
    char spec[300], err[512] = "";
    snprintf(spec, sizeof spec, "%s:%s", spec_kind, dir);
    train_data d;
    if (train_data_load(&d, spec, 32, 10, err, sizeof err) == 0)
        check(&d);
    else if (!err[0])
        fuzz_fail("%s refused without a message", spec);
    train_data_free(&d);
    return 0;
}
