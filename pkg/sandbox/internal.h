/* internal.h -- what the sandbox's files share (not public): its state,
 * the kinds the copy keeps, the object store (store.c) and the in-process
 * API the scheduler's requests reach (api.c). One thread: no locks. */
#ifndef AISCHED_SANDBOX_INTERNAL_H
#define AISCHED_SANDBOX_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "kube/client.h"
#include "sandbox/budget.h"
#include "sandbox/sandbox.h"
#include "util/hashmap.h"

/* A watch event waiting to be delivered. obj is never changed after it is
 * queued: every write replaces the stored object with a new one. */
typedef struct sb_event {
    struct sb_event *next;
    const char *kind; /* static (the kinds table) */
    char *type, *key;
    json_t *obj; /* one reference */
} sb_event_t;

/* An eviction whose Preempted (or Consolidated) event has not come yet. */
typedef struct sb_evicted {
    struct sb_evicted *next;
    char *ns, *name, *uid, *node;
} sb_evicted_t;

struct sandbox {
    scheduler_t *s;
    kube_client_t *kc;
    scheduler_opts_t sched;
    sb_action_fn on_action;
    void *ud;
    int virtual_clock;
    int64_t now; /* the virtual clock (wall ms; the monotonic one reads the same) */
    int64_t next_hk;
    hashmap_t *objs;  /* "Kind/ns/name" -> json_t * (one reference) */
    hashmap_t *unsch; /* pod uid -> last SB_UNSCHEDULABLE message (owned) */
    sb_event_t *head, *tail;
    sb_evicted_t *evicted;
    sb_budgets_t *budgets; /* the PDBs' counts (budget.h) */
    uint64_t rv, uids;
    int has_claims; /* a ResourceClaim was stored (claims.c has work) */
};

typedef struct kind_row {
    const char *kind;
    const char *plural;
    int namespaced;
    int load_rank; /* sandbox_load's order: what each depends on first */
} kind_row_t;

#define KIND_NS "Namespace"

/* store.c: the kinds */
const kind_row_t *sb_kind_by_name(const char *kind);
const kind_row_t *sb_kind_by_plural(const char *plural);
/* Whether the scheduler watches the kind (its events are delivered). */
int sb_kind_fed(const kind_row_t *k);

/* store.c: the objects. Stored objects are never changed in place: a
 * write copies what it changes (sb_own_object down its path) and stores
 * the copy with sb_store_put, which queues the watch event. */
const char *sb_str_at(json_t *o, const char *a, const char *b);
/* "Kind/ns/name" (ns NULL: ""); the caller frees. */
char *sb_store_key(const char *kind, const char *ns, const char *name);
json_t *sb_store_get(sandbox_t *sb, const char *kind, const char *ns, const char *name);
/* Stores obj (taken) as kind/ns/name now is and queues the event type. */
void sb_store_put(sandbox_t *sb, const kind_row_t *k, const char *type, const char *ns, const char *name, json_t *obj);
void sb_store_delete(sandbox_t *sb, const kind_row_t *k, const char *ns, const char *name);
/* Fills what the API server would: uid, creationTimestamp, namespace. */
void sb_fill_meta(sandbox_t *sb, const kind_row_t *k, json_t *meta, const char *ns);
/* target[key] as an object of target's own, to be changed. */
json_t *sb_own_object(json_t *target, const char *key);
json_t *sb_merge_conditions(json_t *cur, json_t *patch);
void sb_merge_patch(json_t *target, json_t *patch, int strategic);
/* Hands every queued watch event to the scheduler; returns how many. */
int sb_deliver(sandbox_t *sb);

/* store.c: actions told to the caller */
void sb_act(sandbox_t *sb, sb_action_t *a);
void sb_act_pod(sandbox_t *sb, sb_action_kind_t kind, json_t *pod, const char *node);
void sb_evicted_free(sb_evicted_t *e);

/* claims.c: the resourceclaim controller's part: pod uid left (deleted or
 * finished) its claims' reservedFor; a claim no pod reserves is
 * deallocated. */
void sb_claims_pod_gone(sandbox_t *sb, const char *uid);

/* api.c: the in-process client's every request (kube_inproc_fn) */
void sb_api_serve(void *ud, const char *method, const char *path, const char *ctype, const char *body,
                  kube_response_t *resp);
/* SB_EVICT for the eviction of uid, with its event's words (uid NULL:
 * every one still waiting, told with reason "eviction"). */
void sb_evict_said(sandbox_t *sb, const char *uid, const char *reason, const char *message, const char *by);

#endif
