/* conn: libcosched's one connection to coschedd, kept open across requests — checked before
 * each use, replaced when the daemon closed it, held off after a failure. */
#include "conn.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib_clock.h"
#include "proto.h"

int conn_init(conn_t *c, const char *path, int timeout_ms, char *err, size_t errlen)
{
    *c = (conn_t){.fd = -1, .timeout_ms = timeout_ms};
    if (strlen(path) >= sizeof c->path) {
        snprintf(err, errlen, "socket path too long for a Unix socket (%zu bytes, at most %zu): %s", strlen(path),
                 sizeof c->path - 1, path);
        return -1;
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    return 0;
}

static void drop(conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void conn_close(conn_t *c)
{
    drop(c);
}

/* Remember why, and make no new attempt for hold seconds: a dead daemon then costs the
 * training loop a clock read per step, not a connect. */
static void fail(conn_t *c, double hold, const char *why, char *err, size_t errlen)
{
    drop(c);
    snprintf(c->failure, sizeof c->failure, "%s", why);
    c->retry_at = clock_now() + hold;
    snprintf(err, errlen, "coschedd at %s: %s", c->path, why);
}

/* A stuck daemon costs a whole timeout per attempt, so it is asked far less often than a
 * missing one (whose refusal costs nothing). */
static double timeout_hold_off(const conn_t *c)
{
    double hold = CONN_TIMEOUT_HOLD_OFF * c->timeout_ms / 1000.0;
    return hold > CONN_HOLD_OFF_S ? hold : CONN_HOLD_OFF_S;
}

int conn_open(conn_t *c, char *err, size_t errlen)
{
    if (c->fd >= 0)
        return 0;
    double now = clock_now();
    if (now < c->retry_at) {
        snprintf(err, errlen, "coschedd at %s: %s (next attempt in %.1f s)", c->path, c->failure, c->retry_at - now);
        return -1;
    }
    char why[sizeof c->failure];
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", c->path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(why, sizeof why, "socket: %s", strerror(errno));
        fail(c, CONN_HOLD_OFF_S, why, err, errlen);
        return -1;
    }
    /* A Unix connect completes or fails at once (EAGAIN: the backlog is full): never a wait. */
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        snprintf(why, sizeof why, "cannot connect: %s", e == EAGAIN ? "the daemon's backlog is full" : strerror(e));
        fail(c, CONN_HOLD_OFF_S, why, err, errlen);
        return -1;
    }
    c->fd = fd;
    return 0;
}

/* The daemon closes a connection left idle past its client_timeout (5 s by default), and a
 * daemon that restarted left the old one closed. Between requests nothing may be readable:
 * readable means EOF, or a frame nobody asked for (an error sent before a close); either way
 * the stream is over, so there is no need to MSG_PEEK at which. */
static int usable(const conn_t *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, 0);
    return n == 0 || (n < 0 && errno == EINTR);
}

static int ms_until(double deadline)
{
    double left = (deadline - clock_now()) * 1000.0;
    return left > 0 ? (int)left : 0;
}

json_t *conn_call(conn_t *c, const json_t *request, char *err, size_t errlen)
{
    if (c->fd >= 0 && !usable(c))
        drop(c); /* closed while idle: replaced below, no hold-off, nothing was lost */
    /* A second attempt only when the daemon closed the connection before answering (it timed
     * the connection out as the request went, or it restarted): the request was not
     * answered and may go again, once. Never after a timeout: a stuck daemon would only hold
     * the training loop twice as long. */
    for (int attempt = 0;; attempt++) {
        if (conn_open(c, err, errlen) < 0)
            return NULL;
        double deadline = clock_now() + c->timeout_ms / 1000.0;
        json_t *reply = NULL;
        if (proto_send(c->fd, request, c->timeout_ms, err, errlen) == 0)
            reply = proto_recv(c->fd, ms_until(deadline), err, errlen);
        if (reply)
            return reply;
        int e = errno;
        drop(c);
        if (attempt == 0 && (e == EPIPE || e == ECONNRESET))
            continue;
        char why[sizeof c->failure];
        if (e == ETIMEDOUT)
            snprintf(why, sizeof why, "no reply within %d ms", c->timeout_ms);
        else
            snprintf(why, sizeof why, "%s", err);
        fail(c, e == ETIMEDOUT ? timeout_hold_off(c) : CONN_HOLD_OFF_S, why, err, errlen);
        return NULL;
    }
}
