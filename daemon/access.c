/* access: the permission law of the control socket (docs/security.md). Pure: the caller's
 * identity comes from SO_PEERCRED and whether it manages from config_is_operator, both decided
 * before this is asked. */
#include "access.h"

#include <stdio.h>

access_verdict_t access_decide(access_rule_t rule, uid_t uid, bool manager, const job_t *j, private_jobs_t setting,
                               const char *what, char *why, size_t whylen)
{
    if (rule == ACCESS_ANYONE || manager || (rule == ACCESS_UNLESS_HIDDEN && setting != PRIVATE_JOBS_HIDE))
        return ACCESS_GRANTED;
    if (rule == ACCESS_UNLESS_HIDDEN) {
        snprintf(why, whylen,
                 "uid %u may not %s: they name every job, and private_jobs is hide (root and configured operators "
                 "may)",
                 (unsigned)uid, what);
        return ACCESS_DENIED;
    }
    if (rule == ACCESS_MANAGERS) {
        snprintf(why, whylen, "uid %u may not %s (root and configured operators may)", (unsigned)uid, what);
        return ACCESS_DENIED;
    }
    if (!j)
        return ACCESS_NO_SUCH_JOB;
    if (j->uid != uid) {
        snprintf(why, whylen, "uid %u may not %s job %s of another user (its owner%s, root and operators may)",
                 (unsigned)uid, what, j->id, rule == ACCESS_TRAINER_OWNER ? " when it is a trainer" : "");
        return ACCESS_DENIED;
    }
    /* A co-tenant's owner is the party the guard holds: lifting the hold, or speaking for a
     * trainer, is not theirs to do. */
    if (rule == ACCESS_TRAINER_OWNER && j->role != ROLE_TRAINER) {
        snprintf(why, whylen,
                 "uid %u may not %s job %s: it is a co-tenant, held by the guard; only root and operators may (its "
                 "epilog releases it)",
                 (unsigned)uid, what, j->id);
        return ACCESS_DENIED;
    }
    return ACCESS_GRANTED;
}

access_view_t access_view(private_jobs_t setting, uid_t uid, bool manager, const job_t *j)
{
    if (setting == PRIVATE_JOBS_OFF || manager || (j && j->uid == uid))
        return ACCESS_SEES_ALL;
    return setting == PRIVATE_JOBS_HIDE ? ACCESS_SEES_NOTHING : ACCESS_SEES_REDACTED;
}
