/* proto: framing and strict JSON parsing for the control socket. The daemon's event loop uses
 * the header and parse functions; the client uses the blocking send/recv with deadlines. */
#include "proto.h"
#include "wire.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void proto_put_header(unsigned char header[4], uint32_t length)
{
    header[0] = (unsigned char)(length >> 24);
    header[1] = (unsigned char)(length >> 16);
    header[2] = (unsigned char)(length >> 8);
    header[3] = (unsigned char)length;
}

uint32_t proto_get_header(const unsigned char header[4])
{
    uint32_t n = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 | (uint32_t)header[2] << 8 | header[3];
    return n >= 1 && n <= PROTO_MAX_FRAME ? n : 0;
}

/* jansson has no depth limit of its own below 2048; a cheap pre-scan keeps requests shallow. */
static int too_deep(const char *s, size_t n)
{
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > PROTO_MAX_DEPTH)
                return 1;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 0;
}

json_t *proto_parse(const char *payload, size_t length, char *err, size_t errlen)
{
    if (too_deep(payload, length)) {
        snprintf(err, errlen, "JSON nested deeper than %d levels", PROTO_MAX_DEPTH);
        return NULL;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(payload, length, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        snprintf(err, errlen, "not JSON: %s (at byte %d)", jerr.text, jerr.position);
        return NULL;
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        snprintf(err, errlen, "a frame must hold one JSON object");
        return NULL;
    }
    return doc;
}

unsigned char *proto_encode(const json_t *object, size_t *total)
{
    char *text = json_dumps(object, JSON_COMPACT);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    if (n == 0 || n > PROTO_MAX_FRAME) {
        free(text);
        return NULL;
    }
    unsigned char *buf = malloc(n + 4);
    if (buf) {
        proto_put_header(buf, (uint32_t)n);
        memcpy(buf + 4, text, n);
        *total = n + 4;
    }
    free(text);
    return buf;
}

json_t *proto_request(const char *method, json_t *params)
{
    return json_pack("{s:i, s:s, s:o}", WIRE_KEY_VERSION, PROTO_VERSION, WIRE_KEY_METHOD, method, WIRE_KEY_PARAMS,
                     params ? params : json_object());
}

json_t *proto_ok(json_t *result)
{
    return json_pack("{s:b, s:o}", WIRE_KEY_OK, 1, WIRE_KEY_RESULT, result ? result : json_object());
}

json_t *proto_error(const char *code, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return json_pack("{s:b, s:{s:s, s:s}}", WIRE_KEY_OK, 0, WIRE_KEY_ERROR, WIRE_KEY_CODE, code, WIRE_KEY_MESSAGE,
                     message);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is ready for events or the deadline passes (errno ETIMEDOUT). */
static int wait_fd(int fd, short events, long long deadline, char *err, size_t errlen)
{
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            snprintf(err, errlen, "timed out");
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, (int)left);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR) {
            int e = errno;
            snprintf(err, errlen, "poll: %s", strerror(e));
            errno = e;
            return -1;
        }
    }
}

int proto_send(int fd, const json_t *object, int timeout_ms, char *err, size_t errlen)
{
    size_t total = 0, done = 0;
    unsigned char *buf = proto_encode(object, &total);
    if (!buf) {
        snprintf(err, errlen, "request larger than %d bytes", PROTO_MAX_FRAME);
        return -1;
    }
    long long deadline = now_ms() + timeout_ms;
    int e = 0;
    while (done < total) {
        if (wait_fd(fd, POLLOUT, deadline, err, errlen) < 0) {
            e = errno;
            break;
        }
        /* A peer that closed must cost an error, never a SIGPIPE that kills the caller (a
         * training job reporting through libcosched). */
        ssize_t n = send(fd, buf + done, total - done, MSG_NOSIGNAL);
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            e = errno;
            snprintf(err, errlen, "write: %s", strerror(e));
            break;
        }
        if (n > 0)
            done += (size_t)n;
    }
    free(buf);
    errno = e;
    return done == total ? 0 : -1;
}

/* A close before the first byte of a reply is ECONNRESET (the request may be sent again); a
 * close inside a frame is EPROTO (the peer answered, the answer was cut). */
static int read_exact(int fd, void *buf, size_t len, int first, long long deadline, char *err, size_t errlen)
{
    size_t got = 0;
    while (got < len) {
        if (wait_fd(fd, POLLIN, deadline, err, errlen) < 0)
            return -1;
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n == 0) {
            snprintf(err, errlen, "connection closed by the daemon%s", first && got == 0 ? "" : " inside a reply");
            errno = first && got == 0 ? ECONNRESET : EPROTO;
            return -1;
        }
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            int e = errno;
            snprintf(err, errlen, "read: %s", strerror(e));
            errno = first && got == 0 ? e : EPROTO;
            return -1;
        }
        if (n > 0)
            got += (size_t)n;
    }
    return 0;
}

json_t *proto_recv(int fd, int timeout_ms, char *err, size_t errlen)
{
    long long deadline = now_ms() + timeout_ms;
    unsigned char header[4];
    if (read_exact(fd, header, 4, 1, deadline, err, errlen) < 0)
        return NULL;
    uint32_t n = proto_get_header(header);
    if (n == 0) {
        snprintf(err, errlen, "bad frame length from the daemon");
        errno = EPROTO;
        return NULL;
    }
    char *payload = malloc(n);
    if (!payload) {
        snprintf(err, errlen, "out of memory");
        errno = ENOMEM;
        return NULL;
    }
    json_t *doc = NULL;
    int e = 0;
    if (read_exact(fd, payload, n, 0, deadline, err, errlen) == 0) {
        doc = proto_parse(payload, n, err, errlen);
        e = doc ? 0 : EPROTO;
    } else {
        e = errno;
    }
    free(payload);
    errno = e;
    return doc;
}
