/* output: the few things every command prints the same way — errors, JSON, sizes. */
#include "client.h"

#include <stdarg.h>
#include <stdio.h>

int usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "cosched %s: ", command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'cosched %s --help'.\n", command);
    return EXIT_USAGE;
}

int fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "cosched: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_FAIL;
}

int print_json(json_t *doc)
{
    if (!doc)
        return fail("cannot build the JSON output (out of memory)");
    int rc = json_dumpf(doc, stdout, JSON_INDENT(2));
    json_decref(doc);
    if (rc != 0 || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
        return fail("cannot write to standard output");
    return EXIT_OK;
}

void format_bytes(unsigned long long bytes, char *out, size_t outlen)
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
