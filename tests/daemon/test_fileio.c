/* test_fileio: a file written whole — every byte through a pipe a reader drains slowly, and an
 * atomic replacement that leaves the new text, its mode and no temp file, or says why not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"

enum { BIG = 1 << 20 }; /* more than a pipe holds: the writer sees short writes */

static void write_all_gets_every_byte_through_a_pipe(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t reader = fork();
    assert_true(reader >= 0);
    if (reader == 0) {
        close(fds[1]);
        char buf[4096];
        long total = 0;
        for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
            total += n;
        _exit(total == BIG ? 0 : 1);
    }
    close(fds[0]);
    char *data = calloc(BIG, 1);
    assert_non_null(data);
    assert_int_equal(fileio_write_all(fds[1], data, BIG), 0);
    close(fds[1]);
    free(data);
    int status;
    assert_int_equal(waitpid(reader, &status, 0), reader);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
    if (d)
        closedir(d);
    return n;
}

static void write_atomic_replaces_the_file_with_its_mode_and_leaves_nothing_else(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_fileio.XXXXXX", path[64], got[64] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/state.json", dir);
    char err[512];
    assert_int_equal(fileio_write_atomic(path, "old\n", 4, 0600, err, sizeof err), 0);
    assert_int_equal(fileio_write_atomic(path, "new\n", 4, 0644, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(got, sizeof got, f));
    fclose(f);
    assert_string_equal(got, "new\n");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(entries(dir), 1);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

static void write_atomic_into_a_missing_directory_names_the_path_and_keeps_errno(void **state)
{
    (void)state;
    char err[512];
    errno = 0;
    assert_int_equal(fileio_write_atomic("/nonexistent-cosched/x.prom", "x 1\n", 4, 0644, err, sizeof err), -1);
    assert_int_equal(errno, ENOENT);
    assert_non_null(strstr(err, "/nonexistent-cosched/x.prom"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(write_all_gets_every_byte_through_a_pipe),
        cmocka_unit_test(write_atomic_replaces_the_file_with_its_mode_and_leaves_nothing_else),
        cmocka_unit_test(write_atomic_into_a_missing_directory_names_the_path_and_keeps_errno),
    };
    return cmocka_run_group_tests_name("fileio", tests, NULL, NULL);
}
