/* cosched: libcosched's public calls — find the socket and the job, report steps over the one
 * connection (conn.c), keep the last error for the caller to read. Never prints. */
#include "cosched.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "lib_clock.h"
#include "proto.h"
#include "reply.h"
#include "wire.h"

enum { DEFAULT_TIMEOUT_MS = 1000, MAX_TIMEOUT_MS = 60000 };

struct cosched {
    conn_t conn;
    char *job;         /* NULL: none given or found */
    char broken[256];  /* why no report can ever succeed (no job, a bad path); "" normally */
    double step_start; /* clock_now() at cosched_step_begin; < 0: none begun */
    long long steps;   /* the daemon's count in its last reply */
    char error[512];
};

/* What cosched_error says for the NULL handle cosched_open returns without memory. */
static const char no_handle[] = "no libcosched handle (cosched_open ran out of memory)";

static void set_error(cosched_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(cosched_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
}

/* An empty variable counts as unset: `COSCHED_JOB= cmd` must not name the job "". */
static const char *first_set(const char *a, const char *b, const char *c)
{
    if (a && *a)
        return a;
    if (b && *b)
        return b;
    return c && *c ? c : NULL;
}

cosched_t *cosched_open(const char *socket, const char *job)
{
    cosched_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->step_start = -1;
    c->steps = -1;
    const char *path = first_set(socket, getenv(WIRE_ENV_SOCKET), PROTO_DEFAULT_SOCKET);
    const char *id = first_set(job, getenv(WIRE_ENV_JOB), getenv(WIRE_ENV_SLURM_JOB));
    if (id && !(c->job = strdup(id))) {
        free(c);
        return NULL;
    }
    if (conn_init(&c->conn, path, DEFAULT_TIMEOUT_MS, c->broken, sizeof c->broken) < 0 || !c->job) {
        if (!c->job)
            snprintf(c->broken, sizeof c->broken, "no job to report for: pass one, or set %s or %s", WIRE_ENV_JOB,
                     WIRE_ENV_SLURM_JOB);
        set_error(c, "%s", c->broken);
        return c;
    }
    /* Connect now, so that a wrong socket shows in cosched_error before the first step; the
     * handle is returned either way and reports start to work once the daemon answers. */
    conn_open(&c->conn, c->error, sizeof c->error);
    return c;
}

/* One request for the handle's job (params is taken); the reply, or NULL with the reason set. */
static json_t *call(cosched_t *c, const char *method, json_t *params)
{
    if (c->broken[0]) {
        json_decref(params);
        set_error(c, "%s", c->broken);
        return NULL;
    }
    json_t *request = proto_request(method, params);
    if (!request) {
        set_error(c, "out of memory");
        return NULL;
    }
    json_t *reply = conn_call(&c->conn, request, c->error, sizeof c->error);
    json_decref(request);
    return reply;
}

int cosched_report_step(cosched_t *c, double seconds)
{
    if (!c)
        return -1;
    if (!(seconds > 0) || !isfinite(seconds)) {
        set_error(c, "a step time must be a positive number of seconds, not %g", seconds);
        return -1;
    }
    json_t *reply = call(c, WIRE_REPORT, json_pack("{s:s, s:f}", WIRE_P_JOB, c->job, WIRE_P_STEP_TIME, seconds));
    if (!reply)
        return -1;
    long long steps;
    int rc = reply_report_steps(reply, c->job, c->conn.path, &steps, c->error, sizeof c->error);
    json_decref(reply);
    if (rc == 0) {
        c->steps = steps;
        c->error[0] = '\0';
    }
    return rc;
}

int cosched_phase(cosched_t *c, const char *phase)
{
    if (!c)
        return -1;
    if (!phase || !*phase) {
        set_error(c, "a phase needs a name (train, eval, checkpoint)");
        return -1;
    }
    json_t *reply = call(c, WIRE_PHASE, json_pack("{s:s, s:s}", WIRE_P_JOB, c->job, WIRE_P_PHASE, phase));
    if (!reply)
        return -1;
    int rc = reply_phase(reply, c->job, c->conn.path, c->error, sizeof c->error);
    json_decref(reply);
    if (rc == 0)
        c->error[0] = '\0';
    return rc;
}

void cosched_step_begin(cosched_t *c)
{
    if (c)
        c->step_start = clock_now();
}

int cosched_step_end(cosched_t *c)
{
    if (!c)
        return -1;
    if (c->step_start < 0) {
        set_error(c, "cosched_step_end without a cosched_step_begin before it");
        return -1;
    }
    double seconds = clock_now() - c->step_start;
    c->step_start = -1;
    return cosched_report_step(c, seconds);
}

long long cosched_steps(const cosched_t *c)
{
    return c ? c->steps : -1;
}

int cosched_set_timeout(cosched_t *c, int milliseconds)
{
    if (!c)
        return -1;
    if (milliseconds < 1 || milliseconds > MAX_TIMEOUT_MS) {
        set_error(c, "a timeout must be 1 to %d ms, not %d", MAX_TIMEOUT_MS, milliseconds);
        return -1;
    }
    c->conn.timeout_ms = milliseconds;
    return 0;
}

const char *cosched_error(const cosched_t *c)
{
    return c ? c->error : no_handle;
}

void cosched_close(cosched_t *c)
{
    if (!c)
        return;
    conn_close(&c->conn);
    free(c->job);
    free(c);
}
