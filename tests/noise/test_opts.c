/* test_opts: settings parse the same from argv and from config sets, sizes read as IOR
 * reads them, bad values are refused with a message naming the setting, and output lines show
 * each mode's settings under the keys and in the order they always had. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <cmocka.h>

#include "opts.h"

static void sizes_use_binary_suffixes(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(noise_parse_size("4096", &v), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(noise_parse_size("64k", &v), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(noise_parse_size("16M", &v), 0);
    assert_int_equal(v, 16u << 20);
    assert_int_equal(noise_parse_size("1GiB", &v), 0);
    assert_int_equal(v, 1u << 30);
    assert_int_equal(noise_parse_size("2MB", &v), 0);
    assert_int_equal(v, 2u << 20);
}

static void bad_sizes_are_refused(void **state)
{
    (void)state;
    uint64_t v;
    const char *bad[] = {"", "-1", "1.5M", "M", "12Q", "1Mx", "99999999999999999999", "20000000T"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_not_equal(noise_parse_size(bad[i], &v), 0);
}

static void argv_sets_keys_flags_and_negations(void **state)
{
    (void)state;
    struct noise_opts o;
    noise_opts_defaults(&o);
    o.mode = NOISE_MODE_IOR;
    char *argv[] = {"x", "ior", "--block", "8M", "--transfer=2M", "--direct", "--no-fsync", "--intensity", "0.25"};
    const char *pos[1];
    int help;
    char err[256];
    assert_int_equal(noise_opts_parse_argv(&o, 9, argv, 2, pos, 0, &help, err, sizeof err), 0);
    assert_int_equal(o.block, 8u << 20);
    assert_int_equal(o.transfer, 2u << 20);
    assert_int_equal(o.direct, 1);
    assert_int_equal(o.fsync, 0);
    assert_true(o.intensity == 0.25);
    assert_int_equal(help, 0);
    assert_int_equal(noise_opts_check(&o, err, sizeof err), 0);
}

static void argv_refuses_unknown_missing_and_out_of_range(void **state)
{
    (void)state;
    struct noise_opts o;
    const char *pos[1];
    int help;
    char err[256];
    char *unknown[] = {"x", "stream", "--array-mbs", "4"};
    char *missing[] = {"x", "stream", "--array-mb"};
    char *range[] = {"x", "stream", "--intensity", "1.5"};
    char *extra[] = {"x", "stream", "oops"};
    noise_opts_defaults(&o);
    assert_int_equal(noise_opts_parse_argv(&o, 4, unknown, 2, pos, 0, &help, err, sizeof err), -1);
    assert_non_null(strstr(err, "array-mbs"));
    assert_int_equal(noise_opts_parse_argv(&o, 3, missing, 2, pos, 0, &help, err, sizeof err), -1);
    assert_non_null(strstr(err, "needs a value"));
    assert_int_equal(noise_opts_parse_argv(&o, 4, range, 2, pos, 0, &help, err, sizeof err), -1);
    assert_non_null(strstr(err, "intensity"));
    assert_int_equal(noise_opts_parse_argv(&o, 3, extra, 2, pos, 0, &help, err, sizeof err), -1);
}

static void config_sets_use_underscores_and_refuse_process_keys(void **state)
{
    (void)state;
    struct noise_opts o;
    char err[256];
    noise_opts_defaults(&o);
    o.mode = NOISE_MODE_STREAM;
    assert_int_equal(noise_opts_set(&o, "array_mb", "64", 1, err, sizeof err), 0);
    assert_int_equal(o.array_bytes, 64u << 20);
    assert_int_equal(noise_opts_set(&o, "cpus", "0-1", 1, err, sizeof err), -1);
    assert_int_equal(noise_opts_set(&o, "block", "1M", 1, err, sizeof err), -1); /* an ior key */
    assert_int_equal(noise_opts_set(&o, "duration", "3", 1, err, sizeof err), -1);
}

