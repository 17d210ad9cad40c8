/* redact: a deny-list of keys and a rule for values. The keys are those that name a person or
 * what they run; the rule catches what no key list can promise to cover: a message or a field
 * that quotes a path (a cgroup, an output file, a working directory). */
#include "redact.h"

#include <stdbool.h>
#include <string.h>

#include "wire.h"

static const char *const private_keys[] = {
    WIRE_R_UID, WIRE_R_ARGV, WIRE_R_ENV, WIRE_R_STDOUT, WIRE_R_PID, WIRE_R_CGROUP, WIRE_R_WARNINGS,
};

static bool private_key(const char *key)
{
    for (size_t i = 0; i < sizeof private_keys / sizeof private_keys[0]; i++)
        if (strcmp(key, private_keys[i]) == 0)
            return true;
    return false;
}

void redact_private(json_t *o)
{
    if (json_is_array(o)) {
        size_t i;
        json_t *v;
        json_array_foreach(o, i, v) {
            if (json_is_string(v) && strchr(json_string_value(v), '/'))
                json_array_set_new(o, i, json_string("(private)"));
            else
                redact_private(v);
        }
        return;
    }
    if (!json_is_object(o))
        return;
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, key, v) {
        if (private_key(key))
            json_object_del(o, key);
        else if (json_is_string(v) && strchr(json_string_value(v), '/'))
            json_object_set_new(o, key, json_string("(private)"));
        else
            redact_private(v);
    }
}

static bool listed(const char *s, const char *const *ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, ids[i]) == 0)
            return true;
    return false;
}

void redact_ids(json_t *o, const char *const *ids, size_t n)
{
    size_t i;
    const char *key;
    json_t *v;
    if (json_is_array(o)) {
        json_array_foreach(o, i, v) {
            if (json_is_string(v) && listed(json_string_value(v), ids, n))
                json_array_set_new(o, i, json_string("(private)"));
            else
                redact_ids(v, ids, n);
        }
    } else if (json_is_object(o)) {
        json_object_foreach(o, key, v) {
            if (json_is_string(v) && listed(json_string_value(v), ids, n))
                json_object_set_new(o, key, json_string("(private)"));
            else
                redact_ids(v, ids, n);
        }
    }
}
