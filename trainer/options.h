/* options: everything a training run is told on the command line, and its parser.
 * The parser only checks and converts; it never touches MPI, files or threads. */
#ifndef COSCHED_TRAIN_OPTIONS_H
#define COSCHED_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *model, *data, *backend, *schedule, *allreduce;
    int image_size, classes, batchnorm, augment;
    long epochs, steps, batch, threads, log_every;
    double lr, momentum, weight_decay, warmup_epochs, smoothing, fusion_mb;
    const char *cpus, *mems, *trace, *checkpoint, *resume;
    long checkpoint_every;
    long stop_after;  /* leave after this many steps, as if interrupted; 0: never */
    long max_samples; /* cap on the samples of each split; 0: all */
    uint64_t seed;
    int help, version;
} train_options;

/* Fill o from argv (after the program name). Returns 0, or -1 with a message naming the
 * bad flag or value. */
int train_options_parse(train_options *o, int argc, char **argv, char *err, size_t errlen);

/* gen-data's command line: cosched-train gen-data --format FORMAT [--samples N]
 * [--test-samples N] [--seed N] OUT_DIR. */
typedef struct {
    const char *format, *out_dir;
    long samples, test_samples; /* of the training and the test split */
    uint64_t seed;
    int help;
} train_gen_data_options;

/* Fill o from argv (after "gen-data"), its defaults first. Returns 0, or -1 with a message
 * naming the bad flag or value, or what is missing. */
int train_gen_data_parse(train_gen_data_options *o, int argc, char **argv, char *err, size_t errlen);

/* The --help text (cosched-train's and gen-data's). */
void train_usage(FILE *f);

#endif
