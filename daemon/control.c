/* control: the Unix control socket and nothing else — listen, accept, read frames, dispatch,
 * write replies. Every client is a small struct in a list; a malformed frame drops that client
 * only; a slow or silent one times out; nothing here ever blocks. */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"
#include "methods.h"
#include "proto.h"
#include "state.h"

enum { MAX_CLIENTS = 1024, MAX_PENDING_OUT = 1 << 20 };

struct client {
    unsigned id;
    int fd;
    peer_t peer;
    unsigned char header[4];
    size_t header_got;
    char *payload; /* allocated once the header is known and checked */
    size_t payload_len, payload_got;
    unsigned char *out;
    size_t out_len, out_sent;
    double deadline; /* monotonic: the client must finish a request by then */
    bool closing;    /* flush what is queued, then close */
    bool want_out;   /* EPOLLOUT is armed */
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

int control_listen(daemon_t *d, char *err, size_t errlen)
{
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

static void client_close(daemon_t *d, client_t *c)
{
    for (client_t **p = &d->clients; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
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
        if (d->nclients >= MAX_CLIENTS || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
            close(fd);
            continue;
        }
        client_t *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->id = next_client_id++;
        c->fd = fd;
        c->peer = (peer_t){.uid = cred.uid, .gid = cred.gid, .pid = cred.pid};
        c->deadline = clock_now_mono() + d->cfg.client_timeout;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_CLIENT_BASE + c->id};
        if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            free(c);
            continue;
        }
        c->next = d->clients;
        d->clients = c;
        d->nclients++;
    }
}

static void want_write(daemon_t *d, client_t *c, bool on)
{
    if (c->want_out == on)
        return; /* most replies go out at once: no epoll_ctl for them */
    c->want_out = on;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.u64 = EV_CLIENT_BASE + c->id};
    epoll_ctl(d->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
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
        return;
    }
    queue_reply(d, c, methods_dispatch(d, &c->peer, request));
    json_decref(request);
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
        handle_frame(d, c);
        free(c->payload);
        c->payload = NULL;
        c->header_got = 0;
        c->deadline = clock_now_mono() + d->cfg.client_timeout;
        if (c->closing)
            return 0;
    }
}

void control_client_event(daemon_t *d, unsigned id, uint32_t events)
{
    client_t *c = client_by_id(d, id);
    if (!c)
        return;
    int rc = 0;
    if ((events & EPOLLIN) && !c->closing)
        rc = read_frames(d, c);
    /* A reply acknowledges a change: it goes out only once the change is on disk. */
    state_save_if_dirty(d);
    if (rc == 0 && (c->out_len > 0 || c->closing))
        rc = flush(d, c);
    if (rc < 0 || (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)))
        client_close(d, c);
}

void control_tick(daemon_t *d)
{
    resume_accepting(d); /* descriptors freed elsewhere (a run's files) count too */
    double now = clock_now_mono();
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
}
