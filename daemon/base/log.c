/* log: one line per message. systemd sets JOURNAL_STREAM when stderr is the journal; then the
 * sd-daemon prefixes carry the priority and the journal adds time and name itself. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <time.h>

static int to_journal;
static int debug_enabled;

void log_init(void)
{
    to_journal = getenv("JOURNAL_STREAM") != NULL;
    debug_enabled = getenv("COSCHEDD_DEBUG") != NULL;
}

static void vlog(const char *prefix, const char *level, const char *fmt, va_list ap)
{
    if (to_journal) {
        fputs(prefix, stderr);
    } else {
        char stamp[32];
        time_t t = time(NULL);
        struct tm tm;
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", localtime_r(&t, &tm));
        fprintf(stderr, "%s coschedd: %s", stamp, level);
    }
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
}

#define DEFINE_LOG(name, prefix, level)                                                                                \
    void name(const char *fmt, ...)                                                                                    \
    {                                                                                                                  \
        va_list ap;                                                                                                    \
        va_start(ap, fmt);                                                                                             \
        vlog(prefix, level, fmt, ap);                                                                                  \
        va_end(ap);                                                                                                    \
    }

DEFINE_LOG(log_err, SD_ERR, "error: ")
DEFINE_LOG(log_warn, SD_WARNING, "warning: ")
DEFINE_LOG(log_info, SD_INFO, "")

void log_debug(const char *fmt, ...)
{
    if (!debug_enabled)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(SD_DEBUG, "debug: ", fmt, ap);
    va_end(ap);
}
