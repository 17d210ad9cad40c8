/* noise_testlib: what the noise unit tests share — a fake clock that moves only when read or
 * slept on, so paced loops give exact figures, and one run of a mode read back as JSON lines. */
#ifndef COSCHED_TEST_NOISE_TESTLIB_H
#define COSCHED_TEST_NOISE_TESTLIB_H

#include <pthread.h>
#include <jansson.h>

#include "noise_clock.h"
#include "opts.h"
#include "run.h"

/* Each read returns the time and moves it on by `tick` (the work between two reads); each sleep
 * moves it on by exactly what was asked. Binary fractions keep the sums exact. */
struct fake_clock {
    struct noise_clock clock; /* what the code under test is given: &f->clock */
    pthread_mutex_t lock;     /* a worker and the reporting thread may both read it */
    double now, tick;
    double slept; /* seconds asked for in all sleeps */
    long sleeps;
};

void fake_clock_init(struct fake_clock *f, double start, double tick);
void fake_clock_free(struct fake_clock *f);

/* Options for one busy or idle thread of o->duration seconds, reporting off. */
void testlib_opts(struct noise_opts *o, enum noise_mode mode, double duration);

/* Run o->mode, or the pattern `name` of the YAML text `patterns` on o, with ctx->clock = clock
 * (NULL: the real one); its output lines as a JSON array (the caller frees it). */
json_t *testlib_run(const struct noise_opts *o, const struct noise_clock *clock);
json_t *testlib_run_pattern(const char *patterns, const char *name, const struct noise_opts *o,
                            const struct noise_clock *clock);

/* An output stream into a new temp file (its name in path), and the lines written to it once
 * closed, as a JSON array (the caller frees it; the file is removed). */
#define TESTLIB_PATH_MAX 64
void testlib_out_open(struct noise_out *out, char *path);
json_t *testlib_out_lines(struct noise_out *out, const char *path);

/* The lines of `event` ("phase", "progress"), in order: a new array. */
json_t *testlib_lines(const json_t *lines, const char *event);

#endif
