/* lib_clock: the monotonic clock in seconds, for step timing and reconnect hold-offs (never the
 * wall clock, which NTP may step under a running job). */
#include "lib_clock.h"

#include <time.h>

double clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
