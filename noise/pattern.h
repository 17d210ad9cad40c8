/* pattern: NOIGENA-style noise patterns read from YAML (libyaml): config sets per mode and
 * named patterns built from steps, repeated sequences and seeded random blocks. */
#ifndef COSCHED_NOISE_PATTERN_H
#define COSCHED_NOISE_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "opts.h"

#define NOISE_NAME_MAX 64
#define NOISE_FOREVER (-1L)
#define NOISE_MAX_DEPTH 8

struct noise_step {
    enum noise_mode mode;
    char config[NOISE_NAME_MAX]; /* "" for the mode's defaults */
    double seconds;
};

enum noise_node_kind { NOISE_NODE_STEP, NOISE_NODE_SEQUENCE, NOISE_NODE_RANDOM };

struct noise_random {
    uint64_t seed;
    double seconds;      /* total length of the block */
    double step_seconds; /* length of each drawn step (the last one may be shorter) */
    double weights[NOISE_MODE_COUNT];
    char configs[NOISE_MODE_COUNT][NOISE_NAME_MAX]; /* config set per mode, "" for defaults */
};

struct noise_node {
    enum noise_node_kind kind;
    int line, column;            /* 1-based, where the node starts in the file */
    struct noise_step step;      /* NOISE_NODE_STEP */
    long repeat;                 /* NOISE_NODE_SEQUENCE: count or NOISE_FOREVER */
    struct noise_node *children; /* NOISE_NODE_SEQUENCE */
    size_t nchildren;
    struct noise_random random; /* NOISE_NODE_RANDOM */
};

struct noise_setting {
    char key[NOISE_NAME_MAX];
    char *value;
    int line, column;
};

struct noise_config_set {
    enum noise_mode mode;
    char name[NOISE_NAME_MAX];
    struct noise_setting *settings;
    size_t nsettings;
};

struct noise_pattern {
    char name[NOISE_NAME_MAX];
    struct noise_node root;
};

struct noise_patterns {
    struct noise_config_set *sets;
    size_t nsets;
    struct noise_pattern *patterns;
    size_t npatterns;
};

/* Read and check a whole file; nothing is kept on error, and err reads
 * "FILE:LINE:COLUMN: what is wrong". */
int noise_patterns_load(struct noise_patterns *p, const char *path, char *err, size_t errlen);

/* The same from text in memory; name is used in messages. */
int noise_patterns_parse(struct noise_patterns *p, const char *text, size_t len, const char *name, char *err,
                         size_t errlen);

void noise_patterns_free(struct noise_patterns *p);

const struct noise_pattern *noise_patterns_find(const struct noise_patterns *p, const char *name);

/* NULL when there is no such set; name "" finds nothing. */
const struct noise_config_set *noise_patterns_config(const struct noise_patterns *p, enum noise_mode mode,
                                                     const char *name);

/* Apply a config set on top of o (o->mode must be the set's mode). */
int noise_config_apply(const struct noise_config_set *set, struct noise_opts *o, char *err, size_t errlen);

/* Nonzero when any step the node can produce runs in mode. */
int noise_node_uses(const struct noise_node *node, enum noise_mode mode);

#endif
