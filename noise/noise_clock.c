/* noise_clock: time helpers and the --intensity duty cycle.
 * Periods are aligned to one origin so all threads of a worker are busy at the same moments. */
#include "noise_clock.h"

#include <math.h>
#include <time.h>

#include "stop.h"

static double ts_seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double noise_now(void)
{
    return ts_seconds(CLOCK_MONOTONIC);
}

double noise_wall(void)
{
    return ts_seconds(CLOCK_REALTIME);
}

double noise_cpu_seconds(void)
{
    return ts_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

void noise_sleep(double seconds)
{
    double end = noise_now() + seconds;
    while (!noise_stop_requested()) {
        double left = end - noise_now();
        if (left <= 0)
            return;
        /* Short slices keep the promise to stop within 100 ms even when no signal
         * interrupts this thread (signals land on one thread of the process only). */
        if (left > 0.01)
            left = 0.01;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}

double noise_clock_now(const struct noise_clock *c)
{
    return c ? c->now(c->arg) : noise_now();
}

void noise_clock_sleep(const struct noise_clock *c, double seconds)
{
    if (c)
        c->sleep(c->arg, seconds);
    else
        noise_sleep(seconds);
}

double noise_duty_off_time(double intensity, double period, double elapsed)
{
    if (intensity >= 1.0 || period <= 0)
        return 0;
    if (elapsed < 0)
        return -elapsed;
    double in_period = fmod(elapsed, period);
    double busy = intensity * period;
    if (in_period < busy)
        return 0;
    return period - in_period;
}

double noise_duty_pace(const struct noise_duty *d)
{
    double off = noise_duty_off_time(d->intensity, d->period, noise_clock_now(d->clock) - d->origin);
    if (off > 0)
        noise_clock_sleep(d->clock, off);
    return off;
}
