/* data: readers for the CIFAR binary and Fashion-MNIST IDX formats (gzip or plain, via zlib),
 * the synthetic pattern generator shared with gen-data, and batch assembly. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data.h"
#include "rng.h"

/* Read a whole file; gzread passes plain files through, so one reader serves .gz and not. */
static int slurp(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen)
{
    gzFile f = gzopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno ? errno : ENOENT));
        return -1;
    }
    size_t cap = 1 << 20, n = 0;
    uint8_t *b = malloc(cap);
    if (!b) {
        gzclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (;;) {
        if (n == cap) {
            cap *= 2;
            uint8_t *nb = realloc(b, cap);
            if (!nb) {
                free(b);
                gzclose(f);
                snprintf(err, errlen, "%s: out of memory", path);
                return -1;
            }
            b = nb;
        }
        int r = gzread(f, b + n, (unsigned)(cap - n > (1u << 30) ? (1u << 30) : cap - n));
        if (r < 0) {
            int e;
            snprintf(err, errlen, "%s: read error: %s", path, gzerror(f, &e));
            free(b);
            gzclose(f);
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    /* a gzip stream cut short reads as a clean end; gzclose_r reports the missing trailer */
    int e = gzclose(f);
    if (e != Z_OK) {
        snprintf(err, errlen, "%s: truncated or corrupt gzip data", path);
        free(b);
        return -1;
    }
    *buf = b;
    *len = n;
    return 0;
}

static int split_alloc(train_split *s, int n, size_t sample, char *err, size_t errlen)
{
    s->n = n;
    s->x = malloc((size_t)n * sample + 1);
    s->y = malloc((size_t)n + 1);
    if (!s->x || !s->y) {
        snprintf(err, errlen, "out of memory for %d samples", n);
        return -1;
    }
    return 0;
}

/* Append the records of one CIFAR binary file: [coarse] label, then 3072 bytes CHW. */
static int cifar_file(train_split *s, const char *path, int labels, int classes, char *err, size_t errlen)
{
    uint8_t *b;
    size_t len, rec = (size_t)labels + 3072;
    if (slurp(path, &b, &len, err, errlen) != 0)
        return -1;
    if (len == 0 || len % rec != 0) {
        snprintf(err, errlen,
                 "%s: truncated: %zu bytes is not a whole number of %zu-byte "
                 "records",
                 path, len, rec);
        free(b);
        return -1;
    }
    int n = (int)(len / rec);
    uint8_t *x = realloc(s->x, ((size_t)s->n + n) * 3072), *y = realloc(s->y, (size_t)s->n + n);
    if (x)
        s->x = x;
    if (y)
        s->y = y;
    if (!x || !y) {
        free(b);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const uint8_t *r = b + (size_t)i * rec;
        uint8_t label = r[labels - 1]; /* CIFAR-100: the fine label is the second byte */
        if (label >= classes) {
            snprintf(err, errlen, "%s: record %d has label %d, not below %d", path, i, label, classes);
            free(b);
            return -1;
        }
        s->y[s->n + i] = label;
        memcpy(s->x + (size_t)(s->n + i) * 3072, r + labels, 3072);
    }
    s->n += n;
    free(b);
    return 0;
}

static int load_cifar(train_data *d, const char *dir, int hundred, char *err, size_t errlen)
{
    char path[4096];
    d->C = 3, d->H = d->W = 32, d->classes = hundred ? 100 : 10;
    snprintf(d->name, sizeof(d->name), hundred ? "cifar100" : "cifar10");
    if (hundred) {
        snprintf(path, sizeof(path), "%s/train.bin", dir);
        if (cifar_file(&d->train, path, 2, 100, err, errlen) != 0)
            return -1;
        snprintf(path, sizeof(path), "%s/test.bin", dir);
        return cifar_file(&d->test, path, 2, 100, err, errlen);
    }
    for (int i = 1; i <= 5; i++) {
        snprintf(path, sizeof(path), "%s/data_batch_%d.bin", dir, i);
        /* the first batch is required; a subset of the others is a smaller training set */
        if (i > 1 && access(path, R_OK) != 0)
            continue;
        if (cifar_file(&d->train, path, 1, 10, err, errlen) != 0)
            return -1;
    }
    snprintf(path, sizeof(path), "%s/test_batch.bin", dir);
    return cifar_file(&d->test, path, 1, 10, err, errlen);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Open dir/base.gz, else dir/base. */
static int idx_slurp(const char *dir, const char *base, char *path, size_t plen, uint8_t **b, size_t *len, char *err,
                     size_t errlen)
{
    snprintf(path, plen, "%s/%s.gz", dir, base);
    if (access(path, R_OK) != 0)
        snprintf(path, plen, "%s/%s", dir, base);
    return slurp(path, b, len, err, errlen);
}

static int idx_split(train_split *s, const char *dir, const char *prefix, char *err, size_t errlen)
{
    char base[256], ipath[4096], lpath[4096];
    uint8_t *ib = NULL, *lb = NULL;
    size_t il, ll;
    int rc = -1;
    snprintf(base, sizeof(base), "%s-images-idx3-ubyte", prefix);
    if (idx_slurp(dir, base, ipath, sizeof(ipath), &ib, &il, err, errlen) != 0)
        return -1;
    snprintf(base, sizeof(base), "%s-labels-idx1-ubyte", prefix);
    if (idx_slurp(dir, base, lpath, sizeof(lpath), &lb, &ll, err, errlen) != 0)
        goto out;
    if (il < 16 || be32(ib) != 0x803) {
        snprintf(err, errlen, "%s: not an IDX image file (magic 0x803)", ipath);
        goto out;
    }
    if (ll < 8 || be32(lb) != 0x801) {
        snprintf(err, errlen, "%s: not an IDX label file (magic 0x801)", lpath);
        goto out;
    }
    uint32_t n = be32(ib + 4), rows = be32(ib + 8), cols = be32(ib + 12);
    if (rows != 28 || cols != 28) {
        snprintf(err, errlen, "%s: images are %ux%u, expected 28x28", ipath, rows, cols);
        goto out;
    }
    if (il != 16 + (size_t)n * 784) {
        snprintf(err, errlen, "%s: truncated: %zu bytes for %u images of 28x28", ipath, il, n);
        goto out;
    }
    if (be32(lb + 4) != n || ll != 8 + (size_t)n) {
        snprintf(err, errlen, "%s: truncated or mismatched: %zu bytes for %u labels", lpath, ll, n);
        goto out;
    }
    if (n == 0 || split_alloc(s, (int)n, 784, err, errlen) != 0)
        goto out;
    memcpy(s->x, ib + 16, (size_t)n * 784);
    for (uint32_t i = 0; i < n; i++) {
        if (lb[8 + i] >= 10) {
            snprintf(err, errlen, "%s: label %u of sample %u is not below 10", lpath, lb[8 + i], i);
            goto out;
        }
        s->y[i] = lb[8 + i];
    }
    rc = 0;
out:
    free(ib);
    free(lb);
    return rc;
}

/* A class-dependent pattern: class colour plus oriented stripes, with per-sample noise and
 * phase, so a small CNN learns it in a few hundred steps but not in one. */
static void synth_sample(uint8_t *x, int C, int H, int W, int label, train_rng *r)
{
    train_rng cls = train_rng_seed(0xc1a55, (uint64_t)label, 0);
    double ang = 3.14159265 * train_rng_uniform(&cls), freq = 0.5 + 1.0 * train_rng_uniform(&cls);
    double fx = freq * cos(ang), fy = freq * sin(ang);
    double phase = 6.2831853 * train_rng_uniform(r);
    for (int c = 0; c < C; c++) {
        double col = 40 * (2 * train_rng_uniform(&cls) - 1);
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++) {
                double v = 128 + col + 50 * sin(fx * w + fy * h + phase) + 45 * (2 * train_rng_uniform(r) - 1);
                x[((size_t)c * H + h) * W + w] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    }
}

static int synth_split(train_split *s, int n, int C, int H, int W, int classes, uint64_t key, char *err, size_t errlen)
{
    if (split_alloc(s, n, (size_t)C * H * W, err, errlen) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        train_rng r = train_rng_seed(0x5e7, key, (uint64_t)i);
        s->y[i] = (uint8_t)(i % classes);
        synth_sample(s->x + (size_t)i * C * H * W, C, H, W, s->y[i], &r);
    }
    return 0;
}

static void stats(train_data *d)
{
    size_t hw = (size_t)d->H * d->W;
    for (int c = 0; c < d->C; c++) {
        double s = 0, s2 = 0;
        for (int i = 0; i < d->train.n; i++) {
            const uint8_t *x = d->train.x + ((size_t)i * d->C + c) * hw;
            for (size_t j = 0; j < hw; j++) {
                s += x[j];
                s2 += (double)x[j] * x[j];
            }
        }
        double n = (double)d->train.n * hw, m = s / n, var = s2 / n - m * m;
        d->mean[c] = (float)(m / 255);
        d->std[c] = (float)(var > 1e-6 ? sqrt(var) / 255 : 1.0);
    }
}

int train_data_load(train_data *d, const char *spec, int size, int classes, char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    const char *colon = strchr(spec, ':');
    size_t kind = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *arg = colon ? colon + 1 : NULL;
    int rc;
    if (kind == 9 && strncmp(spec, "synthetic", 9) == 0) {
        long n = 10000;
        if (arg) {
            char *end;
            errno = 0;
            n = strtol(arg, &end, 10);
            if (errno || *end || end == arg || n < 1 || n > 10000000) {
                snprintf(err, errlen, "--data %s: the sample count must be 1..10000000", spec);
                return -1;
            }
        }
        snprintf(d->name, sizeof(d->name), "synthetic");
        d->C = 3, d->H = d->W = size, d->classes = classes;
        long ntest = n / 5 > classes ? n / 5 : classes;
        rc = synth_split(&d->train, (int)n, 3, size, size, classes, 1, err, errlen);
        if (rc == 0)
            rc = synth_split(&d->test, (int)ntest, 3, size, size, classes, 2, err, errlen);
    } else if (!arg || !*arg) {
        snprintf(err, errlen,
                 "--data %s: expected cifar10:DIR, cifar100:DIR, "
                 "fashion-mnist:DIR or synthetic[:N]",
                 spec);
        return -1;
    } else if (kind == 7 && strncmp(spec, "cifar10", 7) == 0) {
        rc = load_cifar(d, arg, 0, err, errlen);
    } else if (kind == 8 && strncmp(spec, "cifar100", 8) == 0) {
        rc = load_cifar(d, arg, 1, err, errlen);
    } else if (kind == 13 && strncmp(spec, "fashion-mnist", 13) == 0) {
        snprintf(d->name, sizeof(d->name), "fashion-mnist");
        d->C = 1, d->H = d->W = 28, d->classes = 10;
        rc = idx_split(&d->train, arg, "train", err, errlen);
        if (rc == 0)
            rc = idx_split(&d->test, arg, "t10k", err, errlen);
    } else {
        snprintf(err, errlen,
                 "--data %s: unknown dataset (known: cifar10:DIR, cifar100:DIR, "
                 "fashion-mnist:DIR, synthetic[:N])",
                 spec);
        return -1;
    }
    if (rc != 0) {
        train_data_free(d);
        return -1;
    }
    stats(d);
    return 0;
}

void train_data_free(train_data *d)
{
    free(d->train.x);
    free(d->train.y);
    free(d->test.x);
    free(d->test.y);
    memset(d, 0, sizeof(*d));
}

void train_data_batch(const train_data *d, const train_split *s, const int *idx, int B, int augment, uint64_t seed,
                      int epoch, float *x, int *labels)
{
    int C = d->C, H = d->H, W = d->W;
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const uint8_t *src = s->x + (size_t)idx[b] * C * H * W;
        float *dst = x + (size_t)b * C * H * W;
        int dy = 0, dx = 0, flip = 0;
        if (augment) {
            train_rng r = train_rng_seed(seed, (uint64_t)epoch, (uint64_t)idx[b]);
            dy = (int)train_rng_below(&r, 9) - 4;
            dx = (int)train_rng_below(&r, 9) - 4;
            flip = (int)train_rng_below(&r, 2);
        }
        for (int c = 0; c < C; c++) {
            float m = d->mean[c], is = 1.0f / d->std[c];
            for (int h = 0; h < H; h++)
                for (int w = 0; w < W; w++) {
                    int sh = h + dy, sw = (flip ? W - 1 - w : w) + dx;
                    float v = (sh >= 0 && sh < H && sw >= 0 && sw < W) ? src[((size_t)c * H + sh) * W + sw] / 255.0f
                                                                       : 0.0f;
                    dst[((size_t)c * H + h) * W + w] = (v - m) * is;
                }
        }
        labels[b] = s->y[idx[b]];
    }
}

void train_data_shuffle(int *perm, int n, uint64_t seed, int epoch)
{
    train_rng r = train_rng_seed(seed, 0x5348, (uint64_t)epoch);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)train_rng_below(&r, (uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

const int *train_data_shard(const int *perm, int step, int rank, int ranks, int B)
{
    return perm + ((size_t)step * ranks + rank) * B;
}

static int write_all(const char *path, const void *buf, size_t len, int gz, char *err, size_t errlen)
{
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f || gzwrite(f, buf, (unsigned)len) != (int)len || gzclose(f) != Z_OK) {
            snprintf(err, errlen, "cannot write %s", path);
            return -1;
        }
        return 0;
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

int train_data_generate(const char *format, const char *dir, int ntrain, int ntest, uint64_t seed, char *err,
                        size_t errlen)
{
    int cifar100 = strcmp(format, "cifar100") == 0, fmnist = strcmp(format, "fashion-mnist") == 0;
    if (!cifar100 && !fmnist && strcmp(format, "cifar10") != 0) {
        snprintf(err, errlen, "unknown format '%s' (known: cifar10, cifar100, fashion-mnist)", format);
        return -1;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    int classes = cifar100 ? 100 : 10, C = fmnist ? 1 : 3, H = fmnist ? 28 : 32;
    size_t sample = (size_t)C * H * H;
    for (int part = 0; part < 2; part++) {
        int n = part == 0 ? ntrain : ntest;
        char path[4096];
        size_t hdr = fmnist ? 16 : 0, rec = fmnist ? sample : sample + (cifar100 ? 2 : 1);
        uint8_t *buf = calloc(hdr + (size_t)n * rec + 1, 1);
        uint8_t *lab = calloc(8 + (size_t)n, 1);
        if (!buf || !lab) {
            free(buf);
            free(lab);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (int i = 0; i < n; i++) {
            train_rng r = train_rng_seed(seed, (uint64_t)part, (uint64_t)i);
            int label = (int)train_rng_below(&r, (uint64_t)classes);
            uint8_t *p = buf + hdr + (size_t)i * rec;
            if (fmnist) {
                lab[8 + i] = (uint8_t)label;
            } else if (cifar100) {
                p[0] = (uint8_t)(label / 5), p[1] = (uint8_t)label, p += 2;
            } else {
                p[0] = (uint8_t)label, p += 1;
            }
            synth_sample(p, C, H, H, label, &r);
        }
        int rc;
        if (fmnist) {
            const char *pre = part == 0 ? "train" : "t10k";
            put_be32(buf, 0x803), put_be32(buf + 4, (uint32_t)n);
            put_be32(buf + 8, 28), put_be32(buf + 12, 28);
            put_be32(lab, 0x801), put_be32(lab + 4, (uint32_t)n);
            snprintf(path, sizeof(path), "%s/%s-images-idx3-ubyte.gz", dir, pre);
            rc = write_all(path, buf, hdr + (size_t)n * rec, 1, err, errlen);
            snprintf(path, sizeof(path), "%s/%s-labels-idx1-ubyte.gz", dir, pre);
            if (rc == 0)
                rc = write_all(path, lab, 8 + (size_t)n, 1, err, errlen);
        } else {
            snprintf(path, sizeof(path), "%s/%s", dir,
                     cifar100 ? (part == 0 ? "train.bin" : "test.bin")
                              : (part == 0 ? "data_batch_1.bin" : "test_batch.bin"));
            rc = write_all(path, buf, (size_t)n * rec, 0, err, errlen);
        }
        free(buf);
        free(lab);
        if (rc != 0)
            return -1;
    }
    return 0;
}
