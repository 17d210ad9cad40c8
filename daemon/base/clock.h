/* clock: the two clocks the daemon reads — wall time for records people read, monotonic time for
 * deadlines and intervals — as seconds in a double. */
#ifndef COSCHED_CLOCK_H
#define COSCHED_CLOCK_H

double clock_now_unix(void);
double clock_now_mono(void);

#endif
