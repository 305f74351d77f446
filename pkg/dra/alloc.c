/* alloc.c -- the structured-parameters device allocator: a bounded
 * backtracking search over one node's candidates that takes the same
 * first solution kube-scheduler's structured allocator takes. */
#include "dra/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One request to fill: a request's `exactly`, or one of its firstAvailable
 * alternatives (each gets its own slot, so its own eligibility cache). */
typedef struct al_slot {
    const dra_request_t *req; /* what is filled: the request or the alternative */
    const dra_request_t *top; /* the claim's request (req itself without alternatives) */
    int claim, ri;
    char name[128]; /* as the result names it: "gpus" or "gpus/big" */
} al_slot_t;

/* A search's answer besides 1 (found), 0 (not on this branch) and -1
 * (error): not found, and no earlier choice could change that. */
#define AL_NEVER 2

/* What one slot's search saw: dep, an earlier request's constraint value
 * or device count was in the way; blocked, a device an earlier request
 * took was skipped; done, the slot got its devices at least once. */
typedef struct al_trace {
    int dep, blocked, done;
} al_trace_t;

typedef struct al_pick {
    int cand, slot;
} al_pick_t;

/* A matchAttribute constraint while searching: the value the first device
 * brought, and how many devices carry it now. */
typedef struct al_cons {
    const dra_attr_t *first;
    int n;
} al_cons_t;

typedef struct al {
    const dra_claim_req_t *claims;
    int nclaims;
    const dra_candidate_t *cands;
    int ncands;
    dra_eligible_fn eligible;
    void *ud;
    int64_t steps, budget;
    al_slot_t *slots;
    int nslots;
    int *first;        /* per request (claims' requests in order): its first slot */
    int *ord0;         /* per claim: the index of its first request in first[] */
    signed char *elig; /* nslots x ncands: -1 not asked yet, else the answer */
    int *taken;        /* per candidate: picks in this allocation (any claim) */
    al_pick_t *picks;  /* per claim, DRA_RESULTS_MAX each */
    int *npicks;
    al_cons_t *cons; /* the claims' constraints, claim after claim */
    int *cons0;      /* per claim: its first in cons */
    int blame;       /* the last slot (deepest) the search could not fill; -1 */
    char *why;
    size_t whylen;
    char *local; /* the caller's stack block for the arena */
    size_t nlocal;
    char *heap; /* the arena when local is too small */
} al_t;

