/* fuzz_pattern: cosched-noise's YAML patterns through noise_patterns_parse; a pattern that
 * loads is expanded for its first steps (a `repeat: forever` never ends) and each config set
 * is applied to default options, as a run would. Properties: a refusal says why; an expanded
 * step has a known mode and a duration that is a number >= 0. */
#include <math.h>
#include <stdio.h>

#include "expand.h"
#include "fuzz.h"
#include "pattern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct noise_patterns p;
    char err[512] = "";
    if (noise_patterns_parse(&p, (const char *)data, size, "fuzz.yaml", err, sizeof err) != 0) {
        if (!err[0])
            fuzz_fail("a pattern file refused without a message");
        return 0;
    }
    for (size_t i = 0; i < p.npatterns; i++) {
        struct noise_expand e;
        struct noise_step step;
        noise_expand_init(&e, &p.patterns[i].root);
        for (int n = 0; n < 1000 && noise_expand_next(&e, &step); n++)
            if ((int)step.mode < 0 || step.mode >= NOISE_MODE_COUNT || !(step.seconds >= 0) || !isfinite(step.seconds))
                fuzz_fail("pattern %s: step %d has mode %d and %g s", p.patterns[i].name, n, (int)step.mode,
                          step.seconds);
    }
    for (size_t i = 0; i < p.nsets; i++) {
        struct noise_opts o;
        noise_opts_defaults(&o);
        noise_config_apply(&p.sets[i], &o, err, sizeof err);
    }
    noise_patterns_free(&p);
    return 0;
}
