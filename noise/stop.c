/* stop: SIGTERM/SIGINT handling for the noise worker.
 * The handler only stores to a lock-free atomic: anything more is not async-signal-safe. */
#include "stop.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

/* Process-wide by nature: a signal has no other place to leave its mark. */
static atomic_int stop_flag;
static atomic_int stop_sig;
static atomic_llong stop_ns; /* CLOCK_MONOTONIC when the signal came */

static void on_signal(int sig)
{
    struct timespec ts;
    /* clock_gettime is async-signal-safe (POSIX.1-2008). */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    atomic_store(&stop_ns, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    atomic_store(&stop_sig, sig);
    atomic_store(&stop_flag, 1);
}

int noise_stop_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: a blocking read/write/nanosleep returns early with EINTR. */
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        return -1;
    /* A reader that goes away (the daemon, `| head`) must not kill us before ior has removed
     * its files: writes then fail with EPIPE, and out.c turns that into a stop. */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

int noise_stop_requested(void)
{
    return atomic_load_explicit(&stop_flag, memory_order_relaxed);
}

int noise_stop_signal(void)
{
    return atomic_load(&stop_sig);
}

void noise_stop_request(void)
{
    atomic_store(&stop_flag, 1);
}

double noise_stop_time(void)
{
    return (double)atomic_load(&stop_ns) * 1e-9;
}

void noise_stop_reset(void)
{
    atomic_store(&stop_ns, 0);
    atomic_store(&stop_flag, 0);
    atomic_store(&stop_sig, 0);
}
