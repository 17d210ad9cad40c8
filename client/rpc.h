/* rpc: one request to coschedd and its reply, with connect and reply deadlines always on, so a
 * Slurm prolog never hangs on a stuck daemon. */
#ifndef COSCHED_RPC_H
#define COSCHED_RPC_H

#include <jansson.h>

typedef struct client_opts {
    const char *socket; /* --socket, $COSCHED_SOCKET, or the default path */
    int json;           /* --json given before the command */
    int timeout_ms;     /* per request, connect included */
} client_opts_t;

/* Send {"v":1,"method":method,"params":params} (params stolen) and wait for the reply.
 * Returns the "result" object (caller owns it) or NULL after printing why, with *rc set:
 * 1 refused by the daemon (its error printed), 3 daemon unreachable (socket path printed). */
json_t *rpc_call(const client_opts_t *o, const char *method, json_t *params, int *rc);

#endif
