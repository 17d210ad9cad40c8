/* replay_main: runs a harness over files and directories of inputs, one TAP line per input,
 * so that the seed corpus (and every input a fuzzing run saved) is replayed in the normal
 * test suite, under ASan/UBSan and valgrind too. A crash or a violated property aborts. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int count;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("not ok %d - %s: cannot open\n", ++count, path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    for (size_t n; buf && (n = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += n;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) {
        printf("not ok %d - %s: out of memory\n", ++count, path);
        return -1;
    }
    /* libFuzzer hands the harness a buffer of exactly the input's size; so does this */
    unsigned char *exact = malloc(len ? len : 1);
    memcpy(exact, buf, len);
    free(buf);
    fflush(stdout);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    printf("ok %d - %s\n", ++count, path);
    fflush(stdout);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int replay(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        printf("not ok %d - %s: no such file or directory\n", ++count, path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path);
    struct dirent **names;
    int n = scandir(path, &names, NULL, by_name), rc = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char child[4096];
            snprintf(child, sizeof child, "%s/%s", path, names[i]->d_name);
            rc |= replay(child);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= replay(argv[i]);
    if (count == 0)
        printf("not ok 1 - no inputs given\n"), count = 1, rc = -1;
    printf("1..%d\n", count);
    return rc ? 1 : 0;
}
