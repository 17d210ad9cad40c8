/* spin: the `busy` mode (every thread spins on arithmetic, paced by --intensity) and the
 * `idle` mode (sleeps), the two fillers that patterns put between real noise. */
#include <stdatomic.h>
#include <stdio.h>

#include "noise_clock.h"
#include "noise_progress.h"
#include "phase_line.h"
#include "run.h"
#include "stop.h"
#include "team.h"

struct spin_job {
    struct noise_duty duty;
    double deadline;
    atomic_long ops;
};

static void spin_member(struct noise_member *m)
{
    struct spin_job *j = m->arg;
    long ops = 0;
    double x = 1.0 + m->index;
    while (!noise_stop_requested()) {
        noise_duty_pace(&j->duty);
        if (noise_stop_requested() || noise_clock_now(j->duty.clock) >= j->deadline)
            break;
        /* About 20 microseconds of dependent arithmetic per unit: fine-grained enough for the
         * duty cycle, and the empty asm keeps the compiler from folding the loop away. */
        for (int i = 0; i < 4096; i++) {
            x = x * 1.000000001 + 1e-9;
            __asm__ volatile("" : "+x"(x));
        }
        ops++;
        noise_meter_add(m->meter, 0, 1);
        if ((ops & 1023) == 0)
            noise_member_note_cpu(m);
    }
    atomic_fetch_add(&j->ops, ops);
}

int noise_spin_run(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen)
{
    if (o->duration <= 0) {
        snprintf(err, errlen, "%s needs --duration SECONDS (it measures nothing)", noise_mode_name(o->mode));
        return -1;
    }
    const struct noise_clock *clock = ctx->clock;
    double start_wall = noise_wall(), t0 = noise_clock_now(clock), cpu0 = noise_cpu_seconds();
    struct spin_job j = {.duty = {.intensity = o->intensity, .period = o->period, .origin = t0, .clock = clock},
                         .deadline = t0 + o->duration};
    struct noise_team_time time = {0, 0};
    struct noise_progress progress;
    noise_progress_init(&progress, ctx, o, "noise", t0);
    progress.clock = clock;
    if (o->mode == NOISE_MODE_IDLE) {
        noise_place_note_self(ctx->place);
        noise_progress_sleep_until(&progress, j.deadline);
    } else if (noise_team_run(ctx->place, o->threads, spin_member, &j, &time, &progress, err, errlen) != 0) {
        return -1;
    }
    noise_emit_phase(ctx, o, "noise", start_wall, noise_clock_now(clock) - t0, 0, (double)j.ops,
                     noise_cpu_seconds() - cpu0, noise_team_time_json(&time));
    return 0;
}
