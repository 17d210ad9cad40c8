/* reply: decoding a report's reply (see reply.h). */
#include "reply.h"

#include <stdio.h>

#include "wire.h"

/* {"ok":false,"error":{"code","message"}} as "CODE: message" */
static void refused(const json_t *reply, const char *what, const char *job, char *err, size_t errlen)
{
    json_t *e = json_object_get(reply, WIRE_KEY_ERROR);
    const char *code = json_string_value(json_object_get(e, WIRE_KEY_CODE));
    const char *message = json_string_value(json_object_get(e, WIRE_KEY_MESSAGE));
    snprintf(err, errlen, "coschedd refused the %s for job %s: %s: %s", what, job, code ? code : "error",
             message ? message : "no reason given");
}

int reply_phase(const json_t *reply, const char *job, const char *socket, char *err, size_t errlen)
{
    if (!json_is_true(json_object_get(reply, WIRE_KEY_OK))) {
        refused(reply, "phase", job, err, errlen);
        return -1;
    }
    if (!json_is_string(json_object_get(json_object_get(reply, WIRE_KEY_RESULT), WIRE_R_PHASE))) {
        snprintf(err, errlen, "coschedd at %s answered a phase without naming it", socket);
        return -1;
    }
    return 0;
}

int reply_report_steps(const json_t *reply, const char *job, const char *socket, long long *steps, char *err,
                       size_t errlen)
{
    json_t *result = json_object_get(reply, WIRE_KEY_RESULT);
    if (!json_is_true(json_object_get(reply, WIRE_KEY_OK))) {
        refused(reply, "report", job, err, errlen);
        return -1;
    }
    if (!json_is_integer(json_object_get(result, WIRE_R_STEPS))) {
        snprintf(err, errlen, "coschedd at %s answered a report without a step count", socket);
        return -1;
    }
    *steps = (long long)json_integer_value(json_object_get(result, WIRE_R_STEPS));
    return 0;
}
