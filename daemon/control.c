/* control: the Unix control socket and nothing else — listen, accept, read frames, dispatch,
 * write replies. Every client is a small struct in a list; a malformed frame drops that client
 * only; a slow or silent one times out; one user's many clients wait their turn, or are refused,
 * by the limits of client_limits.c; nothing here ever blocks. */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"
#include "methods.h"
#include "proto.h"
#include "state.h"

enum { MAX_PENDING_OUT = 1 << 20 };

/* The descriptors asked for at start: CLIENT_LIMITS_MAX clients and the runs' files fit; no more,
 * as runs inherit the limit and a program using select() breaks past 1024 (the packaged unit
 * sets LimitNOFILE itself). */
#define FD_LIMIT_WANTED 8192

struct client {
    unsigned id;
    int fd;
    peer_t peer;
    bool peer_judged; /* peer.manager decided: once per connection, at its first request */
    unsigned char header[4];
    size_t header_got;
    char *payload; /* allocated once the header is known and checked */
    size_t payload_len, payload_got;
    unsigned char *out;
    size_t out_len, out_sent;
    double deadline;     /* monotonic: the client must finish a request by then */
    bool closing;        /* flush what is queued, then close */
    bool want_out;       /* EPOLLOUT is armed */
    client_user_t *user; /* its uid's limits */
    bool waiting;        /* over its user's share: kept, unread, until one of theirs closes */
    bool held;           /* a whole request read, waiting for its user's rate to allow it */
    client_t *next;
};

static unsigned next_client_id = 1;

static void resume_accepting(daemon_t *d);

/* Refuse to steal the socket from a running daemon; remove a stale one. */
static int claim_path(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a socket", path);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int alive = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    if (alive) {
        snprintf(err, errlen, "another coschedd is already listening on %s", path);
        return -1;
    }
    unlink(path);
    return 0;
}

static int make_parent_dir(const char *path)
{
    char dir[sizeof((struct sockaddr_un *)0)->sun_path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* Clients should meet the limits of client_limits.c before they meet the descriptor limit. */
static void raise_fd_limit(daemon_t *d)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < FD_LIMIT_WANTED) {
        rlim_t wanted = rl.rlim_max < FD_LIMIT_WANTED ? rl.rlim_max : FD_LIMIT_WANTED;
        if (wanted > rl.rlim_cur) {
            rl.rlim_cur = wanted;
            if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_warn("cannot raise the descriptor limit to %lu: %s", (unsigned long)wanted, strerror(errno));
        }
    }
    long limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)FD_LIMIT_WANTED ? (long)rl.rlim_cur
                                                                                             : FD_LIMIT_WANTED;
    d->client_limits.unprivileged_max = client_limits_unprivileged_max(limit);
    if (d->client_limits.unprivileged_max < CLIENT_LIMITS_MAX - CLIENT_LIMITS_RESERVED)
        log_warn("%ld descriptors allow users other than root and operators %d connections in all", limit,
                 d->client_limits.unprivileged_max);
}

