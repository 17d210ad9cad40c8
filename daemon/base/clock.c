/* clock: CLOCK_REALTIME for timestamps that are stored and shown, CLOCK_MONOTONIC for everything
 * that measures or waits, so a clock step never fires or delays a timeout. */
#include "clock.h"

#include <time.h>

static double seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double clock_now_unix(void)
{
    return seconds(CLOCK_REALTIME);
}

double clock_now_mono(void)
{
    return seconds(CLOCK_MONOTONIC);
}
