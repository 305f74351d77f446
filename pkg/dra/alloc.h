/* alloc.h -- the structured-parameters device allocator: a pod's claims on
 * one node's candidate devices, as kube-scheduler's structured allocator
 * (k8s.io/dynamic-resource-allocation/structured, the stable variant)
 * chooses them. Pure: no API, no I/O, no locks; selectors are judged
 * through the caller's callback. */
#ifndef AISCHED_DRA_ALLOC_H
#define AISCHED_DRA_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "dra/device.h"

/* The most devices one claim's allocation holds
 * (resource.k8s.io/v1 AllocationResultsMaxSize). */
#define DRA_RESULTS_MAX 32
/* The steps one dra_allocate may take: a step is one candidate tried for
 * one device of a request, or one call of the eligibility callback. */
#define DRA_ALLOC_BUDGET 100000

/* One device of the node at hand. in_use: allocated to another claim
 * without admin access, or held in flight; a device given to a claim with
 * admin access is not in use for others, so the caller leaves it 0. */
typedef struct dra_candidate {
    const dra_device_t *dev;
    int in_use;
} dra_candidate_t;

/* One claim to allocate: its requests and constraints (the store's). */
typedef struct dra_claim_req {
    const char *key; /* "ns/name", for messages */
    const dra_request_t *reqs;
    int nreqs;
    const dra_constraint_t *cons;
    int ncons;
} dra_claim_req_t;

/* 1 the device matches every selector of req (the class's and its own),
 * 0 not, -1 a runtime error (err filled). Called at most once per request
 * (or firstAvailable alternative) and device in one dra_allocate. */
typedef int (*dra_eligible_fn)(void *ud, const dra_request_t *req, const dra_device_t *dev, char *err, size_t errlen);

/* The devices chosen: claim[i] for claims[i], results in the order of its
 * requests (a request's devices in candidate order). steps: the steps the
 * search took, set whatever dra_allocate returns. */
typedef struct dra_alloc {
    int nclaims;
    struct {
        dra_result_t *results;
        int n;
    } * claim;
    int64_t steps;
} dra_alloc_t;

/* Allocates every claim together on one node's candidates, as kube's
 * allocator does: claims, their requests and a request's devices in order,
 * candidates tried in the order given (the store gives kube's pool, slice,
 * device order, so the first solution is kube's). A device goes to one
 * request of one claim unless it allows multiple allocations; a request
 * with admin access may take devices in use, but what it takes counts as
 * taken for the later requests of this call (kube's allocatingDevices).
 * 0: out filled (free with dra_alloc_free). 1: no allocation exists; why
 * names the first request that cannot be met on its own, else the deepest
 * the search could not fill ("claim default/c1, request gpus: 5 devices of
 * class gpu.example.com matching <selectors>; the node has 4 (2 in use)").
 * -1: an error (the step budget exceeded, a selector's runtime error, a
 * request kube refuses: count < 1, more than DRA_RESULTS_MAX devices in a
 * claim, a matchAttribute that refuses one of an All request's devices),
 * why says which. why may be NULL: then no message is built, and a
 * failure judges no device for it. */
int dra_allocate(const dra_claim_req_t *claims, int nclaims, const dra_candidate_t *cands, int ncands,
                 dra_eligible_fn eligible, void *ud, dra_alloc_t *out, char *why, size_t whylen);

/* The same with a step budget of the caller's (DRA_ALLOC_BUDGET above). */
int dra_allocate_budget(const dra_claim_req_t *claims, int nclaims, const dra_candidate_t *cands, int ncands,
                        dra_eligible_fn eligible, void *ud, int64_t budget, dra_alloc_t *out, char *why, size_t whylen);

/* Frees what a successful dra_allocate put in a (a zeroed a is fine). */
void dra_alloc_free(dra_alloc_t *a);

#endif
