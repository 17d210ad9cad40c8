/* state_lock: the state directory's lock file (see state_lock.h). flock, not fcntl: its lock
 * belongs to the open file, so it survives daemon()'s fork and dies with the last holder,
 * kill -9 included, leaving nothing stale to clean up. */
#include "state_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int state_lock(const char *dir, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/coschedd.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %.400s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        char pid[24] = "", who[48] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        if (pid[0])
            snprintf(who, sizeof who, " (pid %s)", pid);
        if (e == EWOULDBLOCK)
            snprintf(err, errlen, "another coschedd%s uses the state directory %.400s", who, dir);
        else
            snprintf(err, errlen, "cannot lock %.400s: %s", path, strerror(e));
        close(fd);
        return -1;
    }
    return fd;
}

void state_lock_record_pid(int fd)
{
    char pid[24];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) == n)
        return;
    /* only the message of a refused second daemon misses the pid */
}
