/* test_stream: the STREAM kernels compute what STREAM defines, bytes are counted the
 * STREAM way (checked by hand on a tiny array), and validation catches a wrong result. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "stream.h"

#define N 13 /* odd on purpose: no kernel may assume a multiple of the vector width */

static void kernels_compute_stream_definitions(void **state)
{
    (void)state;
    double a[N], b[N], c[N];
    noise_stream_init(a, b, c, 0, N);
    for (int j = 0; j < N; j++) {
        a[j] = j;
        b[j] = 2 * j + 1;
    }
    noise_stream_kernel(NOISE_COPY, a, b, c, 3.0, 0, N);
    for (int j = 0; j < N; j++)
        assert_true(c[j] == j);
    noise_stream_kernel(NOISE_SCALE, a, b, c, 3.0, 0, N);
    for (int j = 0; j < N; j++)
        assert_true(b[j] == 3.0 * j);
    noise_stream_kernel(NOISE_ADD, a, b, c, 3.0, 0, N);
    for (int j = 0; j < N; j++)
        assert_true(c[j] == j + 3.0 * j);
    noise_stream_kernel(NOISE_TRIAD, a, b, c, 3.0, 0, N);
    for (int j = 0; j < N; j++)
        assert_true(a[j] == 3.0 * j + 3.0 * (4.0 * j));
}

static void kernels_touch_only_their_range(void **state)
{
    (void)state;
    double a[N], b[N], c[N];
    noise_stream_init(a, b, c, 0, N);
    noise_stream_kernel(NOISE_TRIAD, a, b, c, 3.0, 4, 9);
    for (int j = 0; j < N; j++)
        assert_true(a[j] == (j >= 4 && j < 9 ? 2.0 + 3.0 * 0.0 : 2.0));
    noise_stream_kernel(NOISE_COPY, a, b, c, 3.0, 4, 9);
    for (int j = 0; j < N; j++)
        assert_true(c[j] == (j >= 4 && j < 9 ? 2.0 : 0.0));
}

static void streaming_store_kernels_match_the_plain_ones(void **state)
{
    (void)state;
    enum { M = 37 };
    /* Aligned to 64 so that lo 0..9 starts on, and off, every vector width's alignment. */
    _Alignas(64) double a1[M], b1[M], c1[M], a2[M], b2[M], c2[M];
    const char *isas[] = {NULL, "avx512f", "avx2", "sse2"}; /* NULL: the one picked at run time */
    int tried = 0;
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        for (size_t lo = 0; lo < 10; lo++) {
            size_t hi = M - lo;
            noise_stream_init(a1, b1, c1, 0, M);
            noise_stream_init(a2, b2, c2, 0, M);
            int have = 1;
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < NOISE_KERNELS; k++) {
                    noise_stream_kernel((enum noise_stream_kernel)k, a1, b1, c1, 3.0, lo, hi);
                    if (!isas[i])
                        noise_stream_kernel_nt((enum noise_stream_kernel)k, a2, b2, c2, 3.0, lo, hi);
                    else if (noise_stream_kernel_nt_on(isas[i], (enum noise_stream_kernel)k, a2, b2, c2, 3.0, lo, hi) !=
                             0)
                        have = 0;
                }
            if (!have)
                break; /* this CPU lacks it */
            tried++;
            assert_memory_equal(a1, a2, sizeof a1);
            assert_memory_equal(b1, b2, sizeof b1);
            assert_memory_equal(c1, c2, sizeof c1);
        }
    }
    assert_true(tried >= 10);
    assert_int_equal(noise_stream_kernel_nt_on("mmx", NOISE_COPY, a2, b2, c2, 3.0, 0, M), -1);
}

static void bytes_are_counted_the_stream_way(void **state)
{
    (void)state;
    /* By hand for 4 doubles: copy reads a and writes c: 2 x 4 x 8 = 64 bytes; scale the same;
     * add and triad read two arrays and write one: 3 x 4 x 8 = 96 bytes. */
    assert_int_equal(noise_stream_bytes(NOISE_COPY, 4), 64);
    assert_int_equal(noise_stream_bytes(NOISE_SCALE, 4), 64);
    assert_int_equal(noise_stream_bytes(NOISE_ADD, 4), 96);
    assert_int_equal(noise_stream_bytes(NOISE_TRIAD, 4), 96);
    assert_int_equal(noise_stream_bytes(NOISE_TRIAD, 0), 0);
    assert_int_equal(noise_stream_bytes(NOISE_KERNELS, 4), 0);
}

static void run_rounds(double *a, double *b, double *c, size_t n, long rounds, double s)
{
    for (long k = 0; k < rounds; k++)
        for (int kern = 0; kern < NOISE_KERNELS; kern++)
            noise_stream_kernel((enum noise_stream_kernel)kern, a, b, c, s, 0, n);
}

static void validation_accepts_correct_results(void **state)
{
    (void)state;
    double a[N], b[N], c[N];
    char err[256];
    noise_stream_init(a, b, c, 0, N);
    run_rounds(a, b, c, N, 10, NOISE_STREAM_SCALAR);
    assert_int_equal(noise_stream_check(a, b, c, N, 10, NOISE_STREAM_SCALAR, err, sizeof err), 0);
}

static void validation_refuses_a_wrong_element_or_round_count(void **state)
{
    (void)state;
    double a[N], b[N], c[N];
    char err[256] = "";
    noise_stream_init(a, b, c, 0, N);
    run_rounds(a, b, c, N, 10, NOISE_STREAM_SCALAR);
    assert_int_not_equal(noise_stream_check(a, b, c, N, 9, NOISE_STREAM_SCALAR, err, sizeof err), 0);
    b[7] *= 1.001;
    assert_int_not_equal(noise_stream_check(a, b, c, N, 10, NOISE_STREAM_SCALAR, err, sizeof err), 0);
    assert_non_null(strstr(err, "array b"));
}

static void steady_scalar_keeps_values_bounded(void **state)
{
    (void)state;
    double a[N], b[N], c[N];
    noise_stream_init(a, b, c, 0, N);
    run_rounds(a, b, c, N, 100000, NOISE_STREAM_STEADY_SCALAR);
    /* With STREAM's 3.0 this many rounds would overflow to inf; noise runs for hours. */
    for (int j = 0; j < N; j++)
        assert_true(a[j] > 1.99 && a[j] < 2.01);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernels_compute_stream_definitions),
        cmocka_unit_test(kernels_touch_only_their_range),
        cmocka_unit_test(streaming_store_kernels_match_the_plain_ones),
        cmocka_unit_test(bytes_are_counted_the_stream_way),
        cmocka_unit_test(validation_accepts_correct_results),
        cmocka_unit_test(validation_refuses_a_wrong_element_or_round_count),
        cmocka_unit_test(steady_scalar_keeps_values_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
