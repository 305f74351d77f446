/* fake_api.h -- a fake API server for the unit suites: libmicrohttpd on a
 * free loopback port with a thread per connection (a slow answer holds up
 * no other request), and a plain-HTTP kube client pointed at it. Include
 * after cmocka.h. */
#ifndef AISCHED_TEST_FAKE_API_H
#define AISCHED_TEST_FAKE_API_H

#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include <microhttpd.h>

#include "kube/client.h"

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

/* Answers a kube Status with code and message (Success below 300). */
static inline enum MHD_Result fake_api_status(struct MHD_Connection *c, unsigned code, const char *msg)
{
    json_t *j = json_pack("{s:s,s:s,s:s,s:i}", "kind", "Status", "status", code < 300 ? "Success" : "Failure",
                          "message", msg, "code", code);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
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

#endif