static void cross_checks_catch_impossible_combinations(void **state)
{
    (void)state;
    struct noise_opts o;
    char err[256];
    noise_opts_defaults(&o);
    o.mode = NOISE_MODE_IOR;
    o.block = 3u << 20;
    o.transfer = 2u << 20;
    assert_int_equal(noise_opts_check(&o, err, sizeof err), -1);
    o.transfer = 1000;
    o.block = 3000;
    o.direct = 1;
    assert_int_equal(noise_opts_check(&o, err, sizeof err), -1);
    assert_non_null(strstr(err, "4096"));
}

static void report_every_is_zero_or_a_tenth_to_an_hour(void **state)
{
    (void)state;
    struct noise_opts o;
    char err[256];
    noise_opts_defaults(&o);
    assert_true(o.report_every == 1.0);
    const char *good[] = {"0", "0.1", "2.5", "3600"}, *bad[] = {"0.05", "-1", "3600.5", "x", "", "nan"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_int_equal(noise_opts_set(&o, "report-every", good[i], 0, err, sizeof err), 0);
    assert_true(o.report_every == 3600);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(noise_opts_set(&o, "report-every", bad[i], 0, err, sizeof err), -1);
        assert_non_null(strstr(err, "0 (off)"));
    }
    o.mode = NOISE_MODE_STREAM; /* a config set may set it: a step can report more often */
    assert_int_equal(noise_opts_set(&o, "report_every", "0.5", 1, err, sizeof err), 0);
    assert_true(o.report_every == 0.5);
}

static void modes_have_noigena_aliases(void **state)
{
    (void)state;
    enum noise_mode m;
    assert_int_equal(noise_mode_parse("memory", &m), 0);
    assert_int_equal(m, NOISE_MODE_STREAM);
    assert_int_equal(noise_mode_parse("io", &m), 0);
    assert_int_equal(m, NOISE_MODE_IOR);
    assert_int_equal(noise_mode_parse("network", &m), 0);
    assert_int_equal(m, NOISE_MODE_PINGPONG);
    assert_int_equal(noise_mode_parse("disk", &m), -1);
}

/* The "config" object of a mode at its defaults, as noise/out.c prints it. */
static void assert_config(enum noise_mode mode, const char *expected)
{
    struct noise_opts o;
    noise_opts_defaults(&o);
    o.mode = mode;
    json_t *c = noise_opts_to_json(&o);
    char *text = json_dumps(c, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    assert_string_equal(text, expected);
    free(text);
    json_decref(c);
}

static void lines_show_each_modes_settings_in_their_old_order(void **state)
{
    (void)state;
#define COMMON "\"duration\":0.0,\"intensity\":1.0,\"period\":0.1,\"threads\":0,\"report_every\":1.0"
    assert_config(NOISE_MODE_STREAM, "{" COMMON ",\"array_bytes\":0,\"ntimes\":10,\"streaming_stores\":true}");
    assert_config(NOISE_MODE_IOR, "{" COMMON ",\"dir\":\".\",\"block\":16777216,\"transfer\":1048576,\"segments\":1,"
                                  "\"file_per_proc\":true,\"write\":true,\"read\":true,\"direct\":false,"
                                  "\"fsync\":true,\"reorder\":true,\"invalidate\":true,\"preallocate\":false,"
                                  "\"max_bytes\":1073741824}");
    assert_config(NOISE_MODE_PINGPONG,
                  "{" COMMON ",\"min_size\":0,\"max_size\":4194304,\"size\":1048576,\"iterations\":0,"
                  "\"warmup\":0,\"window\":64,\"allpairs\":false}");
    assert_config(NOISE_MODE_BUSY, "{" COMMON "}");
    assert_config(NOISE_MODE_IDLE, "{" COMMON "}");
#undef COMMON
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes_use_binary_suffixes),
        cmocka_unit_test(bad_sizes_are_refused),
        cmocka_unit_test(argv_sets_keys_flags_and_negations),
        cmocka_unit_test(argv_refuses_unknown_missing_and_out_of_range),
        cmocka_unit_test(config_sets_use_underscores_and_refuse_process_keys),
        cmocka_unit_test(cross_checks_catch_impossible_combinations),
        cmocka_unit_test(report_every_is_zero_or_a_tenth_to_an_hour),
        cmocka_unit_test(modes_have_noigena_aliases),
        cmocka_unit_test(lines_show_each_modes_settings_in_their_old_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
