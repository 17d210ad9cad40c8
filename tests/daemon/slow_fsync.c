/* slow_fsync: an LD_PRELOAD shim that makes every fsync take SLOW_FSYNC_MS longer (default 20),
 * as on a busy disk, and that can hold a state save in the middle for test_crash.sh's kill -9.
 * With SLOW_FSYNC_HOLD=PATH set, the first fsync of a save's temporary file (.state.json.*)
 * after PATH appears creates PATH.held and never returns: the test waits for PATH.held and kills
 * the daemon between the temporary file and the rename, whatever the machine's load. */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int is_state_save(int fd)
{
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0)
        return 0;
    target[n] = '\0';
    const char *base = strrchr(target, '/');
    return base && strncmp(base + 1, ".state.json.", 12) == 0;
}

/* Held until killed, once the test asked for it and this fsync is a save's. */
static void hold_if_asked(int fd)
{
    const char *hold = getenv("SLOW_FSYNC_HOLD");
    if (!hold || access(hold, F_OK) != 0 || !is_state_save(fd))
        return;
    char held[PATH_MAX];
    snprintf(held, sizeof held, "%s.held", hold);
    int marker = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (marker >= 0)
        close(marker);
    for (;;)
        pause();
}

int fsync(int fd)
{
    hold_if_asked(fd);
    const char *ms = getenv("SLOW_FSYNC_MS");
    long wait = ms ? atol(ms) : 20;
    struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return real ? real(fd) : -1;
}
