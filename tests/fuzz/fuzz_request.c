/* fuzz_request: the control socket's request path — a frame's JSON decoded by proto_parse,
 * then methods_dispatch with each method's parameter validation — on a daemon with a two-GPU
 * topology. An input is lines, each a request: the first byte names who sends it ('r' root,
 * an operator; 'o' uid 4242, who owns what it registers for uid 4242; anything else a
 * stranger, uid 4343), the rest is the frame's payload. Lines act in order on one daemon
 * (register, then report, then release...), which is reset after each input.
 * Properties checked: every reply is {"ok":true,"result":...} or {"ok":false,"error":{"code",
 * "message"}} and fits a frame; a stranger never changes the job registry. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../daemon/daemon_fixture.h"
#include "fuzz.h"
#include "methods.h"
#include "proto.h"

/* No run may start a process here: a fuzzed argv could name any program. run.start goes
 * through all of its checks and its output files, then fails at the fork as on a full
 * process table. (The executable's fork is found before the C library's.) */
pid_t fork(void)
{
    errno = EAGAIN;
    return -1;
}

static daemon_t *d;

static void free_daemon(void)
{
    fixture_daemon_free(d); /* and its state directory */
}

static daemon_t *daemon_under_test(void)
{
    if (!d) {
        if (!getenv("COSCHED_SOURCE_ROOT"))
            setenv("COSCHED_SOURCE_ROOT", COSCHED_SOURCE_ROOT_DEFAULT, 0);
        d = fixture_daemon("ci-2core-gpu.xml");
        atexit(free_daemon);
    }
    return d;
}

static void check_reply(const json_t *reply)
{
    json_t *ok = json_object_get(reply, "ok");
    if (!json_is_boolean(ok))
        fuzz_fail("a reply without a boolean 'ok'");
    if (json_is_false(ok)) {
        json_t *e = json_object_get(reply, "error");
        if (!json_is_string(json_object_get(e, "code")) || !json_is_string(json_object_get(e, "message")))
            fuzz_fail("an error reply without code and message");
    } else if (!json_object_get(reply, "result")) {
        fuzz_fail("a success reply without a result");
    }
    size_t total = 0;
    unsigned char *frame = proto_encode(reply, &total);
    /* metrics and topology replies of this small node fit a frame; anything larger the
     * daemon could not send, and says so, but here none may be */
    if (!frame)
        fuzz_fail("a reply that does not fit one frame");
    free(frame);
}

static char *registry_of(daemon_t *d)
{
    size_t n = 0;
    for (job_t *j = d->jobs; j; j = j->next)
        n += strlen(j->id) + 2;
    char *s = calloc(1, n + 1);
    for (job_t *j = d->jobs; j; j = j->next)
        strcat(strcat(s, j->id), ";");
    return s;
}

static void one_request(daemon_t *d, const uint8_t *line, size_t len)
{
    if (len == 0 || len - 1 > PROTO_MAX_FRAME) /* the daemon refuses such a frame unread */
        return;
    peer_t peer = {.uid = 4343, .gid = 4343, .pid = 0};
    if (line[0] == 'r')
        peer = (peer_t){.uid = 0, .gid = 0, .pid = 0, .manager = true};
    else if (line[0] == 'o')
        peer = (peer_t){.uid = 4242, .gid = 4242, .pid = 0};
    char err[256];
    json_t *request = proto_parse((const char *)line + 1, len - 1, err, sizeof err);
    if (!request)
        return; /* the daemon answers EPROTO and closes: nothing reaches dispatch */
    char *before = peer.uid == 4343 ? registry_of(d) : NULL;
    json_t *reply = methods_dispatch(d, &peer, request);
    check_reply(reply);
    if (getenv("FUZZ_VERBOSE")) { /* to see what a corpus file reaches */
        char *text = json_dumps(reply, JSON_COMPACT);
        fprintf(stderr, "uid %u: %.*s\n  -> %.300s\n", (unsigned)peer.uid, (int)(len - 1), (const char *)line + 1,
                text);
        free(text);
    }
    if (before) {
        char *after = registry_of(d);
        if (strcmp(before, after) != 0)
            fuzz_fail("a stranger changed the registry: '%s' -> '%s'", before, after);
        free(after);
    }
    free(before);
    json_decref(reply);
    json_decref(request);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    daemon_t *d = daemon_under_test();
    for (size_t start = 0; start < size;) {
        const uint8_t *nl = memchr(data + start, '\n', size - start);
        size_t end = nl ? (size_t)(nl - data) : size;
        one_request(d, data + start, end - start);
        start = end + 1;
    }
    state_clear(d);
    return 0;
}
