/* client: the cosched command line. One file per command; each returns an exit status:
 * 0 ok, 1 the request cannot be met or a file cannot be read, 2 usage. */
#ifndef COSCHED_CLIENT_H
#define COSCHED_CLIENT_H

#include <jansson.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

int cmd_topo(int argc, char **argv);
int cmd_plan(int argc, char **argv);

/* Print a usage error ("cosched plan: ...") and a hint, return EXIT_USAGE. */
int usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "cosched: message" on stderr and return EXIT_FAIL. */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Write a JSON document to stdout, indented, with a final newline; takes the reference. */
int print_json(json_t *doc);

/* "64.0 GiB" */
void format_bytes(unsigned long long bytes, char *out, size_t outlen);

#endif
