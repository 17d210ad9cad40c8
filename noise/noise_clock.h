/* noise_clock: monotonic time, stop-aware sleeping and the duty cycle behind --intensity
 * (busy for intensity x period at the start of every period, asleep for the rest). */
#ifndef COSCHED_NOISE_CLOCK_H
#define COSCHED_NOISE_CLOCK_H

/* Seconds on CLOCK_MONOTONIC, for durations. */
double noise_now(void);

/* Seconds since the epoch (CLOCK_REALTIME), for the "start" field of output lines. */
double noise_wall(void);

/* CPU seconds used by the whole process so far. */
double noise_cpu_seconds(void);

/* Sleep up to `seconds`, waking early (within 10 ms) when a stop is requested. */
void noise_sleep(double seconds);

/* A clock to pace by, where the real one (noise_now, noise_sleep) would put the scheduler into
 * a test's result: on a test's fake clock the duty cycle's law is exact. */
struct noise_clock {
    double (*now)(void *arg);
    void (*sleep)(void *arg, double seconds);
    void *arg;
};

/* Its time and its sleep; for NULL, noise_now() and noise_sleep(). */
double noise_clock_now(const struct noise_clock *c);
void noise_clock_sleep(const struct noise_clock *c, double seconds);

struct noise_duty {
    double intensity;                /* 0..1: share of each period spent working */
    double period;                   /* seconds */
    double origin;                   /* the clock's time at which the first period starts */
    const struct noise_clock *clock; /* NULL: noise_now and noise_sleep */
};

/* How long to sleep at `elapsed` seconds after the origin before working again:
 * 0 inside the busy part of a period, else the time to the next period. Pure. */
double noise_duty_off_time(double intensity, double period, double elapsed);

/* Sleep through the idle part of the current period, if we are in it. Cheap when busy,
 * so worker loops call it between small units of work. Returns the seconds it asked to sleep. */
double noise_duty_pace(const struct noise_duty *d);

#endif
