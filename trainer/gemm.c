/* gemm: the plain C single-precision matrix product behind the reference conv and fc layers.
 * Not fast, but simple and cache-friendly enough (row axpy form) for tests and small runs. */
#include <string.h>

#include "layers.h"

/* C[M,N] += A[M,K] * B[K,N]; rows of C are independent, so threads split them. */
static void gemm_nn(int M, int N, int K, const float *A, const float *B, float *C)
{
#pragma omp parallel for schedule(static) if ((long)M * N * K > 65536)
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * N;
        const float *a = A + (size_t)i * K;
        for (int k = 0; k < K; k++) {
            const float av = a[k];
            const float *b = B + (size_t)k * N;
            for (int j = 0; j < N; j++)
                c[j] += av * b[j];
        }
    }
}

/* dst[cols,rows] = src[rows,cols]^T */
static void transpose(float *dst, const float *src, int rows, int cols)
{
#pragma omp parallel for schedule(static) if ((long)rows * cols > 65536)
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

void train_gemm(int ta, int tb, int M, int N, int K, const float *A, const float *B, float *C, float *scratch)
{
    /* A transposed copy costs O(MK) against the product's O(MNK), and keeps one kernel. */
    if (ta) {
        transpose(scratch, A, K, M);
        A = scratch;
    }
    if (tb) {
        transpose(scratch, B, N, K);
        B = scratch;
    }
    gemm_nn(M, N, K, A, B, C);
}
