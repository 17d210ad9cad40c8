/* methods: the request methods of the control socket (see docs/protocol.md). */
#ifndef COSCHED_METHODS_H
#define COSCHED_METHODS_H

#include <sys/types.h>

#include "daemon.h"

#ifndef COSCHED_VERSION_STRING
#define COSCHED_VERSION_STRING "unknown"
#endif

/* Who is asking, from SO_PEERCRED. */
typedef struct peer {
    uid_t uid;
    gid_t gid;
    pid_t pid;
    bool manager; /* root or an operator (config_is_operator): the caller decides, once per
                   * connection (control.c), for the table's rules (access.c) */
} peer_t;

/* Validate the request envelope and run the method; always returns a reply object. */
json_t *methods_dispatch(daemon_t *d, const peer_t *peer, json_t *request);

#endif
