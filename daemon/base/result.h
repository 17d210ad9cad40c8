/* result: what a daemon module returns instead of a wire reply — a code and a message naming the
 * problem. Only methods.c turns a result into a protocol error. */
#ifndef COSCHED_RESULT_H
#define COSCHED_RESULT_H

typedef enum {
    RESULT_OK,
    RESULT_INVALID,   /* bad input, or a request that can never be met */
    RESULT_NOT_FOUND, /* no such job or run */
    RESULT_BUSY,      /* it would fit an empty node, not beside what is registered */
    RESULT_FAILED,    /* the daemon could not do it: fork, files, memory */
} result_code_t;

typedef struct result {
    result_code_t code;
    char message[512];
} result_t;

result_t result_ok(void);
result_t result_fail(result_code_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
