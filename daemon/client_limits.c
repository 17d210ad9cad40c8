/* client_limits: the per-user bookkeeping of the control socket — a share of the connections, a
 * queue of waiting ones behind it, a bucket of requests, and a reserve for root and operators. */
#include "client_limits.h"

#include <stdlib.h>

static const char *const limit_names[CLIENT_LIMIT_COUNT] = {"connections", "total", "waiting", "rate"};

const char *client_limit_name(client_limit_t limit)
{
    return limit < CLIENT_LIMIT_COUNT ? limit_names[limit] : "unknown";
}

int client_limits_unprivileged_max(long fd_limit)
{
    long room = fd_limit - CLIENT_LIMITS_FD_SPARE;
    if (room > CLIENT_LIMITS_MAX)
        room = CLIENT_LIMITS_MAX;
    if (room < 2)
        return 0;
    /* A daemon held to a few descriptors (a test's prlimit) still serves users with half. */
    long reserved = room / 2 < CLIENT_LIMITS_RESERVED ? room / 2 : CLIENT_LIMITS_RESERVED;
    return (int)(room - reserved);
}

/* The bucket holds two seconds' worth: a burst of calls (a job's tasks starting) goes through. */
static double bucket_size(const client_limits_params_t *p)
{
    return 2 * p->rate;
}

static void refill(client_user_t *u, const client_limits_params_t *p, double now)
{
    if (now > u->filled_at) {
        u->tokens += (now - u->filled_at) * p->rate;
        u->filled_at = now;
    }
    if (u->tokens > bucket_size(p))
        u->tokens = bucket_size(p); /* also when a reload made the bucket smaller */
}

client_user_t *client_limits_find(client_limits_t *l, uid_t uid)
{
    for (client_user_t *u = l->users; u; u = u->next)
        if (u->uid == uid)
            return u;
    return NULL;
}

client_user_t *client_limits_add(client_limits_t *l, uid_t uid, bool privileged, double now)
{
    client_user_t *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->uid = uid;
    u->privileged = privileged;
    u->tokens = 1e300; /* full: refill clamps it to the bucket's size on first use */
    u->filled_at = now;
    u->next = l->users;
    l->users = u;
    return u;
}

client_admission_t client_limits_admit(client_limits_t *l, client_user_t *u, const client_limits_params_t *p)
{
    client_admission_t verdict;
    if (l->connections >= CLIENT_LIMITS_MAX)
        verdict = CLIENT_REFUSE_ALL;
    else if (u->privileged)
        verdict = CLIENT_SERVE;
    else if (l->unprivileged >= l->unprivileged_max)
        verdict = CLIENT_REFUSE_ALL;
    else if (u->served < p->per_user)
        verdict = CLIENT_SERVE;
    else if (u->waiting < p->waiting_per_user)
        verdict = CLIENT_WAIT;
    else
        verdict = CLIENT_REFUSE_USER;
    if (verdict == CLIENT_REFUSE_USER || verdict == CLIENT_REFUSE_ALL) {
        l->counted[verdict == CLIENT_REFUSE_USER ? CLIENT_LIMIT_CONNECTIONS : CLIENT_LIMIT_TOTAL]++;
        return verdict;
    }
    if (verdict == CLIENT_WAIT) {
        u->waiting++;
        l->counted[CLIENT_LIMIT_WAITING]++;
    } else {
        u->served++;
    }
    l->connections++;
    l->unprivileged += !u->privileged;
    return verdict;
}

void client_limits_leave(client_limits_t *l, client_user_t *u, bool was_waiting)
{
    if (was_waiting)
        u->waiting--;
    else
        u->served--;
    l->connections--;
    l->unprivileged -= !u->privileged;
}

bool client_limits_promote(client_user_t *u, const client_limits_params_t *p)
{
    if (u->waiting == 0 || (!u->privileged && u->served >= p->per_user))
        return false;
    u->waiting--;
    u->served++;
    return true;
}

bool client_limits_take(client_user_t *u, const client_limits_params_t *p, double now)
{
    if (u->privileged || p->rate <= 0)
        return true;
    refill(u, p, now);
    if (u->tokens >= 1) {
        u->tokens -= 1;
        return true;
    }
    return false;
}

double client_limits_next_token(const client_user_t *u, const client_limits_params_t *p, double now)
{
    if (u->privileged || p->rate <= 0)
        return 0;
    double tokens = u->tokens + (now > u->filled_at ? (now - u->filled_at) * p->rate : 0);
    return tokens >= 1 ? 0 : (1 - tokens) / p->rate;
}

void client_limits_forget_idle(client_limits_t *l, const client_limits_params_t *p, double now)
{
    for (client_user_t **pu = &l->users; *pu;) {
        client_user_t *u = *pu;
        if (u->served + u->waiting == 0)
            refill(u, p, now);
        if (u->served + u->waiting == 0 && (p->rate <= 0 || u->privileged || u->tokens >= bucket_size(p))) {
            *pu = u->next;
            free(u);
        } else {
            pu = &u->next;
        }
    }
}

void client_limits_free(client_limits_t *l)
{
    while (l->users) {
        client_user_t *u = l->users;
        l->users = u->next;
        free(u);
    }
}
