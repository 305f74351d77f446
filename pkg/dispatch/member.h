/* member.h -- the dispatch controller's side of each member cluster: a client
 * built from a kubeconfig held in a hub Secret (rebuilt when the Secret
 * changes, kept a while for cleanup when it goes), API discovery to find where a kind lives, and the three things
 * done there: create the specialised objects, observe their pods (through a
 * watch per member namespace, podwatch.h, with a LIST when it is not
 * current), delete them. An object without the job's uid label is never
 * changed or deleted.
 *
 * Thread-safe: the controller's workers share the set. Its mutex (slots,
 * references) is held over the hub's Secret read, so one refresh runs at a
 * time; a client's mutex (discovery, watches) over no request. The two are
 * never nested, and a podwatch's lock is its own leaf. */
#ifndef AISCHED_DISPATCH_MEMBER_H
#define AISCHED_DISPATCH_MEMBER_H

#include <stddef.h>
#include <jansson.h>
#include "dispatch/podwatch.h"
#include "kube/client.h"

typedef struct dsp_members dsp_members_t;
typedef struct dsp_mclient dsp_member_client_t;

/* Why a member cannot be used (status reasons). */
#define DSP_R_SECRET      "SecretNotFound"
#define DSP_R_KUBECONFIG  "BadKubeconfig"
#define DSP_R_UNREACHABLE "Unreachable"
#define DSP_R_REJECTED    "Rejected"
#define DSP_R_CONFLICT    "NameConflict"

/* hub is borrowed. timeout_s bounds each member request. kick (may be
 * NULL) hears, on a watch's thread, of a change to a job's pods. */
dsp_members_t *dsp_members_new(kube_client_t *hub, int timeout_s, dsp_kick_fn kick, void *kick_ud);
void dsp_members_free(dsp_members_t *ms);

/* How long the last usable client of a Secret that went away is kept for
 * the cleanups of the jobs that used it (at most). */
#define DSP_KEEP_CREDS_S 3600

/* The client for Secret ns/secret (key: the data key, NULL = "kubeconfig",
 * or the only key): a reference the caller gives back with dsp_member_put.
 * The Secret is read again when older than 10 s; a changed one gets a new
 * client, and the old one lives on until its last holder puts it. uid (may
 * be NULL) is the job asking: it is remembered as a user of the Secret's
 * credentials. NULL with *reason and err. */
dsp_member_client_t *dsp_member_get(dsp_members_t *ms, const char *ns, const char *secret, const char *key,
                                    const char *uid, const char **reason, char *err, size_t errlen);

/* For deleting job uid's objects: dsp_member_get's client, else, when the
 * Secret is gone (404, 403) or no longer parses, the last client it gave,
 * if job uid got one before. That client is kept in memory (never written
 * anywhere) until no job that used it is left (dsp_members_forget), for
 * DSP_KEEP_CREDS_S at most, or until the Secret is usable again; a
 * restarted controller has none. NULL with *reason and err; *none set when
 * no credentials can be had at all (the hub answered and nothing is kept),
 * as opposed to the hub not answering. */
dsp_member_client_t *dsp_member_get_cleanup(dsp_members_t *ms, const char *ns, const char *secret, const char *key,
                                            const char *uid, int *none, const char **reason, char *err, size_t errlen);

/* Job uid is gone: it no longer holds kept credentials. */
void dsp_members_forget(dsp_members_t *ms, const char *uid);
void dsp_member_put(dsp_member_client_t *mc);
const char *dsp_member_server(dsp_member_client_t *mc);

/* Creates obj unless it exists. 0: created, or already there with our uid
 * label. -1 with *reason (Unreachable, Rejected, NameConflict) and err. */
int dsp_member_create(dsp_member_client_t *mc, json_t *obj, const char *uid, const char **reason, char *err,
                      size_t errlen);

/* Deletes obj's counterpart (background propagation, precondition on its
 * uid). 1: gone, being deleted, or not ours (left alone, *foreign set);
 * 0 never; -1 with err when the member did not answer or refused. */
int dsp_member_delete(dsp_member_client_t *mc, json_t *obj, const char *uid, int *foreign, char *err, size_t errlen);

/* The pods with our uid label in ns, and the Jobs among objs. 0 or -1 + err. */
int dsp_member_observe(dsp_member_client_t *mc, const char *ns, const char *uid, json_t *objs, dsp_pods_t *out,
                       char *err, size_t errlen);

#endif
