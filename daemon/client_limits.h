/* client_limits: how many connections and requests each user may have of the control socket, so
 * that one user cannot starve the others, and root's Slurm prolog least of all (docs/coschedd.md,
 * LIMITS PER USER). Pure bookkeeping: control.c asks, and acts on the answers. */
#ifndef COSCHED_CLIENT_LIMITS_H
#define COSCHED_CLIENT_LIMITS_H

#include <stdbool.h>
#include <sys/types.h>

/* Connections of root and operators, all told (the daemon's cap before per-user limits). */
#define CLIENT_LIMITS_MAX 1024
/* Of those, kept for root and operators alone (at most half of what descriptors allow). */
#define CLIENT_LIMITS_RESERVED 64
/* Descriptors left to the daemon's own files (state, runs' output, timers) before clients. */
#define CLIENT_LIMITS_FD_SPARE 16

/* The settings: limits.* in coschedd.yaml. */
typedef struct client_limits_params {
    int per_user;         /* connections served at once per uid */
    int waiting_per_user; /* more of that uid kept, unread, until one of those closes */
    double rate;          /* requests a second per uid (the bucket holds twice that); 0: no limit */
} client_limits_params_t;

/* One uid that is connected, or whose request bucket is not full again yet. */
typedef struct client_user {
    uid_t uid;
    bool privileged; /* root or an operator when it connected first: no limit, and the reserve */
    int served, waiting;
    double tokens, filled_at; /* the request bucket, and when it was last topped up (monotonic) */
    struct client_user *next;
} client_user_t;

typedef enum {
    CLIENT_SERVE,       /* read it now */
    CLIENT_WAIT,        /* keep it, unread, until one of its user's served connections closes */
    CLIENT_REFUSE_USER, /* its user has per_user + waiting_per_user open already */
    CLIENT_REFUSE_ALL,  /* the users without privilege have unprivileged_max open (everyone: MAX) */
} client_admission_t;

/* Which limit acted, as the metric's label says it. */
typedef enum {
    CLIENT_LIMIT_CONNECTIONS, /* refused: its user had too many open */
    CLIENT_LIMIT_TOTAL,       /* refused: the users had too many open, all told */
    CLIENT_LIMIT_WAITING,     /* made to wait for one of its user's connections to close */
    CLIENT_LIMIT_RATE,        /* a request held until its user's bucket refilled */
    CLIENT_LIMIT_COUNT
} client_limit_t;

typedef struct client_limits {
    client_user_t *users;
    int connections, unprivileged; /* open now: all, and those of users without privilege */
    int unprivileged_max;          /* client_limits_unprivileged_max of the descriptor limit at start */
    unsigned long counted[CLIENT_LIMIT_COUNT];
    double logged_at; /* when a refusal was last logged (monotonic): one line a minute, not a flood */
} client_limits_t;

/* The label of a limit in cosched_client_limit_total{limit=...}. */
const char *client_limit_name(client_limit_t limit);

/* The connections everyone but root and operators may hold, for a descriptor limit: what the
 * descriptors allow (up to CLIENT_LIMITS_MAX) less the reserve. */
int client_limits_unprivileged_max(long fd_limit);

/* The uid's entry, or NULL. */
client_user_t *client_limits_find(client_limits_t *l, uid_t uid);

/* A new entry for a uid that has none, its bucket full; NULL when out of memory. */
client_user_t *client_limits_add(client_limits_t *l, uid_t uid, bool privileged, double now);

/* A new connection of u: admitted (served, or waiting: counted as open) or refused (counted). */
client_admission_t client_limits_admit(client_limits_t *l, client_user_t *u, const client_limits_params_t *p);

/* A connection of u closed, served or still waiting. */
void client_limits_leave(client_limits_t *l, client_user_t *u, bool was_waiting);

/* Whether one of u's waiting connections may be served now; if so it is counted as served. */
bool client_limits_promote(client_user_t *u, const client_limits_params_t *p);

/* Take one request's token from u's bucket (refilled at p->rate since filled_at); false: none
 * left, the request waits (the caller counts it once, not at each try). Root, operators and
 * rate 0 always get one. */
bool client_limits_take(client_user_t *u, const client_limits_params_t *p, double now);

/* Seconds until u's bucket holds a token again (0: it holds one). */
double client_limits_next_token(const client_user_t *u, const client_limits_params_t *p, double now);

/* Forget the users with no connection whose bucket is full again: they would start afresh. */
void client_limits_forget_idle(client_limits_t *l, const client_limits_params_t *p, double now);

void client_limits_free(client_limits_t *l);

#endif
