/* fileio: write_all and the atomic, durable replacement of a file (fileio.h). */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fileio_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Write, fsync and close the temp file; err says which step failed. */
static int fill_temp(int fd, const char *tmp, const char *path, const char *text, size_t len, mode_t mode, char *err,
                     size_t errlen)
{
    const char *step = "write";
    if (fileio_write_all(fd, text, len) < 0 || (step = "fsync", fsync(fd) < 0) ||
        (step = "chmod", fchmod(fd, mode) < 0)) {
        int saved = errno;
        snprintf(err, errlen, "cannot %s %s (for %s): %s", step, tmp, path, strerror(saved));
        close(fd);
        errno = saved;
        return -1;
    }
    if (close(fd) < 0) {
        snprintf(err, errlen, "cannot close %s (for %s): %s", tmp, path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The rename is durable only once the directory entry is. */
static int sync_dir(const char *dir, const char *path, char *err, size_t errlen)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) < 0) {
        int saved = errno;
        snprintf(err, errlen, "cannot fsync directory %s after writing %s: %s", dir, path, strerror(saved));
        if (dfd >= 0)
            close(dfd);
        errno = saved;
        return -1;
    }
    close(dfd);
    return 0;
}

int fileio_write_atomic(const char *path, const char *text, size_t len, mode_t mode, char *err, size_t errlen)
{
    char *dir_copy = strdup(path), *base_copy = strdup(path), *tmp = NULL;
    const char *dir = dir_copy ? dirname(dir_copy) : NULL;
    int rc = -1, saved = ENOMEM;
    if (!dir || !base_copy || asprintf(&tmp, "%s/.%s.XXXXXX", dir, basename(base_copy)) < 0) {
        tmp = NULL;
        snprintf(err, errlen, "cannot write %s: out of memory", path);
        goto out;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        saved = errno;
        snprintf(err, errlen, "cannot create a temporary file %s for %s: %s", tmp, path, strerror(saved));
        free(tmp);
        tmp = NULL;
        goto out;
    }
    if (fill_temp(fd, tmp, path, text, len, mode, err, errlen) < 0) {
        saved = errno;
        goto out;
    }
    if (rename(tmp, path) < 0) {
        saved = errno;
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(saved));
        goto out;
    }
    free(tmp);
    tmp = NULL; /* renamed: nothing left to remove */
    rc = sync_dir(dir, path, err, errlen);
    saved = errno;
out:
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(dir_copy);
    free(base_copy);
    errno = saved;
    return rc;
}
