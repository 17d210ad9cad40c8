/* step_series: which of a trainer's step reports make the one series its guard judges — the
 * ranks of a data-parallel job report the same steps — and how they arrive (the program's own
 * reports, or the PyTorch hook). Pure, unit-tested; docs/guard.md ("Ranks and the hook"). */
#ifndef COSCHED_STEP_SERIES_H
#define COSCHED_STEP_SERIES_H

#include <stdbool.h>

#define STEP_RANK_NONE (-1LL) /* a report without a rank: today's reporters, a run's step lines */
#define STEP_RANK_MAX 0x7fffffffLL
#define STEP_TORCH_MAX 32 /* a torch version, "2.4.0a0+git1234abc": 1-31 of [A-Za-z0-9.+_-] */

/* How a step reached the daemon: the job's own program (libcosched, the Python module, cosched
 * report, a run's step lines), or the optimizer hook coschedd's autoreport injects. */
typedef enum { STEP_VIA_NONE, STEP_VIA_REPORTED, STEP_VIA_HOOK } step_via_t;

typedef struct step_origin {
    long long rank;    /* STEP_RANK_NONE, or the process's rank in its job */
    step_via_t via;    /* REPORTED or HOOK */
    const char *torch; /* the hook's torch version, or NULL */
} step_origin_t;

/* Not saved: after a restart the next report starts the series again. */
typedef struct step_series {
    step_via_t via;             /* how the judged rank's latest step arrived; NONE before any */
    char torch[STEP_TORCH_MAX]; /* the torch version its hook sent; "" when none came */
    long long rank;             /* the rank judged (STEP_RANK_NONE: reports without one) */
    double last, last_seconds;  /* when that rank reported last (monotonic), and its step time */
    unsigned long other_ranks;  /* reports of other ranks: the same steps, not counted again */
    bool program_reports;       /* the job's own program has reported a step: the hook's are left out */
    unsigned long hook_ignored; /* the hook's reports left out for that: the same steps again */
} step_series_t;

typedef enum {
    STEP_JUDGED,          /* the series' next step */
    STEP_JUDGED_NEW_RANK, /* the same, from another rank than before (a lower one, or the judged one went quiet) */
    STEP_OTHER_RANK,      /* another rank's copy of a step the series has */
    STEP_HOOK_IGNORED,    /* the hook's copy of a step the program reports itself */
} step_admit_t;

/* One report of `seconds` at `now`. The series follows the lowest rank that reports, and a
 * report without a rank counts as lower than any, so it is always judged, as before ranks
 * were sent. A higher rank takes over only once the judged one has been quiet for longer than
 * the guard waits before it lets co-tenants go (the larger of idle_release and eight of its
 * step times). Once the job's program has reported a step itself, in any rank, the hook's
 * reports of the job are left out for good: the program's own reports win. */
step_admit_t step_series_admit(step_series_t *s, const step_origin_t *from, double seconds, double now,
                               double idle_release);

const char *step_via_name(step_via_t via); /* "reported", "hook"; NULL for none */
int step_via_parse(const char *name, step_via_t *out);
bool step_torch_valid(const char *version);

#endif
