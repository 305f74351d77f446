/* run.c -- the copy in a sandbox: the state loaded, the submissions
 * applied, cycles run and the virtual clock advanced from one due event to
 * the next (victims' grace periods, backoffs, gang timeouts) until every
 * submitted pod is bound, nothing more is due, or the horizon is passed. */
#include "whatif/whatif.h"

#include <string.h>

#include "util/util.h"

static void on_action(void *ud, const sb_action_t *a)
{
    whatif_result_action(ud, a);
}

/* Each submitted pod's decision record, where the copy kept one (a pod
 * still pending): its waitingBehind and the detail of the answer. */
static void attach_records(whatif_result_t *r, sandbox_t *sb, const json_t *subs)
{
    size_t i;
    json_t *s;
    json_array_foreach (subs, i, s) {
        const char *kind = json_string_value(json_object_get(s, "kind"));
        json_t *meta = json_object_get(s, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        if (!kind || strcmp(kind, "Pod") != 0 || !ns || !name)
            continue;
        json_t *rec = scheduler_explain(sandbox_scheduler(sb), "pod", ns, name);
        if (rec)
            whatif_result_explain(r, ns, name, rec);
    }
}

json_t *whatif_run(const json_t *items, const json_t *subs, const whatif_run_opts_t *o, const char *state,
                   const json_t *notes, char *err, size_t errlen)
{
    whatif_result_t *r = whatif_result_new(subs);
    int64_t start = util_wall_ms();
    sandbox_opts_t so = { .sched = o->sched, .seed = o->seed, .start_wall_ms = start, .on_action = on_action, .ud = r };
    char e[512] = "";
    sandbox_t *sb = sandbox_new(&so, e, sizeof e);
    if (!sb) {
        util_errf(err, errlen, "sandbox: %s", e);
        whatif_result_free(r);
        return NULL;
    }
    json_t *doc = json_pack("{s:O}", "items", (json_t *)items);
    int rc = sandbox_load(sb, doc, e, sizeof e);
    json_decref(doc);
    if (rc < 0) {
        util_errf(err, errlen, "loading the state: %s", e);
        goto fail;
    }
    size_t i;
    json_t *s;
    json_array_foreach (subs, i, s) {
        if (sandbox_apply(sb, "ADDED", s, e, sizeof e) < 0) {
            util_errf(err, errlen, "submitting %s: %s", json_string_value(json_object_get(s, "kind")), e);
            goto fail;
        }
    }
    /* the cluster's pending pods and the submissions together: the
     * queues' own order decides who goes first */
    sandbox_run(sb);
    int64_t t0 = sandbox_now(sb), horizon = o->horizon_ms > 0 ? o->horizon_ms : 120000;
    while (!whatif_result_done(r)) {
        int64_t due = sandbox_next_due(sb);
        if (due <= 0 || due > t0 + horizon)
            break;
        sandbox_advance(sb, due > sandbox_now(sb) ? due : sandbox_now(sb) + 1);
    }
    attach_records(r, sb, subs);
    double vs = (double)(sandbox_now(sb) - start) / 1000.0;
    json_t *ans = whatif_result_json(r, state, vs, notes);
    sandbox_free(sb);
    whatif_result_free(r);
    return ans;
fail:
    sandbox_free(sb);
    whatif_result_free(r);
    return NULL;
}
