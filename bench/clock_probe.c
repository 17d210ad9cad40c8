/* clock_probe: the clock a busy core runs at, in MHz, from a chain of dependent integer adds
 * (one add per cycle on x86 cores). In a VM lscpu reports the base clock or nothing, while a
 * loaded core runs at its boost clock; a share of peak computed from the base clock flatters.
 * Prints 0 where the probe does not apply (not x86). */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

int main(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const uint64_t iterations = 100000000; /* x 8 dependent adds: 0.2-0.4 s */
    uint64_t x = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (uint64_t i = 0; i < iterations; i++)
        __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                         "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                         : "+r"(x));
    clock_gettime(CLOCK_MONOTONIC, &b);
    double seconds = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    printf("%.0f\n", (double)x / seconds / 1e6);
#else
    printf("0\n");
#endif
    return 0;
}