int control_listen(daemon_t *d, char *err, size_t errlen)
{
    raise_fd_limit(d);
    d->client_rate_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event rate_ev = {.events = EPOLLIN, .data.u64 = EV_CLIENT_RATE};
    if (d->client_rate_fd < 0 || epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->client_rate_fd, &rate_ev) < 0) {
        snprintf(err, errlen, "cannot make the timer of the request rates: %s", strerror(errno));
        return -1;
    }
    int n = sd_listen_fds(1);
    if (n > 1) {
        snprintf(err, errlen, "systemd passed %d sockets; coschedd takes exactly one", n);
        return -1;
    }
    if (n == 1 && sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) > 0) {
        d->listen_fd = SD_LISTEN_FDS_START;
        d->listen_from_systemd = true;
        fcntl(d->listen_fd, F_SETFL, fcntl(d->listen_fd, F_GETFL) | O_NONBLOCK);
        fcntl(d->listen_fd, F_SETFD, FD_CLOEXEC);
    } else {
        const char *path = d->cfg.socket_path;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof sa.sun_path) {
            snprintf(err, errlen, "socket path %s is too long", path);
            return -1;
        }
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        if (make_parent_dir(path) < 0) {
            snprintf(err, errlen, "cannot create the directory of %s: %s", path, strerror(errno));
            return -1;
        }
        if (claim_path(path, err, errlen) < 0)
            return -1;
        d->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        /* Everyone may connect and read; what they may change is decided per request. */
        mode_t old = umask(0111);
        int rc = d->listen_fd < 0 ? -1 : bind(d->listen_fd, (struct sockaddr *)&sa, sizeof sa);
        umask(old);
        if (rc < 0 || listen(d->listen_fd, 128) < 0) {
            snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
            return -1;
        }
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_LISTEN};
    return epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->listen_fd, &ev);
}

void control_stop_listening(daemon_t *d)
{
    if (d->listen_fd < 0)
        return;
    epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, d->listen_fd, NULL);
    close(d->listen_fd);
    d->listen_fd = -1;
    if (!d->listen_from_systemd)
        unlink(d->cfg.socket_path);
}

static client_limits_params_t limits_params(const daemon_t *d)
{
    return (client_limits_params_t){d->cfg.connections_per_user, d->cfg.waiting_per_user, d->cfg.requests_per_user};
}

/* What epoll watches of a client: its input unless it waits (its turn, or its rate), its output
 * while a reply is queued. A hang-up is reported either way. */
