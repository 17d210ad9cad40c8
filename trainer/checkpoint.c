/* checkpoint: one header and three blocks (parameters, momentum, state) with a hash over all,
 * so a torn or foreign file is refused instead of silently resumed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "report.h"

#define MAGIC "CSTRAIN1"

typedef struct {
    char magic[8];
    char model[32];
    uint64_t nparams, nstate;
    int64_t step;
    int32_t ranks, batch;
    uint64_t seed;
    int32_t classes, C, H, W, batchnorm, pad;
} header;

static unsigned long long payload_hash(const header *h, const train_net *n)
{
    size_t np = n->m->nparams * sizeof(float), ns = n->m->nstate * sizeof(float);
    return train_hash(h, sizeof(*h)) ^ (train_hash(n->params, np) * 3) ^ (train_hash(n->momentum, np) * 5) ^
           (train_hash(n->state, ns) * 7);
}

static void fill(header *h, const train_net *n)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, MAGIC, 8);
    snprintf(h->model, sizeof(h->model), "%s", n->m->name);
    h->nparams = n->m->nparams, h->nstate = n->m->nstate;
    h->classes = n->m->classes, h->C = n->m->C, h->H = n->m->H, h->W = n->m->W;
    h->batchnorm = n->m->batchnorm;
}

int train_checkpoint_write(const char *path, const train_net *n, const train_ckpt_meta *meta, char *err, size_t errlen)
{
    char tmp[4096];
    header h;
    fill(&h, n);
    h.step = meta->step, h.ranks = meta->ranks, h.batch = meta->batch, h.seed = meta->seed;
    unsigned long long sum = payload_hash(&h, n);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot write checkpoint %s: %s", tmp, strerror(errno));
        return -1;
    }
    size_t np = n->m->nparams, ns = n->m->nstate;
    int ok = fwrite(&h, sizeof(h), 1, f) == 1 && fwrite(n->params, 4, np, f) == np &&
             fwrite(n->momentum, 4, np, f) == np && fwrite(n->state, 4, ns, f) == ns &&
             fwrite(&sum, sizeof(sum), 1, f) == 1 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    /* rename only a complete file: a crash leaves the previous checkpoint intact */
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write checkpoint %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int train_checkpoint_read(const char *path, train_net *n, train_ckpt_meta *meta, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open checkpoint %s: %s", path, strerror(errno));
        return -1;
    }
    header h, want;
    unsigned long long sum = 0;
    size_t np = n->m->nparams, ns = n->m->nstate;
    int rc = -1;
    if (fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a cosched-train checkpoint", path);
        goto out;
    }
    fill(&want, n);
    if (strncmp(h.model, want.model, sizeof(h.model)) != 0 || h.nparams != want.nparams || h.nstate != want.nstate ||
        h.classes != want.classes || h.C != want.C || h.H != want.H || h.W != want.W || h.batchnorm != want.batchnorm) {
        snprintf(err, errlen,
                 "%s: checkpoint of %.32s (%d classes, %dx%dx%d), not of this "
                 "%s run (%d classes, %dx%dx%d)",
                 path, h.model, h.classes, h.C, h.H, h.W, want.model, want.classes, want.C, want.H, want.W);
        goto out;
    }
    if (fread(n->params, 4, np, f) != np || fread(n->momentum, 4, np, f) != np || fread(n->state, 4, ns, f) != ns ||
        fread(&sum, sizeof(sum), 1, f) != 1) {
        snprintf(err, errlen, "%s: truncated checkpoint", path);
        goto out;
    }
    if (sum != payload_hash(&h, n)) {
        snprintf(err, errlen, "%s: corrupt checkpoint (hash mismatch)", path);
        goto out;
    }
    meta->step = h.step, meta->ranks = h.ranks, meta->batch = h.batch, meta->seed = h.seed;
    rc = 0;
out:
    fclose(f);
    return rc;
}
