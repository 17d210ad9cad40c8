/* noise_progress: "progress" lines from the workers' meters. Lines fall due on a fixed grid from
 * the phase start, so a late wake-up does not shift every later line. */
#include "noise_progress.h"

#include <jansson.h>

#include "noise_clock.h"
#include "run_output.h"
#include "stop.h"

void noise_progress_init(struct noise_progress *p, struct noise_ctx *ctx, const struct noise_opts *o, const char *phase,
                         double origin)
{
    *p = (struct noise_progress){.ctx = ctx, .o = o, .phase = phase, .origin = origin, .last = origin};
    if (o->duration > 0 && o->report_every > 0)
        p->due = origin + o->report_every;
}

void noise_progress_poll(struct noise_progress *p, double now)
{
    if (p->due <= 0 || now < p->due)
        return;
    while (p->due <= now)
        p->due += p->o->report_every;
    /* Past the end the phase line, with the totals, is about to be printed. */
    if (now >= p->origin + p->o->duration)
        return;
    uint64_t bytes = 0, ops = 0;
    for (int i = 0; i < p->nmeters; i++) {
        bytes += atomic_load_explicit(&p->meters[i].bytes, memory_order_relaxed);
        ops += atomic_load_explicit(&p->meters[i].ops, memory_order_relaxed);
    }
    double dt = now - p->last;
    json_t *l = json_object();
    json_object_set_new(l, RUNOUT_EVENT, json_string(RUNOUT_EVENT_PROGRESS));
    json_object_set_new(l, RUNOUT_MODE, json_string(noise_mode_name(p->o->mode)));
    json_object_set_new(l, RUNOUT_PHASE, json_string(p->phase));
    if (p->ctx->step >= 0)
        json_object_set_new(l, RUNOUT_STEP, json_integer(p->ctx->step));
    json_object_set_new(l, RUNOUT_ELAPSED, json_real(now - p->origin));
    json_object_set_new(l, RUNOUT_TIME, json_real(noise_wall()));
    /* Reals, as in the phase line, so a reader takes both the same way. */
    json_object_set_new(l, RUNOUT_BYTES, json_real((double)(bytes - p->last_bytes)));
    json_object_set_new(l, RUNOUT_RATE_MBS, json_real(dt > 0 ? (double)(bytes - p->last_bytes) / dt / 1e6 : 0));
    json_object_set_new(l, "ops", json_real((double)(ops - p->last_ops)));
    noise_out_emit(p->ctx->out, l);
    p->last = now;
    p->last_bytes = bytes;
    p->last_ops = ops;
}

void noise_progress_sleep_until(struct noise_progress *p, double end)
{
    for (;;) {
        double now = noise_clock_now(p->clock);
        if (noise_stop_requested() || now >= end)
            return;
        noise_progress_poll(p, now);
        double until = p->due > 0 && p->due < end ? p->due : end;
        noise_clock_sleep(p->clock, until - now);
    }
}
