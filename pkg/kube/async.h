/* async.h -- API requests sent without a blocked thread each: one thread
 * drives a libcurl multi handle, and the requests' HTTP/2 streams share the
 * connection (HTTP/1.1 servers get up to max_inflight connections). For
 * writes that come in bursts, one per pod: Bindings.
 *
 * The client's rate limiter and stats apply as for kube_request. Requests
 * start in submission order.
 *
 * On an in-process client (kube_client_new_inproc) there is no thread:
 * kube_async_submit answers the request and runs done on the caller's
 * thread before it returns. */
#ifndef AISCHED_KUBE_ASYNC_H
#define AISCHED_KUBE_ASYNC_H

#include "kube/client.h"

typedef struct kube_async kube_async_t;

/* A finished request, on the async thread. resp->status is the HTTP status,
 * or 0 with err set when no answer came (connection, timeout). resp and err
 * are borrowed for the call. Must not call kube_async_free. */
typedef void (*kube_async_done_fn)(void *ud, const kube_response_t *resp, const char *err);

/* At most max_inflight requests on the wire at once; c must outlive it.
 * waiting (may be NULL) is the caller's counter, atomically raised for each
 * request submitted and lowered when it goes on the wire. */
kube_async_t *kube_async_new(kube_client_t *c, int max_inflight, int *waiting, char *err, size_t errlen);

/* Queues a request; body (may be NULL) is taken over and freed after done
 * has run. done runs exactly once, also for a request kube_async_free
 * finishes. */
void kube_async_submit(kube_async_t *a, const char *method, const char *path, const char *content_type, char *body,
                       kube_async_done_fn done, void *ud);

/* Waits until fewer than n requests are submitted and not yet answered, or
 * timeout_ms passed; returns how many are pending then. Not from a done callback (it would wait on its own
 * thread). */
int kube_async_wait_below(kube_async_t *a, int n, int timeout_ms);

/* Sends and completes everything submitted, then stops the thread. */
void kube_async_free(kube_async_t *a);

#endif