static void watch(daemon_t *d, client_t *c)
{
    uint32_t events = (c->waiting || c->held ? 0 : EPOLLIN) | (c->want_out ? EPOLLOUT : 0);
    struct epoll_event ev = {.events = events, .data.u64 = EV_CLIENT_BASE + c->id};
    epoll_ctl(d->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Serve u's waiting clients, oldest first (the list is newest first), while its share allows. */
static void serve_waiting(daemon_t *d, client_user_t *u)
{
    client_limits_params_t params = limits_params(d);
    while (u->waiting > 0 && client_limits_promote(u, &params)) {
        client_t *oldest = NULL;
        for (client_t *c = d->clients; c; c = c->next)
            if (c->user == u && c->waiting)
                oldest = c;
        if (!oldest)
            return; /* cannot happen: the counts follow the clients */
        oldest->waiting = false;
        oldest->deadline = clock_now_mono() + d->cfg.client_timeout; /* its time starts now */
        watch(d, oldest);
    }
}

static void client_close(daemon_t *d, client_t *c)
{
    for (client_t **p = &d->clients; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    client_limits_leave(&d->client_limits, c->user, c->waiting);
    if (!c->waiting)
        serve_waiting(d, c->user); /* its place goes to the next of its user's */
    free(c->payload);
    free(c->out);
    free(c);
    d->nclients--;
    resume_accepting(d); /* a descriptor is free again */
}

static client_t *client_by_id(daemon_t *d, unsigned id)
{
    for (client_t *c = d->clients; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

/* Out of descriptors, accept fails and leaves the connection queued: the listening socket
 * stays readable and the loop would spin. It leaves epoll until a client closes or the next
 * tick, when accepting resumes; queued clients wait in the backlog meanwhile. */
static void pause_accepting(daemon_t *d, int error)
{
    if (d->accept_paused)
        return;
    struct epoll_event ev = {.events = 0, .data.u64 = EV_LISTEN};
    epoll_ctl(d->epoll_fd, EPOLL_CTL_MOD, d->listen_fd, &ev);
    d->accept_paused = true;
    d->accept_pauses_total++;
    log_warn("cannot accept clients (%s, %d connected): paused until one leaves", strerror(error), d->nclients);
}

static void resume_accepting(daemon_t *d)
{
    if (!d->accept_paused || d->listen_fd < 0)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_LISTEN};
    epoll_ctl(d->epoll_fd, EPOLL_CTL_MOD, d->listen_fd, &ev);
    d->accept_paused = false;
}

/* Over a limit: say which (best effort: the reply fits an empty socket buffer) and close. */
static void refuse(daemon_t *d, int fd, const client_user_t *u, client_admission_t verdict)
{
    json_t *reply;
    if (verdict == CLIENT_REFUSE_USER)
        reply = proto_error(PROTO_EBUSY,
                            "uid %u has %d connections open: limits.connections_per_user %d + "
                            "limits.waiting_per_user %d; try again when one closes",
                            (unsigned)u->uid, u->served + u->waiting, d->cfg.connections_per_user,
                            d->cfg.waiting_per_user);
    else
        reply = proto_error(PROTO_EBUSY,
                            "coschedd has %d connections open, %d of users other than root and operators (at "
                            "most %d, the rest kept for them); try again when one closes",
                            d->client_limits.connections, d->client_limits.unprivileged,
                            u->privileged ? CLIENT_LIMITS_MAX : d->client_limits.unprivileged_max);
    size_t n = 0;
    unsigned char *frame = proto_encode(reply, &n);
    json_decref(reply);
    if (frame && send(fd, frame, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        log_debug("cannot tell uid %u it is refused: %s", (unsigned)u->uid, strerror(errno));
    free(frame);
    close(fd);
    double now = clock_now_mono();
    if (now - d->client_limits.logged_at >= 60 || d->client_limits.logged_at == 0) {
        d->client_limits.logged_at = now;
        log_warn("refused a connection of uid %u: %s (further refusals this minute are only counted)", (unsigned)u->uid,
                 verdict == CLIENT_REFUSE_USER ? "its connections are at their limit"
                                               : "connections are at their limit");
    }
}

/* The uid's limits, its entry made at its first connection (with whether it is an operator: the
 * group database is asked once, not at every connection of a flood). */
static client_user_t *user_of(daemon_t *d, const struct ucred *cred)
{
    client_user_t *u = client_limits_find(&d->client_limits, cred->uid);
    if (!u)
        u = client_limits_add(&d->client_limits, cred->uid, config_is_operator(&d->cfg, cred->uid, cred->gid),
                              clock_now_mono());
    return u;
}

static void add_client(daemon_t *d, int fd, const struct ucred *cred)
{
    client_user_t *u = user_of(d, cred);
    client_t *c = u ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        close(fd);
        return;
    }
    client_limits_params_t params = limits_params(d);
    client_admission_t verdict = client_limits_admit(&d->client_limits, u, &params);
    if (verdict == CLIENT_REFUSE_USER || verdict == CLIENT_REFUSE_ALL) {
        free(c);
        refuse(d, fd, u, verdict);
        return;
    }
    c->id = next_client_id++;
    c->fd = fd;
    c->peer = (peer_t){.uid = cred->uid, .gid = cred->gid, .pid = cred->pid};
    c->user = u;
    c->waiting = verdict == CLIENT_WAIT;
    /* A waiting client's time starts when it is served: it is not the one that is slow. */
    c->deadline = c->waiting ? INFINITY : clock_now_mono() + d->cfg.client_timeout;
    struct epoll_event ev = {.events = c->waiting ? 0 : EPOLLIN, .data.u64 = EV_CLIENT_BASE + c->id};
    if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        client_limits_leave(&d->client_limits, u, c->waiting);
        close(fd);
        free(c);
        return;
    }
    c->next = d->clients;
    d->clients = c;
    d->nclients++;
}

void control_accept(daemon_t *d)
{
    for (;;) {
        int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                pause_accepting(d, errno);
            return; /* EAGAIN: drained; other errors: try again on the next wake-up */
        }
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
            close(fd);
            continue;
        }
        add_client(d, fd, &cred);
    }
}

static void want_write(daemon_t *d, client_t *c, bool on)
{
    if (c->want_out == on)
        return; /* most replies go out at once: no epoll_ctl for them */
    c->want_out = on;
    watch(d, c);
}

/* Write what is queued; returns -1 when the client is gone or finished closing. */
static int flush(daemon_t *d, client_t *c)
{
    while (c->out_sent < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            want_write(d, c, true);
            return 0;
        }
        if (n <= 0)
            return -1;
        c->out_sent += (size_t)n;
    }
    c->out_len = c->out_sent = 0;
    want_write(d, c, false);
    return c->closing ? -1 : 0;
}

static void queue_reply(daemon_t *d, client_t *c, json_t *reply)
{
    size_t n = 0;
    unsigned char *frame = proto_encode(reply, &n);
    json_decref(reply);
    if (!frame) {
        json_t *too_big = proto_error(PROTO_EIO, "the reply is larger than %d bytes", PROTO_MAX_FRAME);
        frame = proto_encode(too_big, &n);
        json_decref(too_big);
        if (!frame) {
            c->closing = true;
            return;
        }
    }
    if (c->out_len + n > MAX_PENDING_OUT) {
        free(frame); /* it does not read its replies: let it go */
        c->closing = true;
        c->out_len = c->out_sent = 0;
        return;
    }
    unsigned char *grown = realloc(c->out, c->out_len + n);
    if (grown) {
        memcpy(grown + c->out_len, frame, n);
        c->out = grown;
        c->out_len += n;
    }
    free(frame);
    (void)d;
}

/* A frame that cannot be answered: say why (best effort), then close. */
static void reject(daemon_t *d, client_t *c, const char *why)
{
    d->frames_rejected_total++;
    log_debug("client uid %u pid %d: %s; closing", (unsigned)c->peer.uid, (int)c->peer.pid, why);
    queue_reply(d, c, proto_error(PROTO_EPROTO, "%s; closing the connection", why));
    c->closing = true;
}

static void handle_frame(daemon_t *d, client_t *c)
{
    char err[256];
    json_t *request = proto_parse(c->payload, c->payload_len, err, sizeof err);
    if (!request) {
        reject(d, c, err);
    } else {
        if (!c->peer_judged) { /* group lookups (NSS, LDAP): once per connection, not per request */
            c->peer.manager = config_is_operator(&d->cfg, c->peer.uid, c->peer.gid);
            c->peer_judged = true;
        }
        queue_reply(d, c, methods_dispatch(d, &c->peer, request));
        json_decref(request);
    }
    free(c->payload);
    c->payload = NULL;
    c->header_got = 0;
    c->deadline = clock_now_mono() + d->cfg.client_timeout;
}

/* Wake when u has a token again, unless the timer is set to wake sooner: a request held for its
 * user's rate waits about as long as the rate says, not until the next tick. */
static void wake_for_token(daemon_t *d, const client_user_t *u)
{
    client_limits_params_t params = limits_params(d);
    double wait = client_limits_next_token(u, &params, clock_now_mono());
    struct itimerspec now_set;
    if (timerfd_gettime(d->client_rate_fd, &now_set) == 0 && (now_set.it_value.tv_sec || now_set.it_value.tv_nsec) &&
        now_set.it_value.tv_sec + now_set.it_value.tv_nsec / 1e9 <= wait)
        return;
    if (wait > 1) /* a token comes at least once a second (config.c: a rate of 1 or more) */
        wait = 1;
    long ns = (long)(wait * 1e9) + 1000000; /* a millisecond late rather than a hair early */
    struct itimerspec once = {.it_value = {ns / 1000000000L, ns % 1000000000L}};
    timerfd_settime(d->client_rate_fd, 0, &once, NULL);
}

/* A whole request read: answered now if its user's rate allows, else held, its input no longer
 * read, until its user has a token again (release_held). Returns whether it was answered. */
static bool answer_or_hold(daemon_t *d, client_t *c)
{
    client_limits_params_t params = limits_params(d);
    if (!client_limits_take(c->user, &params, clock_now_mono())) {
        d->client_limits.counted[CLIENT_LIMIT_RATE]++;
        c->held = true;
        c->deadline = INFINITY; /* it waits for us, not we for it */
        watch(d, c);
        wake_for_token(d, c->user);
        return false;
    }
    handle_frame(d, c);
    return true;
}

/* Read everything available; one request may arrive in pieces, several in one read. */
static int read_frames(daemon_t *d, client_t *c)
{
    for (;;) {
        ssize_t n;
        if (c->header_got < 4) {
            n = recv(c->fd, c->header + c->header_got, 4 - c->header_got, 0);
        } else {
            n = recv(c->fd, c->payload + c->payload_got, c->payload_len - c->payload_got, 0);
        }
        if (n == 0)
            return -1;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        if (c->header_got < 4) {
            c->header_got += (size_t)n;
            if (c->header_got < 4)
                continue;
            c->payload_len = proto_get_header(c->header);
            if (c->payload_len == 0) {
                reject(d, c, "frame length must be 1..65536 bytes");
                return 0;
            }
            c->payload = malloc(c->payload_len);
            if (!c->payload)
                return -1;
            c->payload_got = 0;
            continue;
        }
        c->payload_got += (size_t)n;
        if (c->payload_got < c->payload_len)
            continue;
        if (!answer_or_hold(d, c) || c->closing)
            return 0;
    }
}

void control_client_event(daemon_t *d, unsigned id, uint32_t events)
{
    client_t *c = client_by_id(d, id);
    if (!c)
        return;
    int rc = 0;
    if ((events & EPOLLIN) && !c->closing && !c->waiting && !c->held)
        rc = read_frames(d, c);
    /* A reply acknowledges a change: it goes out only once the change is on disk. */
    state_save_if_dirty(d);
    if (rc == 0 && (c->out_len > 0 || c->closing))
        rc = flush(d, c);
    if (rc < 0 || (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)))
        client_close(d, c);
}

