/* debugclient.h -- how the CLI reaches the scheduler's authenticated /debug
 * endpoints: directly (--server URL, the kubeconfig's bearer token sent),
 * or the leader found through its Lease, via the API server's pod proxy. */
#ifndef AISCHED_CMD_DEBUGCLIENT_H
#define AISCHED_CMD_DEBUGCLIENT_H

#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#include "cli.h"

/* GETs path (e.g. "/debug/pods/ns/name") from server_url when given, else
 * from the leader of the Lease c->lease_ns/c->lease_name (holderIdentity
 * "NS/POD_pid" as the chart sets it, or "POD_pid" with the pod in the
 * Lease's namespace) through /api/v1/namespaces/NS/pods/POD:PORT/proxy,
 * PORT c->sched_port. The kubeconfig's bearer token authenticates the
 * request at the scheduler: as Authorization directly, as
 * X-Ai-Scheduler-Authorization through the proxy (the API server consumes
 * Authorization itself and also requires get on pods/proxy there).
 * 0 with *out the decoded JSON (a new reference), or -1 with err one line:
 * no token in the kubeconfig (a client certificate only), no leader, the
 * HTTP status and the server's message (a kube Status's message, or the
 * start of the body), or an answer that is not JSON. */
int debug_get(const cli_t *c, const char *server_url, const char *path, json_t **out, char *err, size_t errlen);

/* `ai-scheduler debug PATH [flags]`: prints one /debug answer (JSON or
 * YAML). Exit code 0, 1 on errors, 2 on usage errors. */
int debug_main(int argc, char **argv, FILE *out, FILE *errf);

/* The pod of a Lease's holderIdentity: "NS/NAME_PID" or "NAME_PID" (ns
 * then default_ns); 0, or -1 when it names no pod. For tests. */
int debug_holder_pod(const char *identity, const char *default_ns, char *ns, size_t nslen, char *name, size_t namelen);

#endif
