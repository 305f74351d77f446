/* claims.h -- a pod's DRA claims (spec.resourceClaims and
 * status.resourceClaimStatuses), parsed into the pod's dynamic-resources
 * slot (api/podext.h) by the capability dra_capability_register adds. */
#ifndef AISCHED_DRA_CLAIMS_H
#define AISCHED_DRA_CLAIMS_H

#include "api/types.h"

/* Every DeviceClass also serves this prefix + its name (KEP-5004). */
#define DRA_IMPLICIT_PREFIX "deviceclass.resource.kubernetes.io/"

/* One of spec.resourceClaims, resolved as kube's resourceclaim.Name does. */
typedef struct dra_pod_claim {
    char *name;        /* spec.resourceClaims[].name */
    char *claim;       /* the ResourceClaim's name in the pod's namespace: its
                        * resourceClaimName, or for a template the name the
                        * status gives; NULL while waiting or when skipped */
    int from_template; /* resourceClaimTemplateName */
    int waiting;       /* a template's claim is not in status yet (the
                        * resourceclaim controller has not made it) */
    int skip;          /* the status says no claim is needed for it */
} dra_pod_claim_t;

/* One container's request of an extended resource (KEP-5004): a DeviceClass
 * with that spec.extendedResourceName may serve it on nodes that do not
 * advertise the resource. Request names are kube's
 * "container-<i>-request-<j>" (i: the container's index in initContainers
 * followed by containers; j: the resource's index among the container's
 * requests sorted by name). */
typedef struct dra_ext_req {
    char *container, *resource, *request;
    int64_t count;
} dra_ext_req_t;

typedef struct dra_pod {
    dra_pod_claim_t *c;
    int n;
    char *invalid;    /* why the pod's claims cannot be read (owned), or NULL */
    dra_ext_req_t *x; /* the regular containers' extended-resource requests */
    int nx;
} dra_pod_t;

/* The pod's claims, or NULL when it has none. */
const dra_pod_t *dra_pod(const pod_t *p);
/* The pod's extended-resource requests (d->nx > 0), or NULL when it has
 * none. */
const dra_pod_t *dra_pod_ext(const pod_t *p);
/* Registers the capability (scheduler/capabilities.c, before any pod is
 * parsed). */
void dra_capability_register(void);

#endif
