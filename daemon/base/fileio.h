/* fileio: a file's content written whole — every byte of a buffer through short writes, and a
 * file replaced atomically and durably (temp file beside it, fsync, rename, fsync of the
 * directory). The daemon's one way of each: the state, the textfile and the knobs use them. */
#ifndef COSCHED_FILEIO_H
#define COSCHED_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/* Write all len bytes, again after EINTR; -1 (errno set) on an error or a write of nothing. */
int fileio_write_all(int fd, const void *buf, size_t len);

/* Replace path with text: readers see the old content or the new, never part of either, and the
 * new one survives a crash once this returns 0. The temp file is ".NAME.XXXXXX" in path's
 * directory, so readers of *.prom or of NAME never open it half-written; the file gets `mode`.
 * -1: err names the step that failed, errno says why, nothing is left behind but the old file. */
int fileio_write_atomic(const char *path, const char *text, size_t len, mode_t mode, char *err, size_t errlen);

#endif
