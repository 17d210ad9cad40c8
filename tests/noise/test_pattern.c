/* test_pattern: YAML patterns expand into the step lists they describe (repeat, forever,
 * seeded random), bad files are refused naming FILE:LINE:COLUMN and the problem, and --duration
 * ends a pattern that is played (on a fake clock, so the steps played are exact). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "expand.h"
#include "noise_testlib.h"
#include "pattern.h"

static int parse(struct noise_patterns *p, const char *text, char *err, size_t errlen)
{
    return noise_patterns_parse(p, text, strlen(text), "t.yaml", err, errlen);
}

/* "memory:high:2 idle::2 ..." for the first max steps; returns the count. */
static size_t expand(const struct noise_node *root, size_t max, char *out, size_t outlen)
{
    struct noise_expand e;
    struct noise_step s;
    size_t n = 0, used = 0;
    out[0] = '\0';
    noise_expand_init(&e, root);
    while (n < max && noise_expand_next(&e, &s)) {
        used += (size_t)snprintf(out + used, outlen - used, "%s%s:%s:%g", n ? " " : "", noise_mode_name(s.mode),
                                 s.config, s.seconds);
        n++;
    }
    return n;
}

static void example_file_loads_with_noigena_patterns(void **state)
{
    (void)state;
    char path[4096], err[1024] = "", got[4096];
    const char *root = getenv("COSCHED_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/noise/examples/patterns.yaml", root ? root : ".");
    struct noise_patterns p;
    if (noise_patterns_load(&p, path, err, sizeof err) != 0)
        fail_msg("%s", err);
    const char *names[] = {"memory_silence", "network_silence", "memory_network_silence", "random"};
    for (size_t i = 0; i < 4; i++)
        assert_non_null(noise_patterns_find(&p, names[i]));
    const struct noise_pattern *ms = noise_patterns_find(&p, "memory_silence");
    assert_int_equal(expand(&ms->root, 100, got, sizeof got), 10);
    assert_string_equal(got, "stream:high:2 idle::2 stream:high:2 idle::2 stream:high:2 idle::2 "
                             "stream:high:2 idle::2 stream:high:2 idle::2");
    const struct noise_pattern *mns = noise_patterns_find(&p, "memory_network_silence");
    assert_int_equal(expand(&mns->root, 3, got, sizeof got), 3);
    assert_string_equal(got, "stream:high:2 pingpong:default:2 idle::2");
    assert_true(noise_node_uses(&mns->root, NOISE_MODE_PINGPONG));
    assert_false(noise_node_uses(&ms->root, NOISE_MODE_PINGPONG));
    noise_patterns_free(&p);
}

