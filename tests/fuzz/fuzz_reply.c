/* fuzz_reply: the job-side client's side of a report — the bytes coschedd sends back, read by
 * proto_recv from a socket (4-byte length, then JSON) and decoded by reply_report_steps, as
 * libcosched does in the training loop. Properties: bytes that are no reply give NULL with
 * a reason, never a wait; a decoded reply gives a step count or a message. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "proto.h"
#include "reply.h"

/* A socket's buffer holds this much without a reader; larger inputs are cut. */
#define MAX_INPUT 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return 0;
    int bufsize = 4 * MAX_INPUT;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof bufsize);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof bufsize);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    size_t n = size < MAX_INPUT ? size : MAX_INPUT, sent = 0;
    while (sent < n) {
        ssize_t w = write(sv[0], data + sent, n - sent);
        if (w <= 0)
            break; /* the buffer is full: the rest is cut, as if the daemon stopped there */
        sent += (size_t)w;
    }
    shutdown(sv[0], SHUT_WR); /* the daemon closes after what it sent: EOF, never a hang */
    char err[512] = "";
    /* the timeout is a safety net: with the writer shut, a read never waits for it */
    json_t *reply = proto_recv(sv[1], 5000, err, sizeof err);
    if (!reply) {
        if (!err[0])
            fuzz_fail("proto_recv gave no reply and no reason");
        if (errno == ETIMEDOUT)
            fuzz_fail("proto_recv waited on a closed stream: %s", err);
    } else {
        long long steps = -1;
        err[0] = '\0';
        if (reply_report_steps(reply, "fuzz-job", "/run/fuzz.sock", &steps, err, sizeof err) != 0 && !err[0])
            fuzz_fail("a report reply refused without a message");
        json_decref(reply);
    }
    close(sv[0]);
    close(sv[1]);
    return 0;
}
