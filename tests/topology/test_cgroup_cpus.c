/* test_cgroup_cpus: a task's Slurm job cgroup is found above the task's own, and one a user could
 * have made (theirs, or in a directory others may write to) is refused; cpusets are read from the
 * files the kernel writes. Ordinary directories stand in for the cgroup tree. */
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

#include "cgroup_cpus.h"
#include "cpulist.h"

typedef struct {
    char root[256]; /* stands for the cpuset hierarchy's mount point */
    char task[512]; /* ROOT/slurm/uid_0/job_42/step_0/task_0 */
} tree_t;

static void make_dir(const char *path)
{
    if (mkdir(path, 0755) < 0)
        fail_msg("mkdir %s", path);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int tree_setup(void **state)
{
    tree_t *t = calloc(1, sizeof *t);
    snprintf(t->root, sizeof t->root, "/tmp/cgroup-test-XXXXXX");
    if (!t || !mkdtemp(t->root))
        return -1;
    chmod(t->root, 0755);
    static const char *const levels[] = {"/slurm", "/uid_0", "/job_42", "/step_0", "/task_0"};
    snprintf(t->task, sizeof t->task, "%s", t->root);
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        strcat(t->task, levels[i]);
        make_dir(t->task);
    }
    *state = t;
    return 0;
}

static int tree_teardown(void **state)
{
    tree_t *t = *state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
    if (system(cmd) != 0)
        return -1;
    free(t);
    return 0;
}

static void the_first_job_directory_above_the_task_is_the_jobs(void **state)
{
    tree_t *t = *state;
    char dir[4096], why[4096] = "", want[1024];
    if (geteuid() != 0)
        skip(); /* the tree must be root's, as Slurm's is */
    assert_int_equal(cgroup_job_dir(t->task, "42", dir, sizeof dir, why, sizeof why), 0);
    snprintf(want, sizeof want, "%s/slurm/uid_0/job_42", t->root);
    assert_string_equal(dir, want);
    /* A user's own job_42 lower down (under their step) does not shadow the real one. */
    char nested[1024];
    snprintf(nested, sizeof nested, "%s/job_42", t->task);
    make_dir(nested);
    assert_int_equal(cgroup_job_dir(nested, "42", dir, sizeof dir, why, sizeof why), 0);
    assert_string_equal(dir, want);
}

static void another_jobs_id_or_a_longer_one_is_not_the_job(void **state)
{
    tree_t *t = *state;
    char dir[4096], why[4096] = "";
    assert_int_equal(cgroup_job_dir(t->task, "4", dir, sizeof dir, why, sizeof why), -1);
    assert_non_null(strstr(why, "not inside job 4's cgroup"));
    assert_int_equal(cgroup_job_dir(t->task, "421", dir, sizeof dir, why, sizeof why), -1);
    assert_int_equal(cgroup_job_dir(t->task, "7", dir, sizeof dir, why, sizeof why), -1);
}

static void a_job_directory_a_user_owns_is_refused(void **state)
{
    tree_t *t = *state;
    char dir[4096], why[4096] = "", job[1024];
    if (geteuid() != 0)
        skip(); /* only root can give a directory away */
    snprintf(job, sizeof job, "%s/slurm/uid_0/job_42", t->root);
    assert_int_equal(chown(job, 65534, 65534), 0);
    assert_int_equal(cgroup_job_dir(t->task, "42", dir, sizeof dir, why, sizeof why), -1);
    assert_non_null(strstr(why, "belongs to uid 65534"));
    assert_int_equal(chown(job, 0, 0), 0);
}

static void a_job_directory_in_a_directory_others_may_write_is_refused(void **state)
{
    tree_t *t = *state;
    char dir[4096], why[4096] = "", parent[1024];
    if (geteuid() != 0)
        skip();
    snprintf(parent, sizeof parent, "%s/slurm/uid_0", t->root);
    assert_int_equal(chmod(parent, 0777), 0);
    assert_int_equal(cgroup_job_dir(t->task, "42", dir, sizeof dir, why, sizeof why), -1);
    assert_non_null(strstr(why, "writable by others than root"));
    assert_int_equal(chmod(parent, 0755), 0);
}

static void effective_cpus_come_first_and_empty_files_are_skipped(void **state)
{
    tree_t *t = *state;
    assert_null(cgroup_cpus_in(t->task));
    write_file(t->task, "cpuset.cpus", "0-3\n");
    write_file(t->task, "cpuset.effective_cpus", "\n");
    hwloc_bitmap_t set = cgroup_cpus_in(t->task);
    assert_non_null(set);
    char *list = cpulist_format(set);
    assert_string_equal(list, "0-3");
    free(list);
    hwloc_bitmap_free(set);
    write_file(t->task, "cpuset.effective_cpus", "2,3\n");
    set = cgroup_cpus_in(t->task);
    list = cpulist_format(set);
    assert_string_equal(list, "2-3");
    free(list);
    hwloc_bitmap_free(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_first_job_directory_above_the_task_is_the_jobs, tree_setup, tree_teardown),
        cmocka_unit_test_setup_teardown(another_jobs_id_or_a_longer_one_is_not_the_job, tree_setup, tree_teardown),
        cmocka_unit_test_setup_teardown(a_job_directory_a_user_owns_is_refused, tree_setup, tree_teardown),
        cmocka_unit_test_setup_teardown(a_job_directory_in_a_directory_others_may_write_is_refused, tree_setup,
                                        tree_teardown),
        cmocka_unit_test_setup_teardown(effective_cpus_come_first_and_empty_files_are_skipped, tree_setup,
                                        tree_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
