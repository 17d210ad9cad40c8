/* lib_clock: the monotonic clock in seconds, for step timing and reconnect hold-offs (never the
 * wall clock, which NTP may step under a running job). */
#ifndef COSCHED_LIB_CLOCK_H
#define COSCHED_LIB_CLOCK_H

double clock_now(void);

#endif
