/* output: the few things every command prints the same way (output.c): errors, JSON, sizes. */
#ifndef COSCHED_OUTPUT_H
#define COSCHED_OUTPUT_H

#include <jansson.h>
#include <stddef.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_UNREACHABLE = 3 };

/* From now on errors are printed as {"error":{"code","message"[,"hint"]}} on stdout (--json). */
void output_json_errors(int on);

/* Print an error — "CONTEXT: message" and the hint on stderr, or the JSON object — and return
 * status. code: the daemon's (EINVAL, EPERM ...) or EUSAGE, EFAIL, EUNREACHABLE. */
int output_error(int status, const char *code, const char *context, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Print a usage error ("cosched plan: ...") and a hint, return EXIT_USAGE. */
int output_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "cosched: message" on stderr and return EXIT_FAIL. */
int output_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Write a JSON document to stdout, indented, with a final newline; takes the reference. */
int output_print_json(json_t *doc);

/* "64.0 GiB" */
void output_format_bytes(unsigned long long bytes, char *out, size_t outlen);

#endif
