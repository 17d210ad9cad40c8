/* test_throttle_memory: memory protection of jobs Slurm confines, on fake trees (this machine's
 * cgroup v2 has no memory controller for jobs): a trainer's v2 job cgroup gets memory.low = its
 * memory.max, and nothing when it has no number there or no memory controller; a co-tenant's v1
 * memory cgroup (beside its freezer one) gets memory.soft_limit_in_bytes = 0, and nothing when
 * there is none; a write that fails is said with its path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "throttle_testlib.h"

static char root[256];

static int setup(void **state)
{
    (void)state;
    tt_tmpdir(root, sizeof root);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tt_rm_rf(root);
    return 0;
}

static throttle_slurm_job_t v2_job(void)
{
    throttle_slurm_job_t job = {0};
    snprintf(job.cgroup2, sizeof job.cgroup2, "%s/system.slice/slurmstepd.scope/job_41", root);
    return job;
}

static throttle_slurm_job_t v1_job(void)
{
    throttle_slurm_job_t job = {0};
    snprintf(job.freezer1, sizeof job.freezer1, "%s/freezer/slurm_cn1/uid_0/job_42", root);
    snprintf(job.cpuset1, sizeof job.cpuset1, "%s/cpuset/slurm_cn1/uid_0/job_42", root);
    return job;
}

static void a_trainer_keeps_what_slurm_gave_it_as_memory_low(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v2_job();
    char what[600], buf[64], path[600];
    tt_write(job.cgroup2, "memory.max", "4294967296\n");
    assert_int_equal(throttle_protect_trainer_memory(&job, what, sizeof what), 1);
    snprintf(path, sizeof path, "%s/memory.low", job.cgroup2);
    assert_string_equal(tt_read(path, buf, sizeof buf), "4294967296");
    assert_non_null(strstr(what, "memory.low 4294967296 (its memory.max)"));
}

static void a_trainer_without_a_limit_or_a_memory_controller_is_left_alone(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v2_job();
    char what[600], path[600];
    snprintf(path, sizeof path, "%s/memory.low", job.cgroup2);
    mkdir(root, 0755);
    assert_int_equal(throttle_protect_trainer_memory(&job, what, sizeof what), 0); /* no memory.max */
    assert_non_null(strstr(what, "has no memory controller"));
    tt_write(job.cgroup2, "memory.max", "max\n");
    assert_int_equal(throttle_protect_trainer_memory(&job, what, sizeof what), 0);
    assert_non_null(strstr(what, "is 'max', not a number of bytes"));
    assert_int_equal(access(path, F_OK), -1);
    throttle_slurm_job_t v1 = v1_job();
    assert_int_equal(throttle_protect_trainer_memory(&v1, what, sizeof what), 0);
    assert_non_null(strstr(what, "not on cgroup v2"));
}

static void a_failed_write_names_the_file(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v2_job();
    char what[600], path[600];
    tt_write(job.cgroup2, "memory.max", "1048576\n");
    snprintf(path, sizeof path, "%s/memory.low", job.cgroup2);
    assert_int_equal(mkdir(path, 0755), 0); /* a directory: no file can be written there */
    assert_int_equal(throttle_protect_trainer_memory(&job, what, sizeof what), -1);
    assert_non_null(strstr(what, "cannot write 1048576 to"));
    assert_non_null(strstr(what, "memory.low"));
}

static void a_v1_cotenant_yields_its_memory_first(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v1_job();
    char what[600], buf[64], dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/memory/slurm_cn1/uid_0/job_42", root);
    tt_write(dir, "memory.soft_limit_in_bytes", "9223372036854771712\n");
    assert_int_equal(throttle_yield_cotenant_memory(&job, what, sizeof what), 1);
    snprintf(path, sizeof path, "%s/memory.soft_limit_in_bytes", dir);
    assert_string_equal(tt_read(path, buf, sizeof buf), "0");
    assert_non_null(strstr(what, "reclaimed first"));
}

static void a_cotenant_without_a_v1_memory_cgroup_is_left_alone(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v1_job(), v2 = v2_job();
    char what[600];
    assert_int_equal(throttle_yield_cotenant_memory(&job, what, sizeof what), 0);
    assert_non_null(strstr(what, "no v1 memory cgroup at"));
    assert_int_equal(throttle_yield_cotenant_memory(&v2, what, sizeof what), 0);
    assert_non_null(strstr(what, "not on cgroup v1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_trainer_keeps_what_slurm_gave_it_as_memory_low, setup, teardown),
        cmocka_unit_test_setup_teardown(a_trainer_without_a_limit_or_a_memory_controller_is_left_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_failed_write_names_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(a_v1_cotenant_yields_its_memory_first, setup, teardown),
        cmocka_unit_test_setup_teardown(a_cotenant_without_a_v1_memory_cgroup_is_left_alone, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
