/* result.c -- the sandbox's actions on the submitted pods gathered into
 * the answer: placements, victims, what it borrowed, why a pod waits. */
#include "whatif/whatif.h"

#include <stdlib.h>
#include <string.h>

#include "gang/gang.h"
#include "util/util.h"

typedef struct sub_pod {
    const char *ns, *name, *uid;
    char *key;  /* ns/name */
    char *gang; /* ns/podgroup, or NULL */
    char *node; /* bound there, or NULL */
    char *lender;
    char *reason, *message; /* the last FailedScheduling */
    char *nominated;
    json_t *record; /* scheduler_explain's, or NULL */
} sub_pod_t;

typedef struct sub_group {
    char *key;
    int64_t min_member;
} sub_group_t;

struct whatif_result {
    sub_pod_t *pods;
    int npods;
    sub_group_t *groups;
    int ngroups;
    json_t *victims;
    int others_bound; /* pods of the cluster placed during the run */
};

static const char *group_of(const json_t *meta)
{
    static const char *const keys[] = { GANG_LABEL, "pod-group.scheduling.sigs.k8s.io",
                                        "scheduling.k8s.io/group-name" };
    for (int m = 0; m < 2; m++) {
        json_t *map = json_object_get(meta, m ? "annotations" : "labels");
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const char *v = json_string_value(json_object_get(map, keys[k]));
            if (v && *v)
                return v;
        }
    }
    return NULL;
}

whatif_result_t *whatif_result_new(const json_t *subs)
{
    whatif_result_t *r = util_xcalloc(1, sizeof *r);
    size_t n = json_array_size(subs), i;
    r->pods = util_xcalloc(n + 1, sizeof *r->pods);
    r->groups = util_xcalloc(n + 1, sizeof *r->groups);
    r->victims = json_array();
    json_t *o;
    json_array_foreach (subs, i, o) {
        json_t *meta = json_object_get(o, "metadata");
        const char *kind = json_string_value(json_object_get(o, "kind"));
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        if (!kind || !ns || !name)
            continue;
        sbuf_t key = { 0 };
        sbuf_printf(&key, "%s/%s", ns, name);
        if (!strcmp(kind, "PodGroup")) {
            sub_group_t *g = &r->groups[r->ngroups++];
            g->key = key.data;
            json_t *mm = json_object_get(json_object_get(o, "spec"), "minMember");
            g->min_member = json_is_integer(mm) ? json_integer_value(mm) : 1;
            continue;
        }
        sub_pod_t *p = &r->pods[r->npods++];
        p->ns = ns;
        p->name = name;
        p->uid = json_string_value(json_object_get(meta, "uid"));
        p->key = key.data;
        const char *g = group_of(meta);
        if (g) {
            sbuf_t gk = { 0 };
            sbuf_printf(&gk, "%s/%s", ns, g);
            p->gang = gk.data;
        }
    }
    return r;
}

void whatif_result_free(whatif_result_t *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->npods; i++) {
        sub_pod_t *p = &r->pods[i];
        free(p->key);
        free(p->gang);
        free(p->node);
        free(p->lender);
        free(p->reason);
        free(p->message);
        free(p->nominated);
        json_decref(p->record);
    }
    for (int i = 0; i < r->ngroups; i++)
        free(r->groups[i].key);
    free(r->pods);
    free(r->groups);
    json_decref(r->victims);
    free(r);
}

static sub_pod_t *find(whatif_result_t *r, const char *ns, const char *name, const char *uid)
{
    for (int i = 0; i < r->npods; i++) {
        sub_pod_t *p = &r->pods[i];
        if (uid && p->uid && !strcmp(uid, p->uid))
            return p;
        if (ns && name && !strcmp(ns, p->ns) && !strcmp(name, p->name))
            return p;
    }
    return NULL;
}

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = v ? util_strdup(v) : NULL;
}

static int is_ours(whatif_result_t *r, const char *key)
{
    for (int i = 0; key && i < r->npods; i++)
        if (!strcmp(r->pods[i].key, key))
            return 1;
    return 0;
}

