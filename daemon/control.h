/* control: the control socket's listener and clients (see control.c for the story). */
#ifndef COSCHED_CONTROL_H
#define COSCHED_CONTROL_H

#include <stdint.h>

#include "daemon.h"

/* Take the socket from systemd (sd_listen_fds) or bind cfg.socket_path (0666: anyone may
 * connect; rights are checked per request from SO_PEERCRED). */
int control_listen(daemon_t *d, char *err, size_t errlen);
void control_stop_listening(daemon_t *d);
void control_accept(daemon_t *d);
void control_client_event(daemon_t *d, unsigned id, uint32_t events);
/* Close clients past their deadline; answer requests held for their user's rate, as at
 * control_rate_timer. */
void control_tick(daemon_t *d);
/* d->client_rate_fd fired: a user whose request waits has a token again. */
void control_rate_timer(daemon_t *d);
void control_close_all(daemon_t *d);

#endif
