/* experiment_hook: a --trainer command in the blocked design. Any unmodified PyTorch program
 * will do: cosched's step hook (libcosched/autoreport, docs/autoreport.md), put first on its
 * PYTHONPATH, appends each of its optimizer steps to a step log in cosched-train's step-line
 * shape, and the long run follows that file instead of the program's stdout. Here: where the
 * hook's directory is, the run's environment that injects it, and what is said when no step
 * comes. */
#ifndef COSCHED_EXPERIMENT_HOOK_H
#define COSCHED_EXPERIMENT_HOOK_H

#include <stddef.h>

#include <jansson.h>

#include "experiment.h"

/* Seconds a trainer command has for its first step before the experiment gives up on it (or
 * --time when shorter, but never under EXP_HOOK_FIRST_STEP_MIN_S): it starts Python, imports
 * torch and builds its model first. */
enum { EXP_HOOK_FIRST_STEP_S = 60, EXP_HOOK_FIRST_STEP_MIN_S = 20 };

/* The directory of the hook's sitecustomize.py: $COSCHED_AUTOREPORT_DIR (a source tree, the tests),
 * else where meson installs it. 0, or EXIT_FAIL after saying why. */
int exp_hook_dir(char *out, size_t len);

/* The run's environment for a trainer command whose steps go to step_log: PYTHONPATH with the
 * hook's directory first (then the caller's PYTHONPATH, the daemon passes no other) and
 * COSCHED_AUTOREPORT_STEPLOG. The step log is made empty here, owned by the run's uid, which
 * writes it. NULL after saying why (no hook directory, an unwritable --out). */
json_t *exp_hook_env(const exp_options_t *o, const char *step_log);

/* How long the trainer command may take to its first step under these options. */
double exp_hook_first_step_seconds(const exp_options_t *o);

/* Say that no step came from the trainer command in `seconds`, and why that may be, with the
 * tail of its output (stdout: the run's output file; its .err beside it). */
void exp_hook_say_no_steps(const exp_options_t *o, double seconds, const char *stdout_path);

/* The last lines of a run's stdout and of its .err beside it, each line prefixed "  | ". */
void exp_print_output_tail(FILE *f, const char *stdout_path);

#endif
