/* backend.c -- the sandbox (pkg/sandbox) as the simulator's backend. */
#include "simulate/simulate.h"

static int sb_apply(void *ctx, const char *type, json_t *obj, char *err, size_t errlen)
{
    return sandbox_apply(ctx, type, obj, err, errlen);
}

static int sb_run(void *ctx)
{
    return sandbox_run(ctx);
}

static void sb_advance(void *ctx, int64_t wall_ms)
{
    sandbox_advance(ctx, wall_ms);
}

static int64_t sb_next_due(void *ctx)
{
    return sandbox_next_due(ctx);
}

static json_t *sb_get(void *ctx, const char *kind, const char *ns, const char *name)
{
    return sandbox_get(ctx, kind, ns, name);
}

static void sb_each_queue(void *ctx, scheduler_queue_fn fn, void *ud)
{
    scheduler_each_queue(sandbox_scheduler(ctx), fn, ud);
}

void sim_backend_sandbox(sim_backend_t *b, sandbox_t *sb)
{
    b->ctx = sb;
    b->apply = sb_apply;
    b->run = sb_run;
    b->advance = sb_advance;
    b->next_due = sb_next_due;
    b->get = sb_get;
    b->each_queue = sb_each_queue;
}
