/* snapshot.h -- the ClusterSnapshot document: every object the scheduler
 * reads, LISTed from the API server, stripped of what it must never carry
 * (managedFields, container env values, command lines, last-applied
 * configurations) and optionally anonymized. `ai-scheduler snapshot`
 * writes it, `whatif` builds its copy from it, the sandbox loads it.
 *
 *   {"apiVersion":"ai-scheduler.aibee.cn/v1","kind":"ClusterSnapshot",
 *    "takenAt":"RFC3339","config":<config file as JSON, or null>,
 *    "items":[objects, each with apiVersion and kind]} */
#ifndef AISCHED_SNAPSHOT_H
#define AISCHED_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "kube/client.h"

#define SNAPSHOT_API_VERSION "ai-scheduler.aibee.cn/v1"
#define SNAPSHOT_KIND        "ClusterSnapshot"

/* One kind the scheduler watches: where it is listed and what its items
 * are called (a LIST leaves built-in items without apiVersion and kind). */
typedef struct snapshot_kind {
    const char *path;        /* "/api/v1/pods" */
    const char *api_version; /* "v1" */
    const char *kind;        /* "Pod" */
    const char *fallback;    /* a path to try when path is not served (PDBs' v1beta1), or NULL */
    const char *fallback_version;
    int optional; /* not served says nothing (DRA's kinds: most clusters have none) */
} snapshot_kind_t;

/* The table, in the order a sandbox needs them (what a kind refers to
 * comes before it); n set to its length. */
const snapshot_kind_t *snapshot_kinds(int *n);

typedef void (*snapshot_note_fn)(void *ud, const char *msg);

/* LISTs every kind into a new array of sanitized objects (apiVersion and
 * kind set). A kind the server does not serve (404: a CRD not applied) is
 * skipped and told to note (may be NULL); any other failure is NULL with
 * err. */
json_t *snapshot_list(kube_client_t *kc, snapshot_note_fn note, void *ud, char *err, size_t errlen);

/* The document around items (stolen) and config (stolen; NULL for null),
 * taken at wall_ms. */
json_t *snapshot_doc(json_t *items, json_t *config, int64_t wall_ms);

/* Removes, in place, what a snapshot must not carry: metadata.managedFields,
 * the kubectl last-applied annotation (a copy of the object as applied,
 * env values included), every container's env values (names kept), its
 * command and args, and Secrets altogether (returns 1 then: drop it). The
 * scheduler reads none of these. 0 otherwise. */
int snapshot_sanitize(json_t *obj);

/* Replaces, in place and consistently, every identity of the document's
 * items by a pseudonym: namespaces, object names, node names, label values
 * and selector values (the same map, so a selector still selects what it
 * did), identity annotations (pool, queue, pod group, priority class),
 * ownerReferences, claim and volume names, images. Kept: label keys, uids,
 * numbers, booleans, empty values, "default" and kube-* namespaces,
 * system-* names, the values of kubernetes.io/{os,arch} and the pods'
 * resources, priorities and times, so scheduling the result decides the
 * same. Pseudonyms follow the items' order: the same snapshot gives the same
 * names. Returns the number of distinct strings renamed. */
int snapshot_anonymize(json_t *doc);

/* Checks a document read back (from a file: untrusted): its apiVersion,
 * kind, items array of objects with apiVersion, kind and metadata.name,
 * and config (null or an object). -1 with err. */
int snapshot_check(const json_t *doc, char *err, size_t errlen);

#endif
