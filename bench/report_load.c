/* report_load: how many step reports a second one libcosched client gets through — one
 * handle, cosched_report_step back to back for a while, as a training loop would call it. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cosched.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = argc == 2 ? atof(argv[1]) : 0;
    if (!(seconds > 0)) {
        fprintf(stderr, "usage: report_load SECONDS   (socket and job from COSCHED_SOCKET, COSCHED_JOB)\n");
        return 2;
    }
    cosched_t *c = cosched_open(NULL, NULL);
    /* The first report connects: outside the timed window, as it is once per job. */
    if (cosched_report_step(c, 0.1) != 0) {
        fprintf(stderr, "report_load: %s\n", cosched_error(c));
        return 1;
    }
    long reports = 0;
    double t0 = now(), end = t0 + seconds, t;
    do {
        if (cosched_report_step(c, 0.1) != 0) {
            fprintf(stderr, "report_load: report %ld failed: %s\n", reports, cosched_error(c));
            return 1;
        }
        reports++;
    } while ((t = now()) < end);
    printf("reports=%ld seconds=%.3f reports_per_s=%.0f\n", reports, t - t0, reports / (t - t0));
    cosched_close(c);
    return 0;
}