static void al_why(al_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void al_why(al_t *a, const char *fmt, ...)
{
    if (!a->why || a->whylen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why, a->whylen, fmt, ap);
    va_end(ap);
}

/* Appends to why (already holding a string), truncating. */
static void al_why_add(al_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void al_why_add(al_t *a, const char *fmt, ...)
{
    size_t used = strlen(a->why);
    if (used + 1 >= a->whylen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why + used, a->whylen - used, fmt, ap);
    va_end(ap);
}

static int al_budget_exceeded(al_t *a)
{
    al_why(a, "device allocation gave up after %lld steps (its budget): %d claim(s) on %d candidate device(s)",
           (long long)a->budget, a->nclaims, a->ncands);
    return -1;
}

/* A step of the search; -1 when it is one too many. */
static int al_step(al_t *a)
{
    if (++a->steps > a->budget)
        return al_budget_exceeded(a);
    return 0;
}

/* The device's attribute of a fully qualified name; an unqualified name in
 * the driver's own domain counts too, as kube's lookupAttribute has it. */
static const dra_attr_t *al_attr(const dra_device_t *d, const char *qualified)
{
    for (int i = 0; i < d->nattrs; i++)
        if (d->attrs[i].name && strcmp(d->attrs[i].name, qualified) == 0)
            return &d->attrs[i];
    const char *slash = strchr(qualified, '/');
    if (!slash || !d->driver || strlen(d->driver) != (size_t)(slash - qualified) ||
        strncmp(d->driver, qualified, (size_t)(slash - qualified)) != 0)
        return NULL;
    for (int i = 0; i < d->nattrs; i++)
        if (d->attrs[i].name && strcmp(d->attrs[i].name, slash + 1) == 0)
            return &d->attrs[i];
    return NULL;
}

/* One kind and one value; versions compare as strings (semver's minimal
 * form makes equal versions equal strings, kube compares them so). */
static int al_attr_eq(const dra_attr_t *x, const dra_attr_t *y)
{
    if (x->kind != y->kind)
        return 0;
    switch (x->kind) {
    case DRA_ATTR_INT: return x->i == y->i;
    case DRA_ATTR_BOOL: return !x->b == !y->b;
    case DRA_ATTR_STRING:
    case DRA_ATTR_VERSION: return x->s && y->s && strcmp(x->s, y->s) == 0;
    }
    return 0;
}

/* Whether a constraint covers a slot: no names means every request; a
 * parent's name covers its alternatives. */
static int al_cons_applies(const dra_constraint_t *c, const al_slot_t *s)
{
    if (c->nrequests == 0)
        return 1;
    for (int i = 0; i < c->nrequests; i++)
        if (c->requests[i] && (strcmp(c->requests[i], s->top->name) == 0 || strcmp(c->requests[i], s->name) == 0))
            return 1;
    return 0;
}

static void al_cons_remove_upto(al_t *a, int slot, int upto)
{
    const al_slot_t *s = &a->slots[slot];
    const dra_claim_req_t *cl = &a->claims[s->claim];
    for (int j = 0; j < upto; j++)
        if (al_cons_applies(&cl->cons[j], s))
            a->cons[a->cons0[s->claim] + j].n--;
}

/* Adds candidate c to the claim's constraints; 0 (nothing changed) when
 * one of them rejects it. */
static int al_cons_add(al_t *a, int slot, int c)
{
    const al_slot_t *s = &a->slots[slot];
    const dra_claim_req_t *cl = &a->claims[s->claim];
    for (int j = 0; j < cl->ncons; j++) {
        if (!al_cons_applies(&cl->cons[j], s))
            continue;
        al_cons_t *st = &a->cons[a->cons0[s->claim] + j];
        const dra_attr_t *v = cl->cons[j].attr ? al_attr(a->cands[c].dev, cl->cons[j].attr) : NULL;
        if (!v || (st->n > 0 && !al_attr_eq(st->first, v))) {
            al_cons_remove_upto(a, slot, j);
            return 0;
        }
        if (st->n++ == 0)
            st->first = v;
    }
    return 1;
}

/* Whether candidate c may go to the slot now (kube's "in use" checks):
 * admin access takes any device its own claim has not taken; otherwise a
 * device in use or taken in this allocation is out, unless it allows
 * multiple allocations. *blocked is set when what the earlier requests
 * took is the reason (the slot's own picks come before c, never at it). */
static int al_usable(const al_t *a, int slot, int c, int *blocked)
{
    const al_slot_t *s = &a->slots[slot];
    if (s->req->admin) {
        const al_pick_t *p = &a->picks[s->claim * DRA_RESULTS_MAX];
        for (int i = 0; i < a->npicks[s->claim]; i++)
            if (p[i].cand == c) {
                *blocked = 1;
                return 0;
            }
        return 1;
    }
    if (a->cands[c].dev->multi)
        return 1;
    if (a->cands[c].in_use)
        return 0;
    if (a->taken[c] > 0) {
        *blocked = 1;
        return 0;
    }
    return 1;
}

/* The callback's answer for (slot, c), asked once. */
static int al_elig(al_t *a, int slot, int c)
{
    signed char *e = &a->elig[(size_t)slot * (size_t)a->ncands + (size_t)c];
    if (*e >= 0)
        return *e;
    if (al_step(a) < 0)
        return -1;
    char err[256] = "";
    const dra_device_t *d = a->cands[c].dev;
    int r = a->eligible(a->ud, a->slots[slot].req, d, err, sizeof(err));
    if (r < 0) {
        const al_slot_t *s = &a->slots[slot];
        al_why(a, "claim %s, request %s: a selector failed on device %s/%s/%s: %s", a->claims[s->claim].key, s->name,
               d->driver, d->pool, d->name, err[0] ? err : "runtime error");
        return -1;
    }
    *e = r > 0;
    return *e;
}

static void al_push(al_t *a, int slot, int c)
{
    int ci = a->slots[slot].claim;
    a->picks[ci * DRA_RESULTS_MAX + a->npicks[ci]++] = (al_pick_t){ .cand = c, .slot = slot };
    a->taken[c]++;
}

static void al_pop(al_t *a, int slot, int c)
{
    a->npicks[a->slots[slot].claim]--;
    a->taken[c]--;
}

static void al_blame(al_t *a, int slot)
{
    if (slot > a->blame)
        a->blame = slot;
}

static int al_slot(al_t *a, int slot);

/* The request after (ci, ri-1): the next of the claim, else the next
 * claim's first; 1 when every claim is done. firstAvailable alternatives
 * are tried in order, each with everything after it; the request fails
 * whatever came before (AL_NEVER) when each alternative does. */
static int al_next(al_t *a, int ci, int ri)
{
    while (ci < a->nclaims && ri >= a->claims[ci].nreqs) {
        ci++;
        ri = 0;
    }
    if (ci == a->nclaims)
        return 1;
    const dra_request_t *top = &a->claims[ci].reqs[ri];
    int s0 = a->first[a->ord0[ci] + ri];
    if (top->nsubs == 0)
        return al_slot(a, s0);
    int never = 1;
    for (int si = 0; si < top->nsubs; si++) {
        int r = al_slot(a, s0 + si);
        if (r == 1 || r < 0)
            return r;
        never = never && r == AL_NEVER;
    }
    return never ? AL_NEVER : 0;
}

/* allocationMode All: every matching device of the node, or none at all
 * (kube: no matching device, or one that cannot be taken, is no solution;
 * a constraint that refuses one of them is the claim's error). */
static int al_fill_all(al_t *a, int slot, al_trace_t *t)
{
    const al_slot_t *s = &a->slots[slot];
    int n = 0;
    for (int c = 0; c < a->ncands; c++) {
        int e = al_elig(a, slot, c);
        if (e < 0)
            return -1;
        n += e;
    }
    if (n == 0)
        return 0;
    if (a->npicks[s->claim] + n > DRA_RESULTS_MAX) {
        t->dep = a->npicks[s->claim] > 0;
        return 0;
    }
    int pushed = 0, r = 0;
    for (int c = 0; c < a->ncands && r == 0; c++) {
        if (al_step(a) < 0)
            r = -1;
        else if (!a->elig[(size_t)slot * (size_t)a->ncands + (size_t)c])
            continue;
        else if (!al_usable(a, slot, c, &t->blocked))
            break;
        else if (!al_cons_add(a, slot, c)) {
            const dra_device_t *d = a->cands[c].dev;
            al_why(a,
                   "claim %s, request %s: cannot add device %s/%s/%s because a claim constraint would not be satisfied",
                   a->claims[s->claim].key, s->name, d->driver, d->pool, d->name);
            r = -1;
        } else {
            al_push(a, slot, c);
            pushed++;
        }
    }
    if (r == 0 && pushed == n) {
        t->done = 1;
        r = al_next(a, s->claim, s->ri + 1);
    }
    if (r == 1)
        return 1;
    while (pushed-- > 0) {
        const al_pick_t *p = &a->picks[s->claim * DRA_RESULTS_MAX + a->npicks[s->claim] - 1];
        int c = p->cand;
        al_pop(a, slot, c);
        al_cons_remove_upto(a, slot, a->claims[s->claim].ncons);
    }
    return r;
}

/* ExactCount: the slot's devices k.. from candidates from..; combinations
 * in candidate order, which finds the same first solution as kube's
 * device-by-device loop (a solution's devices in any order are a solution)
 * without trying each set's permutations. */
static int al_fill(al_t *a, int slot, int64_t k, int from, al_trace_t *t)
{
    const al_slot_t *s = &a->slots[slot];
    int64_t need = s->req->count;
    if (k == need) {
        t->done = 1;
        return al_next(a, s->claim, s->ri + 1);
    }
    if (k == 0 && a->npicks[s->claim] + need > DRA_RESULTS_MAX) {
        t->dep = a->npicks[s->claim] > 0;
        return 0;
    }
    for (int c = from; (int64_t)(a->ncands - c) >= need - k; c++) {
        if (al_step(a) < 0)
            return -1;
        if (!al_usable(a, slot, c, &t->blocked))
            continue;
        int e = al_elig(a, slot, c);
        if (e < 0)
            return -1;
        if (!e || !al_cons_add(a, slot, c))
            continue;
        al_push(a, slot, c);
        int r = al_fill(a, slot, k + 1, c + 1, t);
        if (r == 1)
            return 1;
        al_pop(a, slot, c);
        al_cons_remove_upto(a, slot, a->claims[s->claim].ncons);
        /* AL_NEVER from a later request: no other choice here helps. */
        if (r < 0 || r == AL_NEVER)
            return r;
    }
    return 0;
}

/* Whether one of the slot's constraints already holds a value (from the
 * claim's earlier requests). */
static int al_cons_held(const al_t *a, int slot)
{
    const al_slot_t *s = &a->slots[slot];
    const dra_claim_req_t *cl = &a->claims[s->claim];
    for (int j = 0; j < cl->ncons; j++)
        if (a->cons[a->cons0[s->claim] + j].n > 0 && al_cons_applies(&cl->cons[j], s))
            return 1;
    return 0;
}

/* Whether a device the earlier requests took would have matched the
 * slot (judged now if it was not: a failure path, once per device). */
static int al_blocked_match(al_t *a, int slot)
{
    for (int c = 0; c < a->ncands; c++) {
        int blocked = 0;
        if (al_usable(a, slot, c, &blocked) || !blocked)
            continue;
        int e = al_elig(a, slot, c);
        if (e != 0)
            return e;
    }
    return 0;
}

/* Fills one slot and everything after it. A slot that never got its
 * devices, with nothing the earlier requests took or constrained in the
 * way, fails whatever they chose: AL_NEVER ends the search there (kube
 * would try every earlier choice first; the answer is the same). */
static int al_slot(al_t *a, int slot)
{
    al_trace_t t = { .dep = al_cons_held(a, slot) };
    int r = a->slots[slot].req->mode == DRA_MODE_ALL ? al_fill_all(a, slot, &t) : al_fill(a, slot, 0, 0, &t);
    if (r == 0 && !t.dep && !t.done) {
        int m = t.blocked ? al_blocked_match(a, slot) : 0;
        if (m < 0)
            return -1;
        if (m == 0)
            r = AL_NEVER;
    }
    if (r == 0 || r == AL_NEVER)
        al_blame(a, slot);
    return r;
}

/* Checks a request as kube's validateDeviceRequest and the claim's size
 * check do before searching; -1 with why when kube would refuse it. */
static int al_validate(al_t *a, int ci)
{
    const dra_claim_req_t *cl = &a->claims[ci];
    int64_t min_total = 0;
    for (int ri = 0; ri < cl->nreqs; ri++) {
        const dra_request_t *top = &cl->reqs[ri];
        int64_t min = INT64_MAX;
        for (int si = 0; si < (top->nsubs ? top->nsubs : 1); si++) {
            const dra_request_t *r = top->nsubs ? &top->subs[si] : top;
            int64_t n = r->mode == DRA_MODE_ALL ? 0 : r->count;
            if (r->mode != DRA_MODE_ALL && r->count < 1) {
                al_why(a, "claim %s, request %s: count %lld is not positive", cl->key, r->name, (long long)r->count);
                return -1;
            }
            if (n < min)
                min = n;
        }
        min_total += min;
    }
    if (min_total > DRA_RESULTS_MAX) {
        al_why(a, "claim %s: number of requested devices %lld exceeds the claim limit of %d", cl->key,
               (long long)min_total, DRA_RESULTS_MAX);
        return -1;
    }
    return 0;
}

static void al_slot_name(al_slot_t *s)
{
    if (s->req == s->top || strchr(s->req->name ? s->req->name : "", '/'))
        snprintf(s->name, sizeof(s->name), "%s", s->req->name ? s->req->name : "");
    else
        snprintf(s->name, sizeof(s->name), "%s/%s", s->top->name ? s->top->name : "", s->req->name ? s->req->name : "");
}

static void al_fini(al_t *a)
{
    free(a->heap);
}

/* The offset of the next n items of sz bytes in the arena (16-aligned). */
static size_t al_carve(size_t *off, size_t n, size_t sz)
{
    size_t r = *off;
    *off += (n * sz + 15) & ~(size_t)15;
    return r;
}

/* Lays the slots, caches and stacks out in the block at base (NULL: only
 * measures); returns its size. */
static size_t al_layout(al_t *a, char *base, int nreq, int ncons)
{
    size_t off = 0;
    size_t slots = al_carve(&off, (size_t)a->nslots, sizeof(al_slot_t));
    size_t first = al_carve(&off, (size_t)nreq, sizeof(int));
    size_t ord0 = al_carve(&off, (size_t)a->nclaims, sizeof(int));
    size_t elig = al_carve(&off, (size_t)a->nslots * (size_t)a->ncands, 1);
    size_t taken = al_carve(&off, (size_t)a->ncands, sizeof(int));
    size_t picks = al_carve(&off, (size_t)a->nclaims * DRA_RESULTS_MAX, sizeof(al_pick_t));
    size_t npicks = al_carve(&off, (size_t)a->nclaims, sizeof(int));
    size_t cons = al_carve(&off, (size_t)ncons, sizeof(al_cons_t));
    size_t cons0 = al_carve(&off, (size_t)a->nclaims, sizeof(int));
    if (base) {
        a->slots = (al_slot_t *)(base + slots);
        a->first = (int *)(base + first);
        a->ord0 = (int *)(base + ord0);
        a->elig = (signed char *)(base + elig);
        a->taken = (int *)(base + taken);
        a->picks = (al_pick_t *)(base + picks);
        a->npicks = (int *)(base + npicks);
        a->cons = (al_cons_t *)(base + cons);
        a->cons0 = (int *)(base + cons0);
    }
    return off;
}

/* The slots, caches and stacks (on the stack when the pod is small, as
 * it usually is); -1 (why) when memory runs out. */
static int al_init(al_t *a)
{
    int nreq = 0, ncons = 0;
    for (int ci = 0; ci < a->nclaims; ci++) {
        nreq += a->claims[ci].nreqs;
        ncons += a->claims[ci].ncons;
        for (int ri = 0; ri < a->claims[ci].nreqs; ri++)
            a->nslots += a->claims[ci].reqs[ri].nsubs ? a->claims[ci].reqs[ri].nsubs : 1;
    }
    size_t size = al_layout(a, NULL, nreq, ncons);
    char *base = a->local;
    if (size > a->nlocal && !(base = a->heap = malloc(size))) {
        al_why(a, "device allocation: out of memory");
        return -1;
    }
    memset(base, 0, size);
    al_layout(a, base, nreq, ncons);
    memset(a->elig, -1, (size_t)a->nslots * (size_t)a->ncands);
    int ord = 0, slot = 0, con = 0;
    for (int ci = 0; ci < a->nclaims; ci++) {
        a->ord0[ci] = ord;
        a->cons0[ci] = con;
        con += a->claims[ci].ncons;
        for (int ri = 0; ri < a->claims[ci].nreqs; ri++, ord++) {
            const dra_request_t *top = &a->claims[ci].reqs[ri];
            a->first[ord] = slot;
            for (int si = 0; si < (top->nsubs ? top->nsubs : 1); si++, slot++) {
                al_slot_t *s = &a->slots[slot];
                s->top = top;
                s->req = top->nsubs ? &top->subs[si] : top;
                s->claim = ci;
                s->ri = ri;
                al_slot_name(s);
            }
        }
    }
    return 0;
}

/* The slot's matching devices and how many of them are in use, with
 * errors counted as no match (only a message depends on it). */
static void al_count(al_t *a, int slot, int *match, int *inuse)
{
    *match = *inuse = 0;
    for (int c = 0; c < a->ncands; c++) {
        signed char *e = &a->elig[(size_t)slot * (size_t)a->ncands + (size_t)c];
        if (*e < 0) {
            char err[64];
            *e = a->eligible(a->ud, a->slots[slot].req, a->cands[c].dev, err, sizeof(err)) > 0;
        }
        if (!*e)
            continue;
        (*match)++;
        if (a->cands[c].in_use && !a->cands[c].dev->multi)
            (*inuse)++;
    }
}

/* Whether the slot could be met alone on the node. */
static int al_fits_alone(const dra_request_t *r, int match, int inuse)
{
    int avail = r->admin ? match : match - inuse;
    if (r->mode == DRA_MODE_ALL)
        return match > 0 && avail == match;
    return avail >= r->count;
}

/* why for a slot: what it asks, what the node has; together: it fits
 * alone, so the pod's other requests or the claim's constraints are why. */
static void al_explain_slot(al_t *a, int slot, int match, int inuse, int together)
{
    const al_slot_t *s = &a->slots[slot];
    const dra_request_t *r = s->req;
    if (r->mode == DRA_MODE_ALL)
        al_why(a, "claim %s, request %s: all devices of class %s", a->claims[s->claim].key, s->name,
               r->class_name ? r->class_name : "");
    else
        al_why(a, "claim %s, request %s: %lld device%s of class %s", a->claims[s->claim].key, s->name,
               (long long)r->count, r->count == 1 ? "" : "s", r->class_name ? r->class_name : "");
    for (int i = 0; i < r->nsel; i++)
        al_why_add(a, "%s%s%s%s", i == 0 ? " matching " : " && ", r->nsel > 1 ? "(" : "",
                   r->sel_text && r->sel_text[i] ? r->sel_text[i] : "?", r->nsel > 1 ? ")" : "");
    al_why_add(a, "; the node has %d", match);
    if (inuse > 0)
        al_why_add(a, " (%d in use)", inuse);
    if (!together)
        return;
    const dra_claim_req_t *cl = &a->claims[s->claim];
    int alone = a->nclaims == 1 && cl->nreqs == 1;
    for (int j = 0; j < cl->ncons; j++)
        if (al_cons_applies(&cl->cons[j], s)) {
            al_why_add(a, ", but not with matchAttribute %s%s", cl->cons[j].attr ? cl->cons[j].attr : "",
                       alone ? "" : " and the pod's other requests");
            return;
        }
    al_why_add(a, ", but not together with the pod's other requests");
}

/* why for "no allocation": the first request that cannot be met on its
 * own (a firstAvailable request: its last alternative), else the deepest
 * request the search could not fill. */
static void al_explain(al_t *a)
{
    if (!a->why || a->whylen == 0)
        return;
    int match, inuse;
    for (int ci = 0; ci < a->nclaims; ci++)
        for (int ri = 0; ri < a->claims[ci].nreqs; ri++) {
            const dra_request_t *top = &a->claims[ci].reqs[ri];
            int s0 = a->first[a->ord0[ci] + ri], n = top->nsubs ? top->nsubs : 1, fits = 0;
            for (int si = 0; si < n && !fits; si++) {
                al_count(a, s0 + si, &match, &inuse);
                fits = al_fits_alone(a->slots[s0 + si].req, match, inuse);
            }
            if (!fits) {
                al_explain_slot(a, s0 + n - 1, match, inuse, 0);
                return;
            }
        }
    if (a->blame >= 0) {
        al_count(a, a->blame, &match, &inuse);
        al_explain_slot(a, a->blame, match, inuse, 1);
        return;
    }
    al_why(a, "the pod's claims cannot be allocated together on the node");
}

/* The picks as the caller's results; -1 when memory runs out. */
static int al_output(al_t *a, dra_alloc_t *out)
{
    int total = 0;
    for (int ci = 0; ci < a->nclaims; ci++)
        total += a->npicks[ci];
    /* One block: the claims, then their results (dra_alloc_free frees it). */
    size_t head = ((size_t)a->nclaims * sizeof(*out->claim) + 15) & ~(size_t)15;
    char *block = calloc(1, head + (size_t)total * sizeof(dra_result_t) + 1);
    if (!block)
        return -1;
    out->claim = (void *)block;
    out->nclaims = a->nclaims;
    dra_result_t *res = (dra_result_t *)(block + head);
    for (int ci = 0; ci < a->nclaims; ci++) {
        int n = a->npicks[ci];
        out->claim[ci].results = n ? res : NULL;
        out->claim[ci].n = n;
        for (int i = 0; i < n; i++, res++) {
            const al_pick_t *p = &a->picks[ci * DRA_RESULTS_MAX + i];
            memcpy(res->request, a->slots[p->slot].name, sizeof(res->request));
            res->dev = a->cands[p->cand].dev;
            res->admin = a->slots[p->slot].req->admin != 0;
        }
    }
    return 0;
}

int dra_allocate_budget(const dra_claim_req_t *claims, int nclaims, const dra_candidate_t *cands, int ncands,
                        dra_eligible_fn eligible, void *ud, int64_t budget, dra_alloc_t *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof(*out));
    if (why && whylen)
        why[0] = '\0';
    _Alignas(16) char local[3072];
    al_t a = { .claims = claims,
               .nclaims = nclaims,
               .cands = cands,
               .ncands = ncands,
               .eligible = eligible,
               .ud = ud,
               .budget = budget,
               .blame = -1,
               .why = why,
               .whylen = whylen,
               .local = local,
               .nlocal = sizeof(local) };
    int rc = al_init(&a);
    for (int ci = 0; ci < nclaims && rc == 0; ci++)
        rc = al_validate(&a, ci);
    if (rc == 0) {
        int r = al_next(&a, 0, 0);
        if (r == 1) {
            if (al_output(&a, out) < 0) {
                dra_alloc_free(out);
                al_why(&a, "device allocation: out of memory");
                rc = -1;
            }
        } else if (r == 0 || r == AL_NEVER) {
            al_explain(&a);
            rc = 1;
        } else {
            rc = -1;
        }
    }
    out->steps = a.steps;
    al_fini(&a);
    return rc;
}

int dra_allocate(const dra_claim_req_t *claims, int nclaims, const dra_candidate_t *cands, int ncands,
                 dra_eligible_fn eligible, void *ud, dra_alloc_t *out, char *why, size_t whylen)
{
    return dra_allocate_budget(claims, nclaims, cands, ncands, eligible, ud, DRA_ALLOC_BUDGET, out, why, whylen);
}

void dra_alloc_free(dra_alloc_t *a)
{
    if (!a)
        return;
    free(a->claim); /* the results are in its block */
    a->claim = NULL;
    a->nclaims = 0;
}
