/* conn: libcosched's one connection to coschedd, kept open across requests — checked before
 * each use, replaced when the daemon closed it, held off after a failure. */
#ifndef COSCHED_CONN_H
#define COSCHED_CONN_H

#include <stddef.h>
#include <sys/un.h>

#include <jansson.h>

#define CONN_HOLD_OFF_S 1.0      /* after a failure, no new connection before this */
#define CONN_TIMEOUT_HOLD_OFF 10 /* after a timeout: this many timeouts (at least the above) */

typedef struct conn {
    char path[sizeof((struct sockaddr_un *)0)->sun_path];
    int fd;            /* -1: not connected */
    int timeout_ms;    /* per attempt: connect, send and reply */
    double retry_at;   /* monotonic seconds; no connect before (set by a failure) */
    char failure[256]; /* why the last attempt failed, repeated while held off */
} conn_t;

/* A connection to path, not yet made; -1 with a reason when the path cannot be a socket. */
int conn_init(conn_t *c, const char *path, int timeout_ms, char *err, size_t errlen);

/* Connect now unless connected or held off; 0 when connected. */
int conn_open(conn_t *c, char *err, size_t errlen);

/* Send one request and return its reply (the caller owns it), connecting as needed. NULL
 * with a reason naming the socket when no reply came. */
json_t *conn_call(conn_t *c, const json_t *request, char *err, size_t errlen);

void conn_close(conn_t *c);

#endif
