/* reply: what coschedd's answer to a step report says — the job's step count, or why the
 * report was refused. Apart from the connection so that it can be tested on any bytes. */
#ifndef COSCHED_REPLY_H
#define COSCHED_REPLY_H

#include <stddef.h>

#include <jansson.h>

/* 0 with *steps set; -1 with a message in err naming job (and the socket, when the reply
 * is not one coschedd sends). */
int reply_report_steps(const json_t *reply, const char *job, const char *socket, long long *steps, char *err,
                       size_t errlen);

/* A phase's reply: 0, or -1 with why in err. */
int reply_phase(const json_t *reply, const char *job, const char *socket, char *err, size_t errlen);

#endif
