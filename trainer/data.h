/* data: the datasets the trainer reads (CIFAR-10/100 binary, Fashion-MNIST IDX, synthetic),
 * held as bytes in memory, and the batch assembly with augmentation and normalisation. */
#ifndef COSCHED_TRAIN_DATA_H
#define COSCHED_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int n;      /* samples */
    uint8_t *x; /* n * C*H*W bytes, CHW per sample */
    uint8_t *y; /* n labels */
} train_split;

typedef struct {
    char name[32];
    int C, H, W, classes;
    train_split train, test;
    float mean[3], std[3]; /* per channel over the training split, in [0,1] units */
} train_data;

/* Load spec: "cifar10:DIR", "cifar100:DIR", "fashion-mnist:DIR", "synthetic" or "synthetic:N".
 * size and classes only apply to synthetic data. */
int train_data_load(train_data *d, const char *spec, int size, int classes, char *err, size_t errlen);
void train_data_free(train_data *d);

/* Fill x (B,C,H,W floats) and labels with samples idx[0..B) of split, normalised; when
 * augment, a random crop of the image padded by 4 and a random flip, keyed by (seed, epoch,
 * idx) so that a sample is augmented alike whatever rank or batch it lands in. */
void train_data_batch(const train_data *d, const train_split *s, const int *idx, int B, int augment, uint64_t seed,
                      int epoch, float *x, int *labels);

/* The sample order of epoch: a permutation of 0..n-1 that depends only on (seed, epoch). */
void train_data_shuffle(int *perm, int n, uint64_t seed, int epoch);

/* Rank rank's share of global step step: B indices starting at perm[(step*ranks+rank)*B]. */
const int *train_data_shard(const int *perm, int step, int rank, int ranks, int B);

/* gen-data: write a small valid dataset of format (one of TRAIN_DATA_FORMATS) into dir with
 * class-dependent patterns. */
#define TRAIN_DATA_FORMATS "cifar10 cifar100 fashion-mnist"
int train_data_generate(const char *format, const char *dir, int ntrain, int ntest, uint64_t seed, char *err,
                        size_t errlen);

#endif
