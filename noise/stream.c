/* stream: kernels and validation after John McCalpin's STREAM (stream.c), which states
 * the rules we follow: 2/2/3/3 arrays x 8 bytes counted, results checked after the run. */
#include "stream.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

const char *noise_stream_kernel_name(enum noise_stream_kernel k)
{
    static const char *const names[NOISE_KERNELS] = {"copy", "scale", "add", "triad"};
    return (unsigned)k < NOISE_KERNELS ? names[k] : "?";
}

uint64_t noise_stream_bytes(enum noise_stream_kernel k, size_t n)
{
    static const unsigned arrays[NOISE_KERNELS] = {2, 2, 3, 3};
    return (unsigned)k < NOISE_KERNELS ? (uint64_t)arrays[k] * sizeof(double) * n : 0;
}

void noise_stream_init(double *a, double *b, double *c, size_t lo, size_t hi)
{
    for (size_t j = lo; j < hi; j++) {
        a[j] = 2.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
}

/* Built at -O3 (noise/meson.build) so the loops vectorise, and cloned per instruction set so
 * one binary uses AVX-512 or AVX2 where the CPU has them: memory bandwidth on recent cores is
 * not reached with scalar loads. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void noise_stream_kernel(enum noise_stream_kernel k, double *a, double *b, double *c, double scalar,
                         size_t lo, size_t hi)
{
    /* restrict lets the compiler vectorise: the three arrays never overlap. */
    double *restrict ra = a, *restrict rb = b, *restrict rc = c;
    switch (k) {
    case NOISE_COPY:
        for (size_t j = lo; j < hi; j++)
            rc[j] = ra[j];
        break;
    case NOISE_SCALE:
        for (size_t j = lo; j < hi; j++)
            rb[j] = scalar * rc[j];
        break;
    case NOISE_ADD:
        for (size_t j = lo; j < hi; j++)
            rc[j] = ra[j] + rb[j];
        break;
    case NOISE_TRIAD:
        for (size_t j = lo; j < hi; j++)
            ra[j] = rb[j] + scalar * rc[j];
        break;
    default: break;
    }
}

static int check_array(const char *name, const double *x, size_t n, double expect, char *err, size_t errlen)
{
    /* STREAM's test: the average absolute error relative to the expected value. */
    double sum = 0;
    size_t bad = 0;
    for (size_t j = 0; j < n; j++) {
        double e = fabs(x[j] - expect);
        sum += e;
        if (e / fabs(expect) > 1e-13)
            bad++;
    }
    double rel = sum / (double)n / fabs(expect);
    if (!(rel <= 1e-13)) {
        snprintf(err, errlen,
                 "STREAM validation failed: array %s has average relative error %g "
                 "(expected %g, %zu of %zu elements off)",
                 name, rel, expect, bad, n);
        return -1;
    }
    return 0;
}

int noise_stream_check(const double *a, const double *b, const double *c, size_t n, long ntimes, double scalar,
                       char *err, size_t errlen)
{
    double aj = 2.0, bj = 2.0, cj = 0.0;
    for (long k = 0; k < ntimes; k++) {
        cj = aj;
        bj = scalar * cj;
        cj = aj + bj;
        aj = bj + scalar * cj;
    }
    if (check_array("a", a, n, aj, err, errlen) || check_array("b", b, n, bj, err, errlen) ||
        check_array("c", c, n, cj, err, errlen))
        return -1;
    return 0;
}
