/* access: who may call which method on which job, and how much of a job a caller may see — the
 * table of docs/security.md, decided here and nowhere else. methods.c gives each method a rule;
 * the handlers check only their parameters. */
#ifndef COSCHED_ACCESS_H
#define COSCHED_ACCESS_H

#include <stddef.h>

#include "daemon.h"

/* Who may call a method. "Managers" are root (Slurm's prolog and epilog run as SlurmdUser, root by
 * default) and the configured operators. */
typedef enum {
    ACCESS_ANYONE,        /* any local user: reads, each filtered by private_jobs */
    ACCESS_MANAGERS,      /* root and operators only */
    ACCESS_JOB_OWNER,     /* managers, and the owner of the job the request names, either role */
    ACCESS_TRAINER_OWNER, /* managers, and the owner of the named job when it is a trainer */
    ACCESS_UNLESS_HIDDEN, /* anyone, but managers only under private_jobs: hide (it names every job) */
} access_rule_t;

/* What an access decision came to. */
typedef enum {
    ACCESS_GRANTED,
    ACCESS_DENIED,     /* EPERM: why says who may */
    ACCESS_NO_SUCH_JOB /* ENOENT: a rule on a job, and no job of that id */
} access_verdict_t;

/* How much of a job a caller sees (private_jobs, docs/security.md "Private data"). */
typedef enum {
    ACCESS_SEES_ALL,      /* its owner, managers, or private_jobs: off */
    ACCESS_SEES_REDACTED, /* private_jobs: redact: no uid, argv, environment or paths */
    ACCESS_SEES_NOTHING,  /* private_jobs: hide: as if the job were not there */
} access_view_t;

/* The decision for a caller (uid, manager or not) on job j (NULL: none of that id, or the rule
 * names none) under the private_jobs setting; what is the action in words ("release"), for the
 * refusal. */
access_verdict_t access_decide(access_rule_t rule, uid_t uid, bool manager, const job_t *j, private_jobs_t setting,
                               const char *what, char *why, size_t whylen);

access_view_t access_view(private_jobs_t setting, uid_t uid, bool manager, const job_t *j);

#endif
