/* pattern_run: run a loaded pattern step by step through noise_run_mode(),
 * until it ends, --duration runs out or a stop is requested. */
#ifndef COSCHED_NOISE_PATTERN_RUN_H
#define COSCHED_NOISE_PATTERN_RUN_H

#include <stddef.h>

#include "pattern.h"
#include "run.h"

int noise_pattern_run(const struct noise_patterns *p, const struct noise_pattern *pat, const struct noise_opts *base,
                      struct noise_ctx *ctx, char *err, size_t errlen);

#endif
