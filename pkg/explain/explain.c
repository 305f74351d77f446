/* explain.c -- decision records: the bounded store and the hint. */
#include "explain/explain.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"
#include "util/lockorder.h"
#include "util/util.h"

/* One record, on a list in write order (head: the oldest). */
typedef struct entry {
    char *key;
    json_t *rec;
    struct entry *prev, *next;
} entry_t;

struct explain_store {
    pthread_mutex_t mu;
    hashmap_t *by_key; /* kind/ns/name -> entry_t */
    entry_t *head, *tail;
    int n, cap;
};

explain_store_t *explain_store_new(int cap)
{
    explain_store_t *st = util_xcalloc(1, sizeof(*st));
    pthread_mutex_init(&st->mu, NULL);
    st->by_key = hashmap_new(64);
    st->cap = cap > 0 ? cap : EXPLAIN_DEFAULT_CAP;
    return st;
}

static void entry_free(entry_t *e)
{
    json_decref(e->rec);
    free(e->key);
    free(e);
}

void explain_store_free(explain_store_t *st)
{
    if (!st)
        return;
    for (entry_t *e = st->head, *next; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    hashmap_free(st->by_key);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

static char *key_of(const char *kind, const char *ns, const char *name)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s/%s/%s", kind ? kind : "", ns ? ns : "", name ? name : "");
    return b.data;
}

static void unlink_entry(explain_store_t *st, entry_t *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        st->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        st->tail = e->prev;
    e->prev = e->next = NULL;
}

static void append_entry(explain_store_t *st, entry_t *e)
{
    e->prev = st->tail;
    e->next = NULL;
    if (st->tail)
        st->tail->next = e;
    else
        st->head = e;
    st->tail = e;
}

void explain_put(explain_store_t *st, const char *kind, const char *ns, const char *name, json_t *rec)
{
    if (!st || !rec) {
        json_decref(rec);
        return;
    }
    char *key = key_of(kind, ns, name);
    entry_t *evicted = NULL;
    lo_mutex_lock(&st->mu, LO_EXPLAIN);
    entry_t *e = hashmap_get(st->by_key, key);
    if (e) {
        json_decref(e->rec);
        e->rec = rec;
        unlink_entry(st, e);
        append_entry(st, e);
        free(key);
    } else {
        e = util_xcalloc(1, sizeof(*e));
        e->key = key;
        e->rec = rec;
        hashmap_put(st->by_key, key, e);
        append_entry(st, e);
        if (__atomic_add_fetch(&st->n, 1, __ATOMIC_RELEASE) > st->cap) {
            evicted = st->head;
            unlink_entry(st, evicted);
            hashmap_remove(st->by_key, evicted->key);
            __atomic_sub_fetch(&st->n, 1, __ATOMIC_RELEASE);
        }
    }
    lo_mutex_unlock(&st->mu, LO_EXPLAIN);
    if (evicted)
        entry_free(evicted); /* outside the lock: a record may be large */
}

json_t *explain_get(explain_store_t *st, const char *kind, const char *ns, const char *name)
{
    if (!st)
        return NULL;
    char *key = key_of(kind, ns, name);
    lo_mutex_lock(&st->mu, LO_EXPLAIN);
    entry_t *e = hashmap_get(st->by_key, key);
    /* A copy, not a reference: the store's record is freed by whichever
     * thread replaces or evicts it, and jansson's decref reads the count
     * before its atomic decrement (a data race on a shared object). */
    json_t *rec = e ? json_deep_copy(e->rec) : NULL;
    lo_mutex_unlock(&st->mu, LO_EXPLAIN);
    free(key);
    return rec;
}

int explain_drop(explain_store_t *st, const char *kind, const char *ns, const char *name)
{
    if (!st)
        return 0;
    char *key = key_of(kind, ns, name);
    lo_mutex_lock(&st->mu, LO_EXPLAIN);
    entry_t *e = hashmap_remove(st->by_key, key);
    if (e) {
        unlink_entry(st, e);
        __atomic_sub_fetch(&st->n, 1, __ATOMIC_RELEASE);
    }
    lo_mutex_unlock(&st->mu, LO_EXPLAIN);
    free(key);
    if (e)
        entry_free(e);
    return e != NULL;
}

/* Without the lock: a placed pod asks it first (see trace.c). */
int explain_count(explain_store_t *st)
{
    return st ? __atomic_load_n(&st->n, __ATOMIC_ACQUIRE) : 0;
}

/* ------------------------------------------------------------ building */

json_t *explain_record_new(const char *kind, const char *pod, const char *pool, int64_t now_wall_ms)
{
    char t[40];
    util_rfc3339(now_wall_ms, t, sizeof(t));
    return json_pack("{s:s, s:s?, s:s?, s:n, s:n, s:i, s:i, s:{}, s:[], s:[], s:[], s:n, s:n, s:n, s:n, s:s}", "kind",
                     kind, "pod", pod, "pool", pool, "queue", "admission", "attempts", 0, "nodesEvaluated", 0,
                     "filters", "filterDetails", "topNodes", "postFilter", "gang", "message", "outcome", "hint", "time",
                     t);
}

void explain_record_filter(json_t *rec, const char *plugin, const char *reason, int count, const char *const *examples,
                           int nexamples)
{
    if (!rec || !reason)
        return;
    json_t *filters = json_object_get(rec, "filters");
    json_t *prev = json_object_get(filters, reason);
    json_object_set_new(filters, reason, json_integer(json_integer_value(prev) + count));
    json_t *ex = json_array();
    for (int i = 0; i < nexamples && i < EXPLAIN_EXAMPLES; i++)
        if (examples[i])
            json_array_append_new(ex, json_string(examples[i]));
    json_array_append_new(
        json_object_get(rec, "filterDetails"),
        json_pack("{s:s?, s:s, s:i, s:o}", "plugin", plugin, "reason", reason, "count", count, "examples", ex));
}

void explain_record_top_node(json_t *rec, const char *node, int64_t score, json_t *scores)
{
    if (!rec || !node) {
        json_decref(scores);
        return;
    }
    json_array_append_new(json_object_get(rec, "topNodes"),
                          json_pack("{s:s, s:I, s:o}", "node", node, "score", (json_int_t)score, "scores",
                                    scores ? scores : json_object()));
}

void explain_record_step(json_t *rec, const char *step, const char *result, const char *detail)
{
    if (!rec)
        return;
    json_array_append_new(json_object_get(rec, "postFilter"),
                          json_pack("{s:s, s:s, s:s}", "step", step ? step : "", "result", result ? result : "",
                                    "detail", detail ? detail : ""));
}

/* ---------------------------------------------------------------- hint */

static const char *str_at(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static json_int_t int_at(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* The first step of that name whose result is not "skipped". */
static const json_t *step_of(const json_t *rec, const char *name)
{
    size_t i;
    json_t *s;
    json_array_foreach (json_object_get(rec, "postFilter"), i, s) {
        const char *n = str_at(s, "step"), *r = str_at(s, "result");
        if (n && strcmp(n, name) == 0 && r && strcmp(r, "skipped") != 0)
            return s;
    }
    return NULL;
}

static void add_step(sbuf_t *b, const json_t *rec, const char *name)
{
    const json_t *s = step_of(rec, name);
    const char *d = s ? str_at(s, "detail") : NULL;
    if (d && d[0])
        sbuf_printf(b, "; %s: %s", name, d);
}

/* A GPU pod: whether the pool has the GPUs, and on one node. */
static int gpu_hint(sbuf_t *b, const json_t *rec, const char *pool)
{
    json_int_t want = int_at(json_object_get(rec, "request"), "gpu");
    const json_t *pf = json_object_get(rec, "poolFree");
    if (want <= 0 || !pf)
        return 0;
    json_int_t total = int_at(pf, "gpu"), one = int_at(pf, "gpuMaxOnOneNode"), cap = int_at(pf, "gpuMaxCapacity");
    if (cap < want) {
        sbuf_printf(b,
                    "asks %lld GPUs on one node, but no node of pool %s has more than %lld GPUs: it cannot fit there",
                    (long long)want, pool, (long long)cap);
        return 1;
    }
    if (one >= want)
        return 0; /* the GPUs are free on one node: another filter says no */
    if (total >= want) {
        sbuf_printf(b, "asks %lld GPUs on one node; pool %s has %lld free GPUs, at most %lld on one node",
                    (long long)want, pool, (long long)total, (long long)one);
        add_step(b, rec, "consolidation");
    } else {
        sbuf_printf(b, "asks %lld GPUs on one node; pool %s has %lld free GPUs (at most %lld on one node)",
                    (long long)want, pool, (long long)total, (long long)one);
    }
    add_step(b, rec, "preemption");
    add_step(b, rec, "borrowing");
    return 1;
}

/* One reason every evaluated node gives, that preemption cannot lift. */
static int filter_hint(sbuf_t *b, const json_t *rec, const char *pool)
{
    json_int_t nodes = int_at(rec, "nodesEvaluated");
    const char *k;
    json_t *v;
    if (nodes <= 0)
        return 0;
    json_object_foreach ((json_t *)json_object_get(rec, "filters"), k, v) {
        if (json_integer_value(v) == nodes && strncmp(k, "Insufficient ", 13) != 0) {
            sbuf_printf(b, "every node of pool %s (%lld) rejects it: %s", pool, (long long)nodes, k);
            return 1;
        }
    }
    if (json_object_size(json_object_get(rec, "filters")) == 0)
        return 0;
    sbuf_printf(b, "no node of pool %s fits it (%lld evaluated)", pool, (long long)nodes);
    add_step(b, rec, "preemption");
    add_step(b, rec, "borrowing");
    return 1;
}

char *explain_hint(const json_t *rec)
{
    if (!json_is_object(rec))
        return NULL;
    const char *pool = str_at(rec, "pool") ? str_at(rec, "pool") : "?";
    sbuf_t b = { 0 };
    const json_t *adm = json_object_get(rec, "admission");
    const char *verdict = str_at(adm, "verdict");
    const json_t *gang = json_object_get(rec, "gang");
    const char *behind = str_at(rec, "waitingBehind") ? str_at(rec, "waitingBehind") : str_at(gang, "waitingBehind");
    if (verdict && (strcmp(verdict, "quota") == 0 || strcmp(verdict, "limit") == 0)) {
        const json_t *q = json_object_get(rec, "queue");
        sbuf_printf(&b, "held by its queue%s%s%s (%s): %s", str_at(q, "name") ? " \"" : "",
                    str_at(q, "name") ? str_at(q, "name") : "", str_at(q, "name") ? "\"" : "", verdict,
                    str_at(adm, "message") ? str_at(adm, "message") : "");
    } else if (behind) {
        sbuf_printf(&b, "waits behind pod group %s, which goes first in pool %s and does not fit yet", behind, pool);
    } else if (gpu_hint(&b, rec, pool) || filter_hint(&b, rec, pool)) {
        /* said */
    }
    if (gang && json_integer_value(json_object_get(gang, "minMember")) > 0 && b.len == 0) {
        json_int_t placeable = int_at(gang, "placeable"), min = int_at(gang, "minMember");
        if (placeable < min)
            sbuf_printf(&b, "only %lld of the gang's minimum of %lld members fit in pool %s at once",
                        (long long)placeable, (long long)min, pool);
    }
    return b.data;
}
