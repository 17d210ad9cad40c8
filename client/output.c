/* output: the few things every command prints the same way — errors, JSON, sizes. */
#include "output.h"

#include <stdarg.h>
#include <stdio.h>

#include "wire.h"

/* --json asks for errors in JSON too: one object on stdout, where a script reads the result. */
static int json_errors;

void output_json_errors(int on)
{
    json_errors = on;
}

int output_error(int status, const char *code, const char *context, const char *hint, const char *fmt, ...)
{
    char message[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (json_errors) {
        json_t *e = json_pack("{s:{s:s, s:s}}", WIRE_KEY_ERROR, WIRE_KEY_CODE, code, WIRE_KEY_MESSAGE, message);
        if (e && hint)
            json_object_set_new(json_object_get(e, WIRE_KEY_ERROR), "hint", json_string(hint));
        if (!e || json_dumpf(e, stdout, JSON_INDENT(2)) != 0 || fputc('\n', stdout) == EOF)
            fprintf(stderr, "cosched: %s\n", message);
        fflush(stdout);
        json_decref(e);
        return status;
    }
    fprintf(stderr, "%s: %s\n", context, message);
    if (hint)
        fprintf(stderr, "%s\n", hint);
    return status;
}

int output_usage_error(const char *command, const char *fmt, ...)
{
    char message[4096], context[256], hint[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    snprintf(context, sizeof context, "cosched %s", command);
    snprintf(hint, sizeof hint, "Try 'cosched %s --help'.", command);
    return output_error(EXIT_USAGE, "EUSAGE", context, hint, "%s", message);
}

int output_fail(const char *fmt, ...)
{
    char message[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return output_error(EXIT_FAIL, "EFAIL", "cosched", NULL, "%s", message);
}

int output_print_json(json_t *doc)
{
    if (!doc)
        return output_fail("cannot build the JSON output (out of memory)");
    int rc = json_dumpf(doc, stdout, JSON_INDENT(2));
    json_decref(doc);
    if (rc != 0 || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
        return output_fail("cannot write to standard output");
    return EXIT_OK;
}

void output_format_bytes(unsigned long long bytes, char *out, size_t outlen)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, outlen, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}
