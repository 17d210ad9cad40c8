/* throttle_fs: reading and writing the small files of cgroupfs, resctrl and /proc. Writes open
 * with O_CREAT|O_TRUNC: harmless on kernfs, and what lets the tests use plain directories. */
#include "throttle_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

enum { MOVE_MAX_IDS = 4096 };

int throttle_fs_path(char *out, size_t len, const char *dir, const char *file)
{
    int n = snprintf(out, len, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* The value as it appears in a message: without the newline the kernel does not need. */
static void report_write(char *err, size_t errlen, const char *text, const char *path)
{
    int saved = errno;
    size_t n = strcspn(text, "\n");
    snprintf(err, errlen, "cannot write %.*s to %s: %s", (int)n, text, path, strerror(saved));
    errno = saved;
}

int throttle_fs_write(const char *path, const char *text, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || fileio_write_all(fd, text, strlen(text)) < 0) {
        report_write(err, errlen, text, path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (close(fd) < 0) {
        report_write(err, errlen, text, path);
        return -1;
    }
    return 0;
}

/* One write per id: cgroup.procs and resctrl's tasks take one id at a time. An id that is gone
 * (ESRCH: a thread that ended meanwhile) is no error. */
int throttle_fs_write_ids(const char *path, const pid_t *ids, size_t n, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    char text[32];
    if (fd < 0) {
        snprintf(text, sizeof text, "%d", n ? (int)ids[0] : 0);
        report_write(err, errlen, text, path);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(text, sizeof text, "%d\n", (int)ids[i]);
        if (fileio_write_all(fd, text, strlen(text)) < 0 && errno != ESRCH) {
            report_write(err, errlen, text, path);
            close(fd);
            return -1;
        }
    }
    close(fd);
    return 0;
}

ssize_t throttle_fs_read(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t r = read(fd, buf + got, len - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

int throttle_fs_read_uint(const char *path, unsigned *out)
{
    char buf[64], *end;
    if (throttle_fs_read(path, buf, sizeof buf) <= 0)
        return -1;
    errno = 0;
    unsigned long v = strtoul(buf, &end, 10);
    if (errno || end == buf || v > 0xffffffffUL)
        return -1;
    *out = (unsigned)v;
    return 0;
}

void throttle_msg(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, len, fmt, ap);
    va_end(ap);
}

bool throttle_fs_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* An existing directory is taken over: a daemon that restarts finds its groups again. */
int throttle_fs_mkdir(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (mkdir(path, 0755) == 0)
        return 0;
    int saved = errno;
    if (saved == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    snprintf(err, errlen, "cannot create %s: %s", path, strerror(saved));
    errno = saved;
    return -1;
}

/* Read the ids listed in from (cgroup.procs, tasks) and write them to to. */
int throttle_fs_move_ids(const char *from, const char *to, char *err, size_t errlen)
{
    size_t cap = 64 * 1024;
    char *buf = malloc(cap);
    pid_t *ids = malloc(MOVE_MAX_IDS * sizeof *ids);
    int rc = -1;
    if (!buf || !ids) {
        snprintf(err, errlen, "cannot move the processes in %s: out of memory", from);
        goto out;
    }
    if (throttle_fs_read(from, buf, cap) < 0) {
        snprintf(err, errlen, "cannot read %s: %s", from, strerror(errno));
        goto out;
    }
    size_t n = 0;
    for (char *p = buf, *end; *p && n < MOVE_MAX_IDS; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (v > 0)
            ids[n++] = (pid_t)v;
    }
    rc = n ? throttle_fs_write_ids(to, ids, n, err, errlen) : 0;
out:
    free(buf);
    free(ids);
    return rc;
}

int throttle_fs_replace(const char *path, const char *text, char *err, size_t errlen)
{
    char tmp[THROTTLE_LONG_PATH + 16];
    if (snprintf(tmp, sizeof tmp, "%s.new", path) >= (int)sizeof tmp) {
        snprintf(err, errlen, "cannot write %s: path too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || fileio_write_all(fd, text, strlen(text)) < 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return -1;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) {
        snprintf(err, errlen, "cannot replace %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
