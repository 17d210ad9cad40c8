/* reply: decoding a report's reply (see reply.h). */
#include "reply.h"

#include <stdio.h>

int reply_report_steps(const json_t *reply, const char *job, const char *socket, long long *steps, char *err,
                       size_t errlen)
{
    json_t *result = json_object_get(reply, "result");
    if (!json_is_true(json_object_get(reply, "ok"))) {
        /* {"ok":false,"error":{"code","message"}} as "CODE: message" */
        json_t *e = json_object_get(reply, "error");
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *message = json_string_value(json_object_get(e, "message"));
        snprintf(err, errlen, "coschedd refused the report for job %s: %s: %s", job, code ? code : "error",
                 message ? message : "no reason given");
        return -1;
    }
    if (!json_is_integer(json_object_get(result, "steps"))) {
        snprintf(err, errlen, "coschedd at %s answered a report without a step count", socket);
        return -1;
    }
    *steps = (long long)json_integer_value(json_object_get(result, "steps"));
    return 0;
}
