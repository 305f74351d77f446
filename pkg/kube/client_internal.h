/* client_internal.h -- what client.c lends async.c and list.c: a request's
 * curl options, the rate limiter, the stats and answer decoding. Not for
 * other modules. */
#ifndef AISCHED_KUBE_CLIENT_INTERNAL_H
#define AISCHED_KUBE_CLIENT_INTERNAL_H

#include <curl/curl.h>
#include <stdint.h>
#include "kube/client.h"

/* Resets h and sets every option of one request, as kube_request does
 * (auth, TLS, method, body, timeout). *hs and *url are the caller's to free
 * after the transfer; body is borrowed until then. -1: unknown method. */
int kube_client_prepare(kube_client_t *c, CURL *h, const char *method, const char *path, const char *content_type,
                        const char *body, struct curl_slist **hs, char **url, char *ebuf);
/* Takes a token from the client's limiter: microseconds to wait before
 * sending (0: now). Waits are counted in the stats' throttled_ms. */
int64_t kube_client_reserve(kube_client_t *c);
/* One finished request in the stats; it failed with a transport error
 * (rc), a 429 or a 5xx. */
void kube_client_count(kube_client_t *c, int64_t start_us, CURLcode rc, long status);
/* The message of a request that got no answer: "METHOD PATH: why" (why:
 * curl's error buffer, else rc's text; overflow_cap > 0: the answer was
 * cut at that many bytes). */
void kube_client_transport_error(char *err, size_t errlen, const char *method, const char *path, CURLcode rc,
                                 const char *ebuf, size_t overflow_cap);

/* An answer's status and JSON: non-2xx gives -1 with the API's message and
 * *status set (status may be NULL); out NULL skips decoding. */
int kube_client_decode(kube_response_t *r, const char *method, const char *path, json_t **out, long *status, char *err,
                       size_t errlen);

#endif
