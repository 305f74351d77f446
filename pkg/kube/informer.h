/* informer.h -- list+watch of one resource kind in a thread: the initial
 * LIST (paginated), then WATCH from its resourceVersion with bookmarks;
 * reconnects with backoff (0.5 s doubling to 30 s) when the stream or the
 * server drops, and relists on 410 Gone. After a relist it reports what
 * disappeared meanwhile as deletes, so the consumer never keeps a ghost.
 *
 * Handler calls come from the informer's thread, one at a time, in order. */
#ifndef AISCHED_INFORMER_H
#define AISCHED_INFORMER_H

#include "kube/client.h"

typedef enum { KUBE_ADDED = 0, KUBE_MODIFIED = 1, KUBE_DELETED = 2 } kube_event_type_t;

/* key: "ns/name" (namespaced) or "name"; obj is borrowed and may be NULL for
 * a delete found by relist. */
typedef void (*informer_handler_fn)(void *ud, kube_event_type_t type, const char *key, json_t *obj);

typedef struct informer informer_t;

/* path: e.g. "/api/v1/pods", "/apis/resource.aibee.cn/v1alpha1/pools".
 * field_selector may be NULL. A 404 on the path (CRD not installed) is
 * retried with backoff, with one warning (then debug lines). */
informer_t *informer_new(kube_client_t *c, const char *path, const char *field_selector, informer_handler_fn fn,
                         void *ud);
/* Another handler for the same events (ud its own), called after the
 * earlier ones: two users of one kind share a LIST and a WATCH. Before
 * informer_start only; -1 when started or full. */
#define INFORMER_MAX_HANDLERS 4
int informer_add_handler(informer_t *inf, informer_handler_fn fn, void *ud);
/* The path it lists and watches (with its field selector). */
const char *informer_path(const informer_t *inf);
int informer_start(informer_t *inf);
/* 1 once the first LIST has been delivered, 0 on timeout. */
int informer_wait_synced(informer_t *inf, int timeout_ms);
int informer_has_synced(informer_t *inf);
/* 1 while what it delivered is current: synced, and no LIST or WATCH has
 * failed since the last LIST that worked (a member that went away, a
 * permission missing). A watch that dropped is unhealthy until the LIST or
 * WATCH after it succeeds. */
int informer_healthy(informer_t *inf);
/* How many events were handed to the handler, each counted once the
 * handler returned (a reader that sees the count sees what the handler
 * did); 0 for NULL. Any thread. */
unsigned long informer_delivered(const informer_t *inf);
/* Asks the thread to stop without waiting: stop several informers at once
 * with request_stop on each, then informer_stop (which joins). */
void informer_request_stop(informer_t *inf);
void informer_stop(informer_t *inf); /* joins the thread */
void informer_free(informer_t *inf);

#endif
