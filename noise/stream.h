/* stream: the four STREAM kernels on doubles, how STREAM counts their bytes, and its
 * validation. Pure functions on plain arrays; stream_run.c times and threads them. */
#ifndef COSCHED_NOISE_STREAM_H
#define COSCHED_NOISE_STREAM_H

#include <stddef.h>
#include <stdint.h>

enum noise_stream_kernel { NOISE_COPY, NOISE_SCALE, NOISE_ADD, NOISE_TRIAD, NOISE_KERNELS };

/* STREAM's benchmark scalar. */
#define NOISE_STREAM_SCALAR 3.0
/* As noise the kernels run without end; with s = sqrt(2) - 1 one copy/scale/add/triad
 * round maps a to a * (2s + s^2) = a, so values never overflow to inf. */
#define NOISE_STREAM_STEADY_SCALAR 0.41421356237309504880

const char *noise_stream_kernel_name(enum noise_stream_kernel k);

/* Bytes STREAM counts for one kernel over n elements: 2, 2, 3, 3 arrays x 8 bytes x n
 * (reads and writes, no write-allocate traffic). */
uint64_t noise_stream_bytes(enum noise_stream_kernel k, size_t n);

/* Initial values on [lo, hi): a = 2 (STREAM's 1 doubled before timing), b = 2, c = 0. */
void noise_stream_init(double *a, double *b, double *c, size_t lo, size_t hi);

/* One kernel on [lo, hi): copy c = a; scale b = s*c; add c = a + b; triad a = b + s*c. */
void noise_stream_kernel(enum noise_stream_kernel k, double *a, double *b, double *c, double scalar, size_t lo,
                         size_t hi);

/* The same with non-temporal (streaming) stores where the CPU has them (x86), as STREAM
 * builds with streaming stores and likwid-bench's *_mem kernels do. Same results. */
void noise_stream_kernel_nt(enum noise_stream_kernel k, double *a, double *b, double *c, double scalar, size_t lo,
                            size_t hi);
int noise_stream_has_nt(void);

/* The instruction set of the streaming stores used here ("avx512f", "avx2", "sse2"), or
 * NULL when there are none and the _nt kernels are the plain ones. */
const char *noise_stream_nt_isa(void);

/* The streaming-store kernel with the stores of one instruction set, for tests: -1 when the
 * name is unknown or this CPU lacks it. */
int noise_stream_kernel_nt_on(const char *isa, enum noise_stream_kernel k, double *a, double *b, double *c,
                              double scalar, size_t lo, size_t hi);

/* After init and ntimes rounds of the four kernels with scalar, check every element against
 * the expected values as STREAM's checkSTREAMresults does. Returns 0, or -1 with err set. */
int noise_stream_check(const double *a, const double *b, const double *c, size_t n, long ntimes, double scalar,
                       char *err, size_t errlen);

#endif
