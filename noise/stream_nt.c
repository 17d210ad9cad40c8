/* stream_nt: the STREAM kernels with non-temporal (streaming) stores, one loop per vector
 * width, the widest the CPU has picked once at run time. The written array bypasses the
 * cache, so memory sees no write-allocate reads; a 64-byte store fills a whole line at once,
 * which on AMD Zen 5 moved 3-4 % more than 16-byte stores in bench/noise.sh. */
#include "stream.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* out[j] = x[j] op s, y[j] for one kernel kind: 0 copy (out = x), 1 scale (out = s * x),
 * 2 add (out = x + y), 3 triad (out = x + s * y). Multiply then add, never fused, so every
 * width gives the same bits as the scalar ends. */
static inline double nt_scalar(int kind, const double *x, const double *y, double s, size_t j)
{
    return kind == 0 ? x[j] : kind == 1 ? s * x[j] : kind == 2 ? x[j] + y[j] : x[j] + s * y[j];
}

/* One loop per instruction set: scalar until out is aligned for the store, vectors, scalar
 * tail, and a fence because streaming stores are weakly ordered and another thread reads
 * these arrays next. */
#define NT_LOOP(NAME, TARGET, VEC, LANES, SET1, LOAD, STORE, ADD, MUL)                                                 \
    __attribute__((target(TARGET))) static void NAME(double *restrict out, const double *restrict x,                   \
                                                     const double *restrict y, double s, int kind, size_t lo,          \
                                                     size_t hi)                                                        \
    {                                                                                                                  \
        size_t j = lo;                                                                                                 \
        for (; j < hi && ((uintptr_t)&out[j] & (LANES * sizeof(double) - 1)) != 0; j++)                                \
            out[j] = nt_scalar(kind, x, y, s, j);                                                                      \
        VEC vs = SET1(s);                                                                                              \
        switch (kind) {                                                                                                \
        case 0:                                                                                                        \
            for (; j + LANES <= hi; j += LANES)                                                                        \
                STORE(&out[j], LOAD(&x[j]));                                                                           \
            break;                                                                                                     \
        case 1:                                                                                                        \
            for (; j + LANES <= hi; j += LANES)                                                                        \
                STORE(&out[j], MUL(vs, LOAD(&x[j])));                                                                  \
            break;                                                                                                     \
        case 2:                                                                                                        \
            for (; j + LANES <= hi; j += LANES)                                                                        \
                STORE(&out[j], ADD(LOAD(&x[j]), LOAD(&y[j])));                                                         \
            break;                                                                                                     \
        default:                                                                                                       \
            for (; j + LANES <= hi; j += LANES)                                                                        \
                STORE(&out[j], ADD(LOAD(&x[j]), MUL(vs, LOAD(&y[j]))));                                                \
            break;                                                                                                     \
        }                                                                                                              \
        for (; j < hi; j++)                                                                                            \
            out[j] = nt_scalar(kind, x, y, s, j);                                                                      \
        _mm_sfence();                                                                                                  \
    }

NT_LOOP(nt_sse2, "sse2", __m128d, 2, _mm_set1_pd, _mm_loadu_pd, _mm_stream_pd, _mm_add_pd, _mm_mul_pd)
NT_LOOP(nt_avx2, "avx2", __m256d, 4, _mm256_set1_pd, _mm256_loadu_pd, _mm256_stream_pd, _mm256_add_pd, _mm256_mul_pd)
NT_LOOP(nt_avx512, "avx512f", __m512d, 8, _mm512_set1_pd, _mm512_loadu_pd, _mm512_stream_pd, _mm512_add_pd,
        _mm512_mul_pd)

typedef void nt_fn(double *restrict, const double *restrict, const double *restrict, double, int, size_t, size_t);

static const struct {
    const char *isa;
    nt_fn *loop;
} nt_loops[] = {{"avx512f", nt_avx512}, {"avx2", nt_avx2}, {"sse2", nt_sse2}}; /* widest first */

#define NT_LOOPS (int)(sizeof nt_loops / sizeof nt_loops[0])

/* Index into nt_loops of isa, or with isa NULL of the widest loop this CPU runs; -1 when the
 * name is unknown or the CPU lacks it. */
static int nt_pick(const char *isa)
{
    __builtin_cpu_init();
    /* in nt_loops' order; __builtin_cpu_supports takes only literals */
    const int have[] = {__builtin_cpu_supports("avx512f"), __builtin_cpu_supports("avx2"),
                        __builtin_cpu_supports("sse2")};
    for (int i = 0; i < NT_LOOPS; i++)
        if (isa ? strcmp(isa, nt_loops[i].isa) == 0 : have[i])
            return have[i] ? i : -1;
    return -1;
}

const char *noise_stream_nt_isa(void)
{
    int i = nt_pick(NULL);
    return i < 0 ? NULL : nt_loops[i].isa;
}

static void run_nt(nt_fn *loop, enum noise_stream_kernel k, double *a, double *b, double *c, double scalar, size_t lo,
                   size_t hi)
{
    switch (k) {
    case NOISE_COPY: loop(c, a, NULL, 0, 0, lo, hi); break;
    case NOISE_SCALE: loop(b, c, NULL, scalar, 1, lo, hi); break;
    case NOISE_ADD: loop(c, a, b, 0, 2, lo, hi); break;
    case NOISE_TRIAD: loop(a, b, c, scalar, 3, lo, hi); break;
    default: break;
    }
}

void noise_stream_kernel_nt(enum noise_stream_kernel k, double *a, double *b, double *c, double scalar, size_t lo,
                            size_t hi)
{
    /* Looked up per call: __builtin_cpu_supports reads a table filled once, and a call
     * covers at least a 256 KiB share of a pass. */
    int i = nt_pick(NULL);
    if (i >= 0)
        run_nt(nt_loops[i].loop, k, a, b, c, scalar, lo, hi);
    else
        noise_stream_kernel(k, a, b, c, scalar, lo, hi);
}

int noise_stream_kernel_nt_on(const char *isa, enum noise_stream_kernel k, double *a, double *b, double *c,
                              double scalar, size_t lo, size_t hi)
{
    int i = nt_pick(isa);
    if (i < 0)
        return -1;
    run_nt(nt_loops[i].loop, k, a, b, c, scalar, lo, hi);
    return 0;
}

#else /* no streaming stores here: the plain kernels, and say so */

const char *noise_stream_nt_isa(void)
{
    return NULL;
}

void noise_stream_kernel_nt(enum noise_stream_kernel k, double *a, double *b, double *c, double scalar, size_t lo,
                            size_t hi)
{
    noise_stream_kernel(k, a, b, c, scalar, lo, hi);
}

int noise_stream_kernel_nt_on(const char *isa, enum noise_stream_kernel k, double *a, double *b, double *c,
                              double scalar, size_t lo, size_t hi)
{
    (void)isa, (void)k, (void)a, (void)b, (void)c, (void)scalar, (void)lo, (void)hi;
    return -1;
}

#endif

int noise_stream_has_nt(void)
{
    return noise_stream_nt_isa() != NULL;
}