/* Requests held for their user's rate, answered as far as the refilled buckets allow. */
static void release_held(daemon_t *d)
{
    client_limits_params_t params = limits_params(d);
    double now = clock_now_mono();
    for (client_t *c = d->clients, *next; c; c = next) {
        next = c->next;
        if (!c->held)
            continue;
        if (!client_limits_take(c->user, &params, now)) {
            wake_for_token(d, c->user);
            continue;
        }
        c->held = false;
        handle_frame(d, c);
        watch(d, c); /* more of its requests may be queued: epoll says so */
        state_save_if_dirty(d);
        if (flush(d, c) < 0)
            client_close(d, c); /* next stays: a close only promotes a waiting client */
    }
}

void control_rate_timer(daemon_t *d)
{
    uint64_t expirations;
    if (read(d->client_rate_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        return;
    release_held(d);
}

void control_tick(daemon_t *d)
{
    resume_accepting(d); /* descriptors freed elsewhere (a run's files) count too */
    release_held(d);
    for (client_user_t *u = d->client_limits.users; u; u = u->next)
        serve_waiting(d, u); /* a reload may have raised connections_per_user */
    client_limits_params_t params = limits_params(d);
    double now = clock_now_mono();
    client_limits_forget_idle(&d->client_limits, &params, now);
    for (client_t *c = d->clients, *next; c; c = next) {
        next = c->next;
        if (now > c->deadline) {
            log_debug("client uid %u pid %d timed out", (unsigned)c->peer.uid, (int)c->peer.pid);
            client_close(d, c);
        }
    }
}

void control_close_all(daemon_t *d)
{
    while (d->clients)
        client_close(d, d->clients);
    client_limits_free(&d->client_limits);
    if (d->client_rate_fd > 0)
        close(d->client_rate_fd);
}
