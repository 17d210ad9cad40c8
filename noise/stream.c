/* stream: kernels and validation after John McCalpin's STREAM (stream.c), which states
 * the rules we follow: 2/2/3/3 arrays x 8 bytes counted, results checked after the run. */
#include "stream.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_NT_STORES 1
#endif

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
    default:
        break;
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
        snprintf(err, errlen, "STREAM validation failed: array %s has average relative error %g "
                 "(expected %g, %zu of %zu elements off)", name, rel, expect, bad, n);
        return -1;
    }
    return 0;
}

int noise_stream_check(const double *a, const double *b, const double *c, size_t n, long ntimes,
                       double scalar, char *err, size_t errlen)
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

#ifdef HAVE_NT_STORES
/* out[j] = x[j] + s * y[j] (y may be NULL: out = s * x; s == 0 with y NULL: out = x), with
 * non-temporal stores: the written array bypasses the cache, so no write-allocate reads. */
static void nt_loop(double *restrict out, const double *restrict x, const double *restrict y, double s,
                    int kind, size_t lo, size_t hi)
{
    size_t j = lo;
    /* Scalar until out is 16-byte aligned, pairs with _mm_stream_pd, scalar tail. */
    for (; j < hi && ((uintptr_t)&out[j] & 15) != 0; j++)
        out[j] = kind == 0 ? x[j] : kind == 1 ? s * x[j] : kind == 2 ? x[j] + y[j] : x[j] + s * y[j];
    __m128d vs = _mm_set1_pd(s);
    switch (kind) {
    case 0:
        for (; j + 2 <= hi; j += 2)
            _mm_stream_pd(&out[j], _mm_loadu_pd(&x[j]));
        break;
    case 1:
        for (; j + 2 <= hi; j += 2)
            _mm_stream_pd(&out[j], _mm_mul_pd(vs, _mm_loadu_pd(&x[j])));
        break;
    case 2:
        for (; j + 2 <= hi; j += 2)
            _mm_stream_pd(&out[j], _mm_add_pd(_mm_loadu_pd(&x[j]), _mm_loadu_pd(&y[j])));
        break;
    default:
        for (; j + 2 <= hi; j += 2)
            _mm_stream_pd(&out[j], _mm_add_pd(_mm_loadu_pd(&x[j]), _mm_mul_pd(vs, _mm_loadu_pd(&y[j]))));
        break;
    }
    for (; j < hi; j++)
        out[j] = kind == 0 ? x[j] : kind == 1 ? s * x[j] : kind == 2 ? x[j] + y[j] : x[j] + s * y[j];
    /* Streaming stores are weakly ordered: fence before another thread may read them. */
    _mm_sfence();
}
#endif

int noise_stream_has_nt(void)
{
#ifdef HAVE_NT_STORES
    return 1;
#else
    return 0;
#endif
}

void noise_stream_kernel_nt(enum noise_stream_kernel k, double *a, double *b, double *c, double scalar,
                            size_t lo, size_t hi)
{
#ifdef HAVE_NT_STORES
    switch (k) {
    case NOISE_COPY: nt_loop(c, a, NULL, 0, 0, lo, hi); break;
    case NOISE_SCALE: nt_loop(b, c, NULL, scalar, 1, lo, hi); break;
    case NOISE_ADD: nt_loop(c, a, b, 0, 2, lo, hi); break;
    case NOISE_TRIAD: nt_loop(a, b, c, scalar, 3, lo, hi); break;
    default: break;
    }
#else
    noise_stream_kernel(k, a, b, c, scalar, lo, hi);
#endif
}
