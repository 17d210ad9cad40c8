/* rpc: connect to the control socket, send one framed request, read one framed reply. */
#include "rpc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "proto.h"
#include "wire.h"

#define UNREACHABLE_HINT                                                                                               \
    "Is coschedd running? Check with 'systemctl status coschedd' (or its log); the socket is --socket, "               \
    "$COSCHED_SOCKET or the default " PROTO_DEFAULT_SOCKET "."

static int connect_socket(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path too long");
        return -1;
    }
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    /* A Unix connect either succeeds, fails, or (backlog full) says EAGAIN: no waiting here. */
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        snprintf(err, errlen, "%s", errno == EAGAIN ? "the daemon's backlog is full" : strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

json_t *rpc_call(const client_opts_t *o, const char *method, json_t *params, int *rc)
{
    char err[512];
    json_t *request = proto_request(method, params);
    int fd = connect_socket(o->socket, err, sizeof err);
    if (fd < 0) {
        json_decref(request);
        *rc = output_error(EXIT_UNREACHABLE, "EUNREACHABLE", "cosched", UNREACHABLE_HINT,
                           "cannot reach coschedd at %s: %s", o->socket, err);
        return NULL;
    }
    json_t *reply = NULL;
    /* A connection over the daemon's limits is answered (EBUSY) and closed, maybe before the
     * request is sent (EPIPE): that answer is read all the same. */
    if (proto_send(fd, request, o->timeout_ms, err, sizeof err) == 0 || errno == EPIPE || errno == ECONNRESET)
        reply = proto_recv(fd, o->timeout_ms, err, sizeof err);
    close(fd);
    json_decref(request);
    if (!reply) {
        *rc = output_error(EXIT_UNREACHABLE, "EUNREACHABLE", "cosched", UNREACHABLE_HINT,
                           "no reply from coschedd at %s: %s", o->socket, err);
        return NULL;
    }
    if (!json_is_true(json_object_get(reply, WIRE_KEY_OK))) {
        json_t *e = json_object_get(reply, WIRE_KEY_ERROR);
        const char *code = json_string_value(json_object_get(e, WIRE_KEY_CODE));
        const char *msg = json_string_value(json_object_get(e, WIRE_KEY_MESSAGE));
        char context[96];
        snprintf(context, sizeof context, "cosched: %.64s", code ? code : "error");
        *rc = output_error(EXIT_FAIL, code ? code : "EFAIL", context, NULL, "%s",
                           msg ? msg : "the daemon refused the request");
        json_decref(reply);
        return NULL;
    }
    json_t *result = json_incref(json_object_get(reply, WIRE_KEY_RESULT));
    json_decref(reply);
    *rc = EXIT_OK;
    return result ? result : json_object();
}
