/* step_probe: a trainer in miniature for bench/noise_transient.py — "steps" of a fixed piece of
 * work that reads a working set as a training step reads its weights (in a scattered order, as
 * gradients and activations are), a few milliseconds each, so that what a noise's start or stop
 * does to the steps after it can be seen millisecond by millisecond. Prints one line per step:
 * "END_UNIX_SECONDS STEP_SECONDS".
 *
 *   step_probe SECONDS [WORKING_SET_MIB] [READS_PER_STEP]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: step_probe SECONDS [WORKING_SET_MIB] [READS_PER_STEP]\n");
        return 2;
    }
    double seconds = atof(argv[1]);
    size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 16, reads = argc > 3 ? (size_t)atol(argv[3]) : 200000;
    size_t n = mib * 1024 * 1024 / sizeof(uint64_t);
    uint64_t *set = malloc(n * sizeof *set);
    if (!set || n == 0) {
        fprintf(stderr, "step_probe: cannot allocate %zu MiB\n", mib);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        set[i] = i * 0x9E3779B97F4A7C15ull;
    uint64_t sum = 0, x = 1;
    double end = now(CLOCK_MONOTONIC) + seconds;
    while (now(CLOCK_MONOTONIC) < end) {
        double began = now(CLOCK_MONOTONIC);
        for (size_t r = 0; r < reads; r++) { /* scattered reads, each line once per step on average */
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            sum += set[(x >> 17) % n];
        }
        double took = now(CLOCK_MONOTONIC) - began;
        printf("%.6f %.6f\n", now(CLOCK_REALTIME), took);
    }
    fprintf(stderr, "step_probe: checksum %llu\n", (unsigned long long)sum);
    free(set);
    return 0;
}
