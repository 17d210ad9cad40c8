/* opts: the settings of one noise run, and the single table of keys that both the command
 * line (--array-mb 64) and YAML config sets (array_mb: 64) are parsed through, and that output
 * lines show them by. */
#ifndef COSCHED_NOISE_OPTS_H
#define COSCHED_NOISE_OPTS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

enum noise_mode {
    NOISE_MODE_STREAM,
    NOISE_MODE_IOR,
    NOISE_MODE_PINGPONG,
    NOISE_MODE_BUSY,
    NOISE_MODE_IDLE,
    NOISE_MODE_COUNT
};

/* Plain values only (no pointers), so a run's settings copy with '=' and need no freeing. */
struct noise_opts {
    enum noise_mode mode;
    double duration;     /* > 0: run as noise for this long; 0: measured benchmark */
    double intensity;    /* 0..1 duty cycle */
    double period;       /* seconds per duty cycle */
    double report_every; /* as noise: seconds between "progress" lines; 0: none */
    long threads;        /* 0: one per CPU */
    char cpus[256];
    char mems[256];
    char output[PATH_MAX];
    char config[PATH_MAX]; /* pattern file */

    /* stream */
    uint64_t array_bytes; /* per array; 0: 4x the L3 of the CPUs in use */
    long ntimes;
    int nt_stores; /* non-temporal stores for the written array */

    /* ior */
    char dir[PATH_MAX];
    uint64_t block, transfer, max_bytes;
    long segments;
    int file_per_proc, do_write, do_read, direct, fsync, reorder, invalidate, preallocate;

    /* pingpong */
    uint64_t min_size, max_size, msg_size;
    long iterations, warmup, window;
    int allpairs;
};

/* "stream", "ior", ... and the NOIGENA names "memory", "io", "network". */
int noise_mode_parse(const char *name, enum noise_mode *out);
const char *noise_mode_name(enum noise_mode mode);

void noise_opts_defaults(struct noise_opts *o);

/* Set one key ("array-mb" or "array_mb") from its text value. from_config marks a YAML
 * config set, where process-wide keys (cpus, output, ...) are refused. Returns 0 or -1. */
int noise_opts_set(struct noise_opts *o, const char *key, const char *value, int from_config, char *err, size_t errlen);

/* Parse argv[first..] as --key VALUE, --key=VALUE or --flag; other words are returned in
 * positional (at most max_pos). *help is set on --help/-h. Returns the number of positionals or -1. */
int noise_opts_parse_argv(struct noise_opts *o, int argc, char **argv, int first, const char **positional, int max_pos,
                          int *help, char *err, size_t errlen);

/* Cross-key checks (transfer divides block, ...) once every key is set. */
int noise_opts_check(const struct noise_opts *o, char *err, size_t errlen);

/* "4M", "1MiB", "64k", "4096": binary suffixes as IOR and fio read them. */
int noise_parse_size(const char *text, uint64_t *out);

/* Print the keys that apply to mode (or all common keys when mode < 0). */
void noise_opts_usage(FILE *fp, int mode);

/* The keys that apply to o->mode and are shown in output lines, with their values, as the table
 * lists them (phase_line.c's noise_opts_json gives what took effect). */
json_t *noise_opts_to_json(const struct noise_opts *o);

#endif
