/* redact: another user's job as private_jobs: redact shows it — its shape and shares, without
 * who owns it, what it runs, its environment or any path (docs/security.md, "Private data"). */
#ifndef COSCHED_REDACT_H
#define COSCHED_REDACT_H

#include <jansson.h>
#include <stddef.h>

/* Scrub a reply object (a job, a run, a job's statistics) in place, at any depth. */
void redact_private(json_t *o);

/* Every string value in o, at any depth, that is one of the n ids (jobs hidden from the caller)
 * becomes "(private)". */
void redact_ids(json_t *o, const char *const *ids, size_t n);

#endif