void whatif_result_action(whatif_result_t *r, const sb_action_t *a)
{
    sub_pod_t *p = find(r, a->ns, a->name, a->uid);
    switch (a->kind) {
    case SB_BIND:
        if (!p) {
            r->others_bound++;
            break;
        }
        set_str(&p->node, a->node);
        set_str(&p->lender, a->lender);
        break;
    case SB_UNSCHEDULABLE:
        if (p) {
            set_str(&p->reason, a->reason);
            set_str(&p->message, a->message);
        }
        break;
    case SB_NOMINATE:
        if (p)
            set_str(&p->nominated, a->node);
        break;
    case SB_EVICT: {
        /* the submissions' victims; one evicted by another pending pod of
         * the cluster is that pod's doing, not the answer's */
        if (a->by && !is_ours(r, a->by))
            break;
        sbuf_t key = { 0 };
        sbuf_printf(&key, "%s/%s", a->ns ? a->ns : "", a->name ? a->name : "");
        json_array_append_new(r->victims, json_pack("{s:s, s:s?, s:s?, s:s?}", "pod", key.data, "node", a->node, "why",
                                                    a->reason ? a->reason : "preemption", "by", a->by));
        sbuf_free(&key);
        break;
    }
    default: break;
    }
}

static int gang_bound(const whatif_result_t *r, const char *gang)
{
    int n = 0;
    for (int i = 0; i < r->npods; i++)
        n += r->pods[i].gang && !strcmp(r->pods[i].gang, gang) && r->pods[i].node;
    return n;
}

static const sub_group_t *group(const whatif_result_t *r, const char *key)
{
    for (int i = 0; key && i < r->ngroups; i++)
        if (!strcmp(r->groups[i].key, key))
            return &r->groups[i];
    return NULL;
}

int whatif_result_done(const whatif_result_t *r)
{
    for (int i = 0; i < r->npods; i++)
        if (!r->pods[i].node)
            return 0;
    return 1;
}

void whatif_result_explain(whatif_result_t *r, const char *ns, const char *name, json_t *record)
{
    sub_pod_t *p = find(r, ns, name, NULL);
    if (!p) {
        json_decref(record);
        return;
    }
    json_decref(p->record);
    p->record = record;
}

static int fits(const whatif_result_t *r)
{
    for (int i = 0; i < r->ngroups; i++)
        if (gang_bound(r, r->groups[i].key) < r->groups[i].min_member)
            return 0;
    for (int i = 0; i < r->npods; i++)
        if (!r->pods[i].node && !group(r, r->pods[i].gang))
            return 0;
    return 1;
}

/* The gang a pod waits behind: the decision record's word, else the
 * gang turn's message ("waiting behind pod group NS/NAME, which ..."). */
static char *waiting_behind(const sub_pod_t *p)
{
    json_t *g = json_object_get(p->record, "gang");
    const char *w = json_string_value(json_object_get(g, "waitingBehind"));
    if (!w)
        w = json_string_value(json_object_get(p->record, "waitingBehind"));
    if (w && *w)
        return util_strdup(w);
    static const char mark[] = "waiting behind pod group ";
    const char *m = p->message ? strstr(p->message, mark) : NULL;
    if (!m)
        return NULL;
    m += sizeof mark - 1;
    size_t n = strcspn(m, ", ;");
    return n ? util_strndup(m, n) : NULL;
}

