/* fallocate_log: an LD_PRELOAD shim that appends "OFFSET LENGTH RESULT" for every fallocate
 * call to the file named by FALLOCATE_LOG, then makes the call. test_ior.sh reads it to see
 * where --preallocate allocated. In-process and O_APPEND, so no line can be lost or split
 * between threads, which an strace -ff trace once did (issue 14). */
/* Both symbols are defined here; with 64-bit off_t the header would name both fallocate64. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int fallocate_fn(int, int, off64_t, off64_t);

static void log_call(off64_t offset, off64_t length, int result)
{
    const char *path = getenv("FALLOCATE_LOG");
    if (!path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char line[96];
    int n = snprintf(line, sizeof line, "%lld %lld %d\n", (long long)offset, (long long)length, result);
    if (write(fd, line, (size_t)n) != n) {
        /* the test then misses a line and fails, which is the right outcome */
    }
    close(fd);
}

static int forward(const char *name, int fd, int mode, off64_t offset, off64_t length)
{
    fallocate_fn *real = (fallocate_fn *)dlsym(RTLD_NEXT, name);
    int result = real ? real(fd, mode, offset, length) : -1;
    log_call(offset, length, result);
    return result;
}

int fallocate(int fd, int mode, off_t offset, off_t length)
{
    return forward("fallocate", fd, mode, offset, length);
}

int fallocate64(int fd, int mode, off64_t offset, off64_t length)
{
    return forward("fallocate64", fd, mode, offset, length);
}
