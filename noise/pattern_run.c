/* pattern_run: play a pattern: each step is one run of its mode as noise for `seconds`,
 * with the command line as the base settings and the step's config set on top. */
#include <stdio.h>
#include <string.h>

#include "expand.h"
#include "noise_clock.h"
#include "pattern_run.h"
#include "stop.h"

int noise_pattern_run(const struct noise_patterns *p, const struct noise_pattern *pat, const struct noise_opts *base,
                      struct noise_ctx *ctx, char *err, size_t errlen)
{
    struct noise_expand e;
    struct noise_step step;
    double end = base->duration > 0 ? noise_clock_now(ctx->clock) + base->duration : 0;
    noise_expand_init(&e, &pat->root);
    for (long i = 0; !noise_stop_requested() && noise_expand_next(&e, &step); i++) {
        struct noise_opts o = *base;
        o.mode = step.mode;
        const struct noise_config_set *set = noise_patterns_config(p, step.mode, step.config);
        if (set && noise_config_apply(set, &o, err, errlen) != 0)
            return -1;
        o.duration = step.seconds;
        if (end > 0) {
            /* --duration caps the whole pattern, which matters for `repeat: forever`. */
            double left = end - noise_clock_now(ctx->clock);
            if (left <= 0)
                break;
            if (o.duration > left)
                o.duration = left;
        }
        ctx->step = i;
        ctx->config_name = step.config[0] ? step.config : NULL;
        int rc = noise_run_mode(&o, ctx, err, errlen);
        ctx->config_name = NULL;
        if (rc != 0) {
            noise_stream_release();
            return -1;
        }
    }
    ctx->step = -1;
    noise_stream_release();
    return 0;
}
