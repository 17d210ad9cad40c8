/* requeue_limits: the trainer owners charged are those of every trainer on the node when the
 * requeue is done: the guard's share is the strictest of all trainers', and which one's word held
 * the co-tenant at the minimum cannot be told apart from the others' in general. A day is counted
 * from an owner's first requeue; the counts live as long as the daemon. */
#include "requeue_limits.h"

#include <stdio.h>
#include <string.h>

enum { DAY = 86400 };

static bool partition_opted_in(const config_t *cfg, const char *partition)
{
    for (int i = 0; i < cfg->n_requeue_partitions; i++)
        if (strcmp(cfg->requeue_partitions[i], partition) == 0)
            return true;
    return false;
}

/* uid's account, its day restarted when over; NULL when it has none and create is false, or when
 * every account is another owner's of this day (a slot whose day is over is taken over). */
static requeue_owner_t *account(daemon_t *d, uid_t uid, double now, bool create)
{
    requeue_owner_t *free_slot = NULL;
    for (int i = 0; i < d->n_requeue_owners; i++) {
        requeue_owner_t *o = &d->requeue_owners[i];
        bool over = now - o->since >= DAY;
        if (o->uid == uid) {
            if (over)
                *o = (requeue_owner_t){.uid = uid, .since = now};
            return o;
        }
        if (over && !free_slot)
            free_slot = o;
    }
    if (!create)
        return NULL;
    if (!free_slot && d->n_requeue_owners < REQUEUE_OWNERS_MAX)
        free_slot = &d->requeue_owners[d->n_requeue_owners++];
    if (free_slot)
        *free_slot = (requeue_owner_t){.uid = uid, .since = now};
    return free_slot;
}

/* Whether every trainer owner on the node could be charged one more requeue: a full table of
 * this day's accounts counts as no room, so that no owner escapes the limit. */
static bool room_for_all(daemon_t *d, double now)
{
    int taken = 0;
    for (int i = 0; i < d->n_requeue_owners; i++)
        taken += now - d->requeue_owners[i].since < DAY;
    int needed = 0;
    for (const job_t *t = d->jobs; t; t = t->next)
        needed += t->role == ROLE_TRAINER && !account(d, t->uid, now, false);
    return taken + needed <= REQUEUE_OWNERS_MAX;
}

bool requeue_limits_allow(daemon_t *d, const job_t *j, double now, double *retry_at, char *why, size_t len)
{
    *retry_at = 0;
    if (!j->partition[0] || !partition_opted_in(&d->cfg, j->partition)) {
        snprintf(why, len, "its partition %s%s%s is not in guard.requeue_partitions: left held",
                 j->partition[0] ? "'" : "", j->partition[0] ? j->partition : "(none given)",
                 j->partition[0] ? "'" : "");
        return false;
    }
    for (const job_t *t = d->jobs; t; t = t->next) {
        const requeue_owner_t *o = t->role == ROLE_TRAINER ? account(d, t->uid, now, false) : NULL;
        if (o && o->count >= d->cfg.requeues_per_owner) {
            *retry_at = o->since + DAY;
            snprintf(why, len,
                     "trainer %s's owner has had %d co-tenants requeued in %.0f s (guard.requeues_per_owner %d a "
                     "day): left held",
                     t->id, o->count, now - o->since, d->cfg.requeues_per_owner);
            return false;
        }
    }
    if (!room_for_all(d, now)) {
        *retry_at = now + 3600;
        snprintf(why, len, "%d trainer owners have had co-tenants requeued today, as many as are counted: left held",
                 REQUEUE_OWNERS_MAX);
        return false;
    }
    return true;
}

void requeue_limits_charge(daemon_t *d, double now)
{
    for (const job_t *t = d->jobs; t; t = t->next) {
        if (t->role != ROLE_TRAINER)
            continue;
        bool charged = false; /* an owner of several trainers pays once */
        for (const job_t *u = d->jobs; u != t; u = u->next)
            charged |= u->role == ROLE_TRAINER && u->uid == t->uid;
        requeue_owner_t *o = charged ? NULL : account(d, t->uid, now, true);
        if (o)
            o->count++;
    }
}
