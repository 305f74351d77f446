/* sandbox_pending.c -- TEMPORARY: stands in for pkg/sandbox until the
 * i24-sandbox branch is merged (then this file is deleted). Every call
 * fails, so `whatif` says the sandbox is missing rather than answering. */
#include "sandbox/sandbox.h"

#include "util/util.h"

sandbox_t *sandbox_new(const sandbox_opts_t *o, char *err, size_t errlen)
{
    (void)o;
    util_errf(err, errlen, "not built in yet (pkg/sandbox is pending)");
    return NULL;
}
void sandbox_free(sandbox_t *sb)
{
    (void)sb;
}
int sandbox_apply(sandbox_t *sb, const char *type, json_t *obj, char *err, size_t errlen)
{
    (void)sb, (void)type, (void)obj;
    return util_errf(err, errlen, "no sandbox");
}
int sandbox_load(sandbox_t *sb, json_t *snapshot, char *err, size_t errlen)
{
    (void)sb, (void)snapshot;
    return util_errf(err, errlen, "no sandbox");
}
int sandbox_run(sandbox_t *sb)
{
    (void)sb;
    return 0;
}
void sandbox_advance(sandbox_t *sb, int64_t wall_ms)
{
    (void)sb, (void)wall_ms;
}
int64_t sandbox_now(const sandbox_t *sb)
{
    (void)sb;
    return 0;
}
int64_t sandbox_next_due(sandbox_t *sb)
{
    (void)sb;
    return 0;
}