json_t *whatif_result_json(const whatif_result_t *r, const char *state, double virtual_s, const json_t *notes)
{
    json_t *placements = json_array(), *pending = json_array(), *borrowed = json_array();
    const char *reason = NULL;
    char *behind = NULL;
    for (int i = 0; i < r->npods; i++) {
        const sub_pod_t *p = &r->pods[i];
        if (p->node) {
            json_array_append_new(
                placements, json_pack("{s:s, s:s, s:s?}", "pod", p->key, "node", p->node, "borrowedFrom", p->lender));
            int seen = 0;
            size_t k;
            json_t *b;
            json_array_foreach (borrowed, k, b)
                seen |= p->lender && !strcmp(json_string_value(b), p->lender);
            if (p->lender && !seen)
                json_array_append_new(borrowed, json_string(p->lender));
            continue;
        }
        json_t *pe = json_pack("{s:s, s:s?, s:s?, s:s?}", "pod", p->key, "reason", p->reason, "message", p->message,
                               "nominatedNode", p->nominated);
        if (p->record)
            json_object_set(pe, "decision", p->record);
        json_array_append_new(pending, pe);
        if (!reason)
            reason = p->message ? p->message : p->nominated ? "waiting for the victims to leave" : "not tried yet";
        if (!behind)
            behind = waiting_behind(p);
    }
    int ok = fits(r);
    json_t *nt = notes ? json_deep_copy(notes) : json_array();
    json_t *ans = json_pack("{s:s, s:b, s:o, s:o, s:O, s:o, s:s?, s:s?, s:f, s:i, s:O}", "state", state, "fits", ok,
                            "placements", placements, "pending", pending, "victims", r->victims, "borrowedFrom",
                            borrowed, "waitingBehind", ok ? NULL : behind, "reason", ok ? NULL : reason,
                            "virtualSeconds", virtual_s, "otherPodsPlaced", r->others_bound, "notes", nt);
    json_decref(nt);
    free(behind);
    return ans;
}

int whatif_print_text(FILE *out, const json_t *a)
{
    static const char *const state_words[][2] = {
        { "leader", "the leader's cache (a LIST with its assumed pods and nominations)" },
        { "list", "a LIST of the API server (the leader was not asked or not reachable)" },
        { "snapshot", "a snapshot file" },
    };
    const char *state = json_string_value(json_object_get(a, "state"));
    const char *sw = state;
    for (size_t i = 0; state && i < sizeof state_words / sizeof state_words[0]; i++)
        if (!strcmp(state, state_words[i][0]))
            sw = state_words[i][1];
    fprintf(out, "State:       %s\n", sw ? sw : "?");
    fprintf(out, "Fits:        %s\n", json_is_true(json_object_get(a, "fits")) ? "yes" : "no");
    size_t i;
    json_t *x;
    json_t *pl = json_object_get(a, "placements");
    if (json_array_size(pl))
        fprintf(out, "Placements:\n");
    json_array_foreach (pl, i, x) {
        const char *lender = json_string_value(json_object_get(x, "borrowedFrom"));
        fprintf(out, "  %s -> %s", json_string_value(json_object_get(x, "pod")),
                json_string_value(json_object_get(x, "node")));
        if (lender)
            fprintf(out, " (borrowed from pool %s)", lender);
        fputc('\n', out);
    }
    json_t *pe = json_object_get(a, "pending");
    if (json_array_size(pe))
        fprintf(out, "Not placed:\n");
    json_array_foreach (pe, i, x) {
        const char *msg = json_string_value(json_object_get(x, "message"));
        fprintf(out, "  %s: %s\n", json_string_value(json_object_get(x, "pod")), msg ? msg : "(no attempt recorded)");
    }
    json_t *v = json_object_get(a, "victims");
    if (json_array_size(v))
        fprintf(out, "Victims:\n");
    json_array_foreach (v, i, x) {
        const char *by = json_string_value(json_object_get(x, "by"));
        fprintf(out, "  %s on %s: %s", json_string_value(json_object_get(x, "pod")),
                json_string_value(json_object_get(x, "node")) ? json_string_value(json_object_get(x, "node")) : "?",
                json_string_value(json_object_get(x, "why")));
        if (by)
            fprintf(out, " (for %s)", by);
        fputc('\n', out);
    }
    const char *wb = json_string_value(json_object_get(a, "waitingBehind"));
    if (wb)
        fprintf(out, "Waits behind: %s\n", wb);
    const char *reason = json_string_value(json_object_get(a, "reason"));
    if (reason)
        fprintf(out, "Reason:      %s\n", reason);
    json_array_foreach (json_object_get(a, "notes"), i, x)
        fprintf(out, "Note:        %s\n", json_string_value(x));
    return ferror(out) ? -1 : 0;
}
