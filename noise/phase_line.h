/* phase_line: the "phase" line every mode ends a phase with, and the "config" object of the
 * settings that every output line of a run carries. The modes call it; run.c does not. */
#ifndef COSCHED_NOISE_PHASE_LINE_H
#define COSCHED_NOISE_PHASE_LINE_H

#include <jansson.h>

#include "opts.h"
#include "run.h"

/* Emit one "phase" line (see docs/noise-output.md) and add it to the totals.
 * extra (may be NULL) is merged into the line and released. */
void noise_emit_phase(struct noise_ctx *ctx, const struct noise_opts *o, const char *phase, double start_wall,
                      double duration, double bytes, double ops, double cpu_seconds, json_t *extra);

/* The settings that matter for o->mode, as the "config" object of output lines. */
json_t *noise_opts_json(const struct noise_opts *o);

#endif
