/* stop: the one flag that SIGTERM/SIGINT raise and every worker loop polls,
 * so a worker stops within 100 ms, cleans up and still prints its summary. */
#ifndef COSCHED_NOISE_STOP_H
#define COSCHED_NOISE_STOP_H

/* Install handlers for SIGTERM and SIGINT that only raise the flag. */
int noise_stop_install(void);

/* Nonzero once a stop was asked for (by a signal or by noise_stop_request). */
int noise_stop_requested(void);

/* The signal that raised the flag, or 0. */
int noise_stop_signal(void);

/* CLOCK_MONOTONIC seconds (as noise_now()) at which the signal came, or 0. */
double noise_stop_time(void);

void noise_stop_request(void);

/* Lower the flag again; for tests that run several workers in one process. */
void noise_stop_reset(void);

#endif
