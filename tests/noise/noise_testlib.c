/* noise_testlib: what the noise unit tests share — a fake clock that moves only when read or
 * slept on, so paced loops give exact figures, and one run of a mode read back as JSON lines. */
#include "noise_testlib.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pattern.h"
#include "pattern_run.h"
#include "place.h"

static double fake_now(void *arg)
{
    struct fake_clock *f = arg;
    pthread_mutex_lock(&f->lock);
    double t = f->now;
    f->now += f->tick;
    pthread_mutex_unlock(&f->lock);
    return t;
}

static void fake_sleep(void *arg, double seconds)
{
    struct fake_clock *f = arg;
    pthread_mutex_lock(&f->lock);
    f->now += seconds;
    f->slept += seconds;
    f->sleeps++;
    pthread_mutex_unlock(&f->lock);
}

void fake_clock_init(struct fake_clock *f, double start, double tick)
{
    *f = (struct fake_clock){.clock = {.now = fake_now, .sleep = fake_sleep, .arg = f}, .now = start, .tick = tick};
    pthread_mutex_init(&f->lock, NULL);
}

void fake_clock_free(struct fake_clock *f)
{
    pthread_mutex_destroy(&f->lock);
}

void testlib_opts(struct noise_opts *o, enum noise_mode mode, double duration)
{
    noise_opts_defaults(o);
    o->mode = mode;
    o->duration = duration;
    o->threads = 1;
    o->report_every = 0;
}

void testlib_out_open(struct noise_out *out, char *path)
{
    char err[256];
    snprintf(path, TESTLIB_PATH_MAX, "/tmp/test_noise.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(noise_out_open(out, path, -1, err, sizeof err), 0);
}

json_t *testlib_out_lines(struct noise_out *out, const char *path)
{
    noise_out_close(out);
    json_t *lines = json_array();
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char line[8192];
    while (fgets(line, sizeof line, fp)) {
        json_t *l = json_loads(line, 0, NULL);
        assert_non_null(l);
        json_array_append_new(lines, l);
    }
    fclose(fp);
    unlink(path);
    return lines;
}

/* Run one mode or a pattern into a temp file and read it back. */
static json_t *run(const struct noise_patterns *p, const struct noise_pattern *pat, const struct noise_opts *o,
                   const struct noise_clock *clock)
{
    char path[TESTLIB_PATH_MAX], err[256];
    struct noise_place place;
    struct noise_out out;
    assert_int_equal(noise_place_init(&place, NULL, NULL, err, sizeof err), 0);
    testlib_out_open(&out, path);
    struct noise_ctx ctx = {.out = &out, .place = &place, .nranks = 1, .step = -1, .clock = clock};
    int rc = pat ? noise_pattern_run(p, pat, o, &ctx, err, sizeof err) : noise_run_mode(o, &ctx, err, sizeof err);
    json_t *lines = testlib_out_lines(&out, path);
    noise_place_free(&place);
    if (rc != 0)
        fail_msg("the run failed: %s", err);
    return lines;
}

json_t *testlib_run(const struct noise_opts *o, const struct noise_clock *clock)
{
    return run(NULL, NULL, o, clock);
}

json_t *testlib_run_pattern(const char *patterns, const char *name, const struct noise_opts *o,
                            const struct noise_clock *clock)
{
    struct noise_patterns p = {0};
    char err[256];
    if (noise_patterns_parse(&p, patterns, strlen(patterns), "t.yaml", err, sizeof err) != 0)
        fail_msg("%s", err);
    const struct noise_pattern *pat = noise_patterns_find(&p, name);
    assert_non_null(pat);
    json_t *lines = run(&p, pat, o, clock);
    noise_patterns_free(&p);
    return lines;
}

json_t *testlib_lines(const json_t *lines, const char *event)
{
    json_t *picked = json_array();
    size_t i;
    json_t *l;
    json_array_foreach(lines, i, l) {
        if (strcmp(json_string_value(json_object_get(l, "event")), event) == 0)
            json_array_append(picked, l);
    }
    return picked;
}
