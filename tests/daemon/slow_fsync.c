/* slow_fsync: an LD_PRELOAD shim that makes every fsync take SLOW_FSYNC_MS longer (default 20),
 * as on a busy disk. test_crash.sh preloads it into coschedd so that a state save lasts long
 * enough for its kill -9 to land in the middle of one, between the temporary file and the
 * rename, and not only between saves. */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

int fsync(int fd)
{
    const char *ms = getenv("SLOW_FSYNC_MS");
    long wait = ms ? atol(ms) : 20;
    struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return real ? real(fd) : -1;
}
