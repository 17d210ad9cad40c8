/* test_slurm_conf: Slurm's KillWait as coschedd reads it from slurm.conf — any case, comments,
 * Includes relative to the including file, the last setting winning, Slurm's default where the
 * file says nothing, an error where it cannot be read, and the cache read again on a change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slurm_conf.h"

static char dir[64];

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static const char *path_of(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/cosched-slurm-conf-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void kill_wait_is_read_in_any_case_past_comments(void **state)
{
    (void)state;
    char err[256] = "";
    write_file("slurm.conf", "ClusterName=c # KillWait=99 in a comment is no setting\n"
                             "  killwait=45   \n"
                             "#KillWait=77\n"
                             "NodeName=n1 CPUs=2 State=UNKNOWN\n");
    assert_int_equal(slurm_conf_kill_wait(path_of("slurm.conf"), err, sizeof err), 45);
}

static void the_last_setting_wins_and_includes_are_read_in_place(void **state)
{
    (void)state;
    char err[256] = "";
    write_file("timers.conf", "KillWait=12\n");
    write_file("slurm.conf", "KillWait=5\nInclude timers.conf\n");
    assert_int_equal(slurm_conf_kill_wait(path_of("slurm.conf"), err, sizeof err), 12);
    write_file("slurm.conf", "Include timers.conf\nKillWait=7\n");
    assert_int_equal(slurm_conf_kill_wait(path_of("slurm.conf"), err, sizeof err), 7);
}

static void a_file_without_it_gives_slurms_default(void **state)
{
    (void)state;
    char err[256] = "";
    write_file("slurm.conf", "ClusterName=c\nKillWaitTime=3\nKillWait=soon\n");
    assert_int_equal(slurm_conf_kill_wait(path_of("slurm.conf"), err, sizeof err), SLURM_CONF_DEFAULT_KILL_WAIT);
}

static void a_missing_file_is_an_error_that_names_it(void **state)
{
    (void)state;
    char err[256] = "";
    assert_int_equal(slurm_conf_kill_wait(path_of("none.conf"), err, sizeof err), -1);
    assert_non_null(strstr(err, "none.conf"));
    assert_non_null(strstr(err, "No such file"));
}

static void the_cache_reads_the_file_again_when_it_changes(void **state)
{
    (void)state;
    slurm_conf_cache_t cache = {0};
    assert_int_equal(slurm_conf_cached_kill_wait(&cache, path_of("slurm.conf")), SLURM_CONF_DEFAULT_KILL_WAIT);
    assert_non_null(strstr(cache.error, "cannot read"));
    write_file("slurm.conf", "KillWait=20\n");
    assert_int_equal(slurm_conf_cached_kill_wait(&cache, path_of("slurm.conf")), 20);
    assert_string_equal(cache.error, "");
    write_file("slurm.conf", "KillWait=120\n"); /* another size: read again */
    assert_int_equal(slurm_conf_cached_kill_wait(&cache, path_of("slurm.conf")), 120);
}

static void the_path_is_the_configured_one_then_slurm_conf_then_etc(void **state)
{
    (void)state;
    unsetenv("SLURM_CONF");
    assert_string_equal(slurm_conf_path(""), "/etc/slurm/slurm.conf");
    setenv("SLURM_CONF", "/opt/slurm/etc/slurm.conf", 1);
    assert_string_equal(slurm_conf_path(""), "/opt/slurm/etc/slurm.conf");
    assert_string_equal(slurm_conf_path("/site/slurm.conf"), "/site/slurm.conf");
    setenv("SLURM_CONF", "relative.conf", 1); /* not a path to trust */
    assert_string_equal(slurm_conf_path(""), "/etc/slurm/slurm.conf");
    unsetenv("SLURM_CONF");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(kill_wait_is_read_in_any_case_past_comments),    T(the_last_setting_wins_and_includes_are_read_in_place),
        T(a_file_without_it_gives_slurms_default),         T(a_missing_file_is_an_error_that_names_it),
        T(the_cache_reads_the_file_again_when_it_changes), T(the_path_is_the_configured_one_then_slurm_conf_then_etc),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