static void nested_repeats_expand_in_order(void **state)
{
    (void)state;
    char err[1024] = "", got[4096];
    struct noise_patterns p;
    const char *y = "busy: {hot: {intensity: 0.9}}\n"
                    "patterns:\n"
                    "  p:\n"
                    "    repeat: 2\n"
                    "    sequence:\n"
                    "      - {mode: busy, config: hot, seconds: 1}\n"
                    "      - repeat: 3\n"
                    "        sequence: [{mode: idle, seconds: 0.5}]\n"
                    "      - {mode: io, seconds: 4}\n";
    if (parse(&p, y, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(expand(&noise_patterns_find(&p, "p")->root, 100, got, sizeof got), 10);
    assert_string_equal(got, "busy:hot:1 idle::0.5 idle::0.5 idle::0.5 ior::4 "
                             "busy:hot:1 idle::0.5 idle::0.5 idle::0.5 ior::4");
    noise_patterns_free(&p);
}

static void forever_never_ends(void **state)
{
    (void)state;
    char err[1024] = "";
    static char got[65536];
    struct noise_patterns p;
    const char *y =
        "patterns:\n  f: {repeat: forever, sequence: [{mode: busy, seconds: 1}, {mode: idle, seconds: 2}]}\n";
    if (parse(&p, y, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(expand(&noise_patterns_find(&p, "f")->root, 2001, got, sizeof got), 2001);
    assert_non_null(strstr(got, "busy::1 idle::2 busy::1 idle::2"));
    noise_patterns_free(&p);
}

/* Steps play whole until the one that --duration cuts short, and none starts after it. */
static void duration_caps_a_forever_pattern_and_shortens_its_last_step(void **state)
{
    (void)state;
    const char *y = "patterns:\n  f: {repeat: forever, sequence: [{mode: busy, seconds: 0.25}, {mode: idle, seconds: "
                    "0.25}]}\n";
    struct fake_clock clock;
    fake_clock_init(&clock, 1024.0, 1.0 / 1024); /* each read: the work between two reads */
    struct noise_opts o;
    testlib_opts(&o, NOISE_MODE_BUSY, 1.0);
    json_t *all = testlib_run_pattern(y, "f", &o, &clock.clock);
    json_t *phases = testlib_lines(all, "phase");
    assert_int_equal(json_array_size(phases), 4);
    const char *modes[] = {"busy", "idle", "busy", "idle"};
    double asked = 0;
    for (size_t i = 0; i < 4; i++) {
        json_t *l = json_array_get(phases, i);
        assert_string_equal(json_string_value(json_object_get(l, "mode")), modes[i]);
        assert_int_equal(json_integer_value(json_object_get(l, "step")), (json_int_t)i);
        double seconds = json_real_value(json_object_get(json_object_get(l, "config"), "duration"));
        if (i < 3)
            assert_true(seconds == 0.25);
        else
            assert_true(seconds > 0.2 && seconds < 0.25); /* what was left of the second */
        asked += seconds;
    }
    assert_true(asked <= 1.0);
    json_decref(phases);
    json_decref(all);
    fake_clock_free(&clock);
}

static const char *random_yaml(unsigned seed, double seconds, const char *weights)
{
    static char y[512];
    snprintf(y, sizeof y, "patterns:\n  r:\n    random: {seed: %u, seconds: %g, step_seconds: 2, weights: {%s}}\n",
             seed, seconds, weights);
    return y;
}

static void random_is_the_same_for_the_same_seed(void **state)
{
    (void)state;
    char err[1024] = "", a[65536], b[65536], c[65536];
    struct noise_patterns p1, p2, p3;
    const char *w = "memory: 25, io: 25, network: 25, idle: 25";
    assert_int_equal(parse(&p1, random_yaml(42, 61, w), err, sizeof err), 0);
    assert_int_equal(parse(&p2, random_yaml(42, 61, w), err, sizeof err), 0);
    assert_int_equal(parse(&p3, random_yaml(43, 61, w), err, sizeof err), 0);
    /* 61 s in 2 s steps: 30 steps of 2 s and a last one of 1 s. */
    assert_int_equal(expand(&p1.patterns[0].root, 1000, a, sizeof a), 31);
    assert_int_equal(expand(&p2.patterns[0].root, 1000, b, sizeof b), 31);
    assert_int_equal(expand(&p3.patterns[0].root, 1000, c, sizeof c), 31);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    assert_non_null(strstr(a + strlen(a) - 3, ":1"));
    noise_patterns_free(&p1);
    noise_patterns_free(&p2);
    noise_patterns_free(&p3);
}

static void random_follows_the_weights(void **state)
{
    (void)state;
    char err[1024] = "";
    struct noise_patterns p;
    assert_int_equal(parse(&p, random_yaml(7, 4000, "memory: 50, io: 0, idle: 50"), err, sizeof err), 0);
    struct noise_expand e;
    struct noise_step s;
    int count[NOISE_MODE_COUNT] = {0};
    double total = 0;
    noise_expand_init(&e, &p.patterns[0].root);
    while (noise_expand_next(&e, &s)) {
        count[s.mode]++;
        total += s.seconds;
    }
    assert_float_equal(total, 4000, 1e-6);
    assert_int_equal(count[NOISE_MODE_IOR], 0);
    assert_int_equal(count[NOISE_MODE_PINGPONG], 0);
    /* 2000 draws at 50 %: far outside 850..1150 would mean a broken draw, not bad luck. */
    assert_in_range(count[NOISE_MODE_STREAM], 850, 1150);
    assert_int_equal(count[NOISE_MODE_STREAM] + count[NOISE_MODE_IDLE], 2000);
    noise_patterns_free(&p);
}

static void splitmix64_matches_the_reference_sequence(void **state)
{
    (void)state;
    /* The reference vector for seed 1234567 (Vigna's splitmix64.c): the random patterns
     * of a given seed stay the same across builds and machines. */
    uint64_t s = 1234567;
    assert_true(noise_splitmix64(&s) == 6457827717110365317ull);
    assert_true(noise_splitmix64(&s) == 3203168211198807973ull);
    assert_true(noise_splitmix64(&s) == 9817491932198370423ull);
}

struct bad_case {
    const char *yaml;
    const char *where;   /* "t.yaml:L:C:" */
    const char *problem; /* a piece of the message */
};

static void bad_files_are_refused_with_line_and_column(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {"patterns: {x: [\n", "t.yaml:2:1:", "flow"},
        {"patterns:\n  x:\n    sequence:\n      - {mode: memroy, seconds: 2}\n",
         "t.yaml:4:16:", "unknown mode 'memroy'"},
        {"patterns:\n  x: [{mode: idle}]\n", "t.yaml:2:7:", "needs seconds"},
        {"patterns:\n  x: [{mode: idle, seconds: -1}]\n", "t.yaml:2:29:", "more than 0"},
        {"patterns:\n  x: [{mode: idle, seconds: 1, colour: red}]\n", "t.yaml:2:32:", "unknown key 'colour'"},
        {"patterns:\n  x: {repeat: 0, sequence: [{mode: idle, seconds: 1}]}\n", "t.yaml:2:15:", "repeat"},
        {"patterns:\n  x: {repeat: often, sequence: [{mode: idle, seconds: 1}]}\n", "t.yaml:2:15:", "'often'"},
        {"patterns:\n  x: {sequence: []}\n", "t.yaml:2:17:", "empty"},
        {"patterns:\n  x: [{mode: memory, config: high, seconds: 1}]\n", "t.yaml:2:7:", "config 'high'"},
        {"memory:\n  low: {array_mb: lots}\npatterns:\n  x: [{mode: idle, seconds: 1}]\n", "t.yaml:2:19:", "array_mb"},
        {"memory:\n  low: {arrays: 3}\npatterns:\n  x: [{mode: idle, seconds: 1}]\n",
         "t.yaml:2:9:", "unknown setting 'arrays'"},
        {"memory:\n  low: {cpus: 0-3}\npatterns:\n  x: [{mode: idle, seconds: 1}]\n", "t.yaml:2:9:", "cannot be set"},
        {"io:\n  odd: {block: 3M, transfer: 2M}\npatterns:\n  x: [{mode: idle, seconds: 1}]\n",
         "t.yaml:2:8:", "multiple of --transfer"},
        {"colour: red\npatterns:\n  x: [{mode: idle, seconds: 1}]\n", "t.yaml:1:1:", "top-level key 'colour'"},
        {"memory: {}\n", "t.yaml:1:1:", "no 'patterns'"},
        {"", "t.yaml:1:1:", "empty"},
        {"patterns:\n  x: {random: {seconds: 10, weights: {memory: 0}}}\n", "t.yaml:2:38:", "all be zero"},
        {"patterns:\n  x: {random: {seed: -3, seconds: 10, weights: {idle: 1}}}\n", "t.yaml:2:22:", "seed"},
        {"patterns:\n  x: [{mode: idle, seconds: 1}]\n  x: [{mode: idle, seconds: 2}]\n", "t.yaml:3:3:", "twice"},
        {"patterns:\n  x: [[[[[[[[[{mode: idle, seconds: 1}]]]]]]]]]\n", "t.yaml:2:", "nest deeper"},
        {"patterns:\n  x: 5\n", "t.yaml:2:6:", "expected a step"},
        {"patterns:\n  x: &p {sequence: [*p]}\n", "t.yaml:2:", "nest deeper"}, /* an alias to itself */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct noise_patterns p;
        char err[1024] = "";
        int rc = parse(&p, cases[i].yaml, err, sizeof err);
        if (rc == 0 || strncmp(err, cases[i].where, strlen(cases[i].where)) != 0 || !strstr(err, cases[i].problem))
            fail_msg("case %zu: rc %d, message \"%s\"; wanted %s ... %s", i, rc, err, cases[i].where, cases[i].problem);
    }
}

static void deep_brackets_are_refused_before_libyaml(void **state)
{
    (void)state;
    /* libyaml needs seconds for tens of thousands of open brackets: refused at the 65th. */
    enum { DEPTH = 50000 };
    static char y[DEPTH + 32];
    struct noise_patterns p;
    char err[1024] = "";
    strcpy(y, "patterns:\n  x: ");
    memset(y + strlen(y), '[', DEPTH);
    assert_int_equal(noise_patterns_parse(&p, y, strlen(y), "t.yaml", err, sizeof err), -1);
    assert_string_equal(err, "t.yaml:2:70: brackets nest deeper than 64 levels");
    /* Brackets inside quotes and comments do not count. */
    const char *ok = "# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n"
                     "io: {d: {dir: \"/tmp/[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}}\n"
                     "patterns: {x: [{mode: idle, seconds: 1}]}\n";
    if (noise_patterns_parse(&p, ok, strlen(ok), "t.yaml", err, sizeof err) != 0)
        fail_msg("%s", err);
    noise_patterns_free(&p);
}

static void missing_file_is_named(void **state)
{
    (void)state;
    struct noise_patterns p;
    char err[1024] = "";
    assert_int_equal(noise_patterns_load(&p, "/nonexistent/p.yaml", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/p.yaml"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(example_file_loads_with_noigena_patterns),
        cmocka_unit_test(nested_repeats_expand_in_order),
        cmocka_unit_test(forever_never_ends),
        cmocka_unit_test(duration_caps_a_forever_pattern_and_shortens_its_last_step),
        cmocka_unit_test(random_is_the_same_for_the_same_seed),
        cmocka_unit_test(random_follows_the_weights),
        cmocka_unit_test(splitmix64_matches_the_reference_sequence),
        cmocka_unit_test(bad_files_are_refused_with_line_and_column),
        cmocka_unit_test(deep_brackets_are_refused_before_libyaml),
        cmocka_unit_test(missing_file_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
