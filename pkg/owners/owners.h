/* owners.h -- the Services, ReplicationControllers, ReplicaSets and
 * StatefulSets of the cluster, kept as their selectors, to answer kube's
 * helper.DefaultSelector: "what do the objects that select this pod select",
 * which drives default topology spreading.
 *
 * Thread-safe: one mutex, a leaf lock (nothing else is taken while it is
 * held), so it may be called under the cache lock. Informer threads update
 * it; scheduling threads query it. */
#ifndef AISCHED_OWNERS_H
#define AISCHED_OWNERS_H

#include <stddef.h>
#include <jansson.h>
#include "api/labels.h"

typedef enum { OWNER_SERVICE = 0, OWNER_RC, OWNER_RS, OWNER_STS, OWNER_NKINDS } owner_kind_t;

typedef struct owners owners_t;

owners_t *owners_new(void);
void owners_free(owners_t *o);

/* Stores (or replaces) the object at key ("ns/name") from its JSON. An object
 * whose selector cannot be parsed is dropped from the store and -1 returned
 * with err set (kube's listers skip it too). */
int owners_update(owners_t *o, owner_kind_t kind, const char *key, json_t *obj, char *err, size_t errlen);
void owners_delete(owners_t *o, owner_kind_t kind, const char *key);
int owners_count(owners_t *o);

/* kube's DefaultSelector for a pod of namespace ns with these labels: the
 * selectors of the Services and RCs (map selectors, merged) and of the
 * ReplicaSets and StatefulSets (label selectors) that match the pod, as one
 * conjunction in *out (owned by the caller; selector_free). An object with
 * an empty selector matches nothing; a pod without labels matches no RC, RS
 * or StatefulSet. Returns the number of objects that matched (0: *out is
 * empty, no default spreading). */
int owners_default_selector(owners_t *o, const char *ns, const labels_t *pod_labels, selector_t *out);

#endif
