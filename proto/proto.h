/* proto: the one wire format shared by coschedd and cosched — length-prefixed JSON frames over
 * a Unix stream socket. Documented in docs/protocol.md; keep the two in step. */
#ifndef COSCHED_PROTO_H
#define COSCHED_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define PROTO_VERSION 1
#define PROTO_MAX_FRAME 65536 /* bytes of JSON in one frame; checked before allocating */
#define PROTO_MAX_DEPTH 16    /* nesting deeper than this is refused (no request needs it) */
#define PROTO_DEFAULT_SOCKET "/run/coschedd/coschedd.sock"

/* Error codes carried in {"ok":false,"error":{"code":...}}. */
#define PROTO_EPERM "EPERM"
#define PROTO_EINVAL "EINVAL"
#define PROTO_ENOENT "ENOENT"
#define PROTO_EBUSY "EBUSY"
#define PROTO_ENOSPC "ENOSPC"
#define PROTO_EPROTO "EPROTO"
#define PROTO_EIO "EIO"

/* Encode the 4-byte big-endian length header of a payload. */
void proto_put_header(unsigned char header[4], uint32_t length);

/* Decode a header; returns the length, or 0 when it is outside 1..PROTO_MAX_FRAME. */
uint32_t proto_get_header(const unsigned char header[4]);

/* Parse one frame's payload as a JSON object: duplicate keys rejected, nesting bounded.
 * Returns NULL with a reason in err for anything else. */
json_t *proto_parse(const char *payload, size_t length, char *err, size_t errlen);

/* Serialize an object compactly into a new buffer with its header in front (4 + n bytes);
 * returns NULL when it would exceed PROTO_MAX_FRAME. */
unsigned char *proto_encode(const json_t *object, size_t *total);

/* {"v":1,"method":method,"params":params} (params reference stolen; NULL means {}). */
json_t *proto_request(const char *method, json_t *params);

/* {"ok":true,"result":result} (reference stolen). */
json_t *proto_ok(json_t *result);

/* {"ok":false,"error":{"code":code,"message":message}} */
json_t *proto_error(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Blocking helpers for the client: write a whole frame / read one frame, each within
 * timeout_ms in total. Return 0 on success, -1 with a reason in err and errno saying which
 * kind: ETIMEDOUT (the deadline passed), ECONNRESET or EPIPE (the peer closed before
 * answering: the request may be sent again on a new connection), EPROTO (a reply that was
 * cut or is not a frame). proto_send never raises SIGPIPE. */
int proto_send(int fd, const json_t *object, int timeout_ms, char *err, size_t errlen);
json_t *proto_recv(int fd, int timeout_ms, char *err, size_t errlen);

#endif
