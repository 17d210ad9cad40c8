/* clock: monotonic time, stop-aware sleeping and the duty cycle behind --intensity
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

struct noise_duty {
    double intensity; /* 0..1: share of each period spent working */
    double period;    /* seconds */
    double origin;    /* noise_now() at which the first period starts */
};

/* How long to sleep at `elapsed` seconds after the origin before working again:
 * 0 inside the busy part of a period, else the time to the next period. Pure. */
double noise_duty_off_time(double intensity, double period, double elapsed);

/* Sleep through the idle part of the current period, if we are in it. Cheap when busy,
 * so worker loops call it between small units of work. Returns the seconds slept. */
double noise_duty_pace(const struct noise_duty *d);

#endif
