/* fake_api.h -- a fake API server for the unit suites: libmicrohttpd on a
 * free loopback port with a thread per connection (a slow answer holds up
 * no other request), and a plain-HTTP kube client pointed at it. Include
 * after cmocka.h. */
#ifndef AISCHED_TEST_FAKE_API_H
#define AISCHED_TEST_FAKE_API_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include <microhttpd.h>

#include "kube/client.h"
#include "scheduler/scheduler.h"
#include "util/util.h"

/* Serves handler; done (may be NULL) runs when a request is over. NULL when
 * the daemon cannot start; *port is its port. Stop with MHD_stop_daemon. */
static inline struct MHD_Daemon *fake_api_start(MHD_AccessHandlerCallback handler, MHD_RequestCompletedCallback done,
                                                int *port)
{
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, NULL,
                         MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
    if (d)
        *port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
    return d;
}

/* Answers obj (borrowed) as JSON with code. */
static inline enum MHD_Result fake_api_json(struct MHD_Connection *c, unsigned code, json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

/* Answers a kube Status with code and message (Success below 300). */
static inline enum MHD_Result fake_api_status(struct MHD_Connection *c, unsigned code, const char *msg)
{
    json_t *j = json_pack("{s:s,s:s,s:s,s:i}", "kind", "Status", "status", code < 300 ? "Success" : "Failure",
                          "message", msg, "code", code);
    enum MHD_Result rc = fake_api_json(c, code, j);
    json_decref(j);
    return rc;
}

/* A client of http://127.0.0.1:port (qps and burst 0: no limit), 5 s per
 * request, or NULL. Free with kube_client_free. */
static inline kube_client_t *fake_api_client(int port, double qps, int burst, const char *user_agent)
{
    char server[64], err[256];
    snprintf(server, sizeof server, "http://127.0.0.1:%d", port);
    kube_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = server;
    kube_client_opts_t o = { qps, burst, 5, user_agent };
    return kube_client_new(&cfg, &o, err, sizeof err);
}

/* *v read under mu (a suite's counters, bumped by the server's threads). */
static inline int fake_api_read_int(pthread_mutex_t *mu, const int *v)
{
    pthread_mutex_lock(mu);
    int n = *v;
    pthread_mutex_unlock(mu);
    return n;
}

/* A request's body, gathered over a handler's calls: call first in the
 * handler; while it returns 1 the handler returns MHD_YES, then *body is
 * the whole body (NULL when empty). Start the server with
 * fake_api_body_done as its completion callback (fake_api_up does). */
typedef struct fake_api_body {
    sbuf_t data;
} fake_api_body_t;
static inline int fake_api_gather(void **con_cls, const char *data, size_t *size, const char **body)
{
    fake_api_body_t *u = *con_cls;
    if (!u) {
        *con_cls = util_xcalloc(1, sizeof *u);
        return 1;
    }
    if (*size) {
        sbuf_append(&u->data, data, *size);
        *size = 0;
        return 1;
    }
    *body = u->data.data;
    return 0;
}
static inline void fake_api_body_done(void *cls, struct MHD_Connection *c, void **con_cls,
                                      enum MHD_RequestTerminationCode t)
{
    fake_api_body_t *u = *con_cls;
    if (u) {
        sbuf_free(&u->data);
        free(u);
    }
}

/* A suite's server and its client (fake_api_client, no rate limit). */
typedef struct fake_api {
    struct MHD_Daemon *d;
    kube_client_t *kc;
} fake_api_t;
/* 0, or -1 when the server or client cannot start (a cmocka setup's answer). */
static inline int fake_api_up(fake_api_t *f, MHD_AccessHandlerCallback handler, const char *user_agent)
{
    int port;
    f->d = fake_api_start(handler, fake_api_body_done, &port);
    f->kc = f->d ? fake_api_client(port, 0, 0, user_agent) : NULL;
    return f->kc ? 0 : -1;
}
static inline void fake_api_down(fake_api_t *f)
{
    kube_client_free(f->kc);
    if (f->d)
        MHD_stop_daemon(f->d);
}

/* A scheduler (identity "test") that talks to kc; fails the test when it
 * cannot be built. */
static inline scheduler_t *fake_api_scheduler(kube_client_t *kc)
{
    scheduler_opts_t o;
    scheduler_opts_default(&o);
    o.identity = "test";
    char err[256];
    scheduler_t *s = scheduler_new(&o, kc, err, sizeof err);
    if (!s)
        fail_msg("scheduler_new: %s", err);
    return s;
}

#endif
