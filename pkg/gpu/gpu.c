/* gpu.c -- shared GPUs: requests parsed from annotations, one node's slots
 * and the fractions on them, best-fit choice of slots. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/podext.h"
#include "gpu/gpu.h"
#include "util/util.h"
#include "util/lockorder.h"

/* Bounds on untrusted numbers: 16 TiB of GPU memory is far beyond any
 * device, and keeps every product below in int64. */
#define GPU_MAX_MIB (1LL << 24)

typedef struct gpu_slot {
    int64_t ppm; /* fractions' sum, millionths of the device */
    int64_t mib; /* memory requests' sum */
    int nfrac;   /* fractions using the slot */
    int nres;    /* reservation pods holding it */
} gpu_slot_t;

/* What one fraction took, so its removal mirrors its addition. */
typedef struct gpu_alloc {
    char *uid;
    uint64_t mask;
    int64_t ppm, mib; /* on each slot of mask */
} gpu_alloc_t;

struct gpu_node {
    gpu_slot_t slot[GPU_MAX_DEVICES];
    gpu_alloc_t *allocs;
    int nallocs, cap;
};

/* ------------------------------------------------------------ requests */

static const char *ann_str(json_t *ann, const char *key)
{
    json_t *v = json_is_object(ann) ? json_object_get(ann, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int set_err(gpu_req_t *r, const char *fmt, const char *a, const char *b)
{
    char buf[256];
    snprintf(buf, sizeof(buf), fmt, a, b ? b : "");
    free(r->err);
    r->err = util_strdup(buf);
    return -1;
}

/* A decimal in (0,1), kept in millionths. */
static int parse_fraction(const char *s, int64_t *ppm)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v <= 0 || v >= 1)
        return -1;
    int64_t p = llround(v * GPU_PPM);
    if (p <= 0 || p >= GPU_PPM)
        return -1;
    *ppm = p;
    return 0;
}

/* A positive decimal integer no larger than max. */
static int parse_count(const char *s, int64_t max, int64_t *out)
{
    int64_t v = 0;
    if (!s || !*s)
        return -1;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return -1;
        v = v * 10 + (*c - '0');
        if (v > max)
            return -1;
    }
    if (v <= 0)
        return -1;
    *out = v;
    return 0;
}

int gpu_mask_parse(const char *s, uint64_t *mask)
{
    uint64_t m = 0;
    const char *c = s;
    if (!s || !*s)
        return -1;
    while (*c) {
        int64_t v = 0;
        int digits = 0;
        while (*c >= '0' && *c <= '9' && digits < 3) {
            v = v * 10 + (*c++ - '0');
            digits++;
        }
        if (digits == 0 || v >= GPU_MAX_DEVICES)
            return -1;
        m |= 1ULL << v;
        if (*c == ',')
            c++;
        else if (*c)
            return -1;
    }
    *mask = m;
    return 0;
}

void gpu_mask_format(uint64_t mask, char *buf, size_t len)
{
    size_t off = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < GPU_MAX_DEVICES; i++) {
        if (!(mask & (1ULL << i)))
            continue;
        int w = snprintf(buf + off, len - off, "%s%d", off ? "," : "", i);
        if (w < 0 || (size_t)w >= len - off)
            return;
        off += (size_t)w;
    }
}

static gpu_req_t *parse_reservation(json_t *ann)
{
    uint64_t mask = 0;
    const char *idx = ann_str(ann, GPU_ANN_INDEX);
    /* A malformed reservation pod is only an ordinary pod asking for a GPU. */
    if (!idx || gpu_mask_parse(idx, &mask) != 0 || (mask & (mask - 1)) != 0)
        return NULL;
    gpu_req_t *r = util_xcalloc(1, sizeof(*r));
    r->reservation = 1;
    r->ndev = 1;
    while (!(mask & (1ULL << r->slot)))
        r->slot++;
    return r;
}

/* The reservation namespace, written at start-up and read by every parse
 * of a labelled pod, on any thread. A namespace name is at most 63 bytes. */
static pthread_mutex_t res_ns_mu = PTHREAD_MUTEX_INITIALIZER;
static char res_ns[64] = GPU_RESERVATION_NS;

void gpu_set_reservation_namespace(const char *ns)
{
    lo_mutex_lock(&res_ns_mu, LO_GPU_NS);
    /* No namespace, or one too long to exist: nothing is trusted. */
    if (!ns || strlen(ns) >= sizeof(res_ns))
        ns = "";
    snprintf(res_ns, sizeof(res_ns), "%s", ns);
    lo_mutex_unlock(&res_ns_mu, LO_GPU_NS);
}

static int in_reservation_namespace(const char *ns)
{
    lo_mutex_lock(&res_ns_mu, LO_GPU_NS);
    int in = ns && res_ns[0] && strcmp(ns, res_ns) == 0;
    lo_mutex_unlock(&res_ns_mu, LO_GPU_NS);
    return in;
}

/* Anyone who may create a pod may label it, so the label alone is no
 * proof: a user's pod would hide its GPUs from the node's count (kubelet
 * then rejects the next pod), escape quota and preemption, and be deleted
 * by the housekeeper. The proof no user can forge is the namespace: the
 * Helm chart (charts/ai-scheduler/templates/rbac.yaml) grants pods
 * create there only to the scheduler's ServiceAccount, through a Role in
 * that namespace alone. The rest is what reservation_body
 * (scheduler/gpu.c) writes, and it keeps apart other pods of that
 * namespace (by default the release's, where the scheduler itself runs):
 * the managed-by label, the name prefix, and the node annotation naming
 * the node the pod was created bound to. Reservation pods made by earlier
 * versions carry all of it, so an upgrade keeps them. */
int gpu_reservation_trusted(const pod_t *p, json_t *ann)
{
    const char *res = labels_get(&p->labels, GPU_LABEL_RESERVATION);
    const char *by = labels_get(&p->labels, GPU_LABEL_MANAGED_BY);
    const char *node = ann_str(ann, GPU_ANN_RESERVATION_NODE);
    return res && strcmp(res, "true") == 0 && in_reservation_namespace(p->ns) && by && strcmp(by, GPU_MANAGER) == 0 &&
           p->name && strncmp(p->name, GPU_RESERVATION_PREFIX, strlen(GPU_RESERVATION_PREFIX)) == 0 && node &&
           p->node_name && p->node_name[0] && strcmp(node, p->node_name) == 0;
}

gpu_req_t *gpu_req_parse(const pod_t *p, json_t *ann)
{
    /* An untrusted reservation label means nothing: the pod is parsed (and
     * counted, charged, preempted) as any other. */
    if (gpu_reservation_trusted(p, ann))
        return parse_reservation(ann);
    const resources_t *requests = &p->requests;
    const char *frac = ann_str(ann, GPU_ANN_FRACTION), *mem = ann_str(ann, GPU_ANN_MEMORY);
    const char *ndev = ann_str(ann, GPU_ANN_NUM_DEVICES);
    json_t *annobj = json_is_object(ann) ? ann : NULL;
    int wrong_type = annobj && ((json_object_get(annobj, GPU_ANN_FRACTION) && !frac) ||
                                (json_object_get(annobj, GPU_ANN_MEMORY) && !mem) ||
                                (json_object_get(annobj, GPU_ANN_NUM_DEVICES) && !ndev));
    if (!frac && !mem && !ndev && !wrong_type)
        return NULL;
    gpu_req_t *r = util_xcalloc(1, sizeof(*r));
    r->ndev = 1;
    int64_t n = 0;
    if (wrong_type)
        set_err(r, "gpu sharing annotations must be strings%s%s", "", NULL);
    else if (frac && mem)
        set_err(r, "annotations %s and %s are exclusive", GPU_ANN_FRACTION, GPU_ANN_MEMORY);
    else if (frac && parse_fraction(frac, &r->frac_ppm) != 0)
        set_err(r, "invalid " GPU_ANN_FRACTION " \"%.12s\": must be a number between 0 and 1 (exclusive)%s", frac,
                NULL);
    else if (mem && parse_count(mem, GPU_MAX_MIB, &r->mem_mib) != 0)
        set_err(r, "invalid " GPU_ANN_MEMORY " \"%.12s\": must be a positive whole number of MiB%s", mem, NULL);
    else if (!frac && !mem)
        set_err(r, "annotation %s needs %s or " GPU_ANN_MEMORY, GPU_ANN_NUM_DEVICES, GPU_ANN_FRACTION);
    else if (ndev && parse_count(ndev, GPU_MAX_DEVICES, &n) != 0)
        set_err(r, "invalid " GPU_ANN_NUM_DEVICES " \"%.12s\": must be from 1 to 64%s", ndev, NULL);
    else if (res_get_scalar(requests, RES_GPU) > 0)
        set_err(r, "%s/%s and a " RES_GPU_NAME " request are exclusive", GPU_ANN_FRACTION, GPU_ANN_MEMORY);
    if (n > 0)
        r->ndev = (int)n;
    const char *idx = ann_str(ann, GPU_ANN_INDEX);
    uint64_t mask = 0;
    /* Only a mask with exactly ndev slots is the scheduler's own writing. */
    if (!r->err && idx && gpu_mask_parse(idx, &mask) == 0 && __builtin_popcountll(mask) == r->ndev)
        r->index_mask = mask;
    return r;
}

void gpu_req_free(gpu_req_t *r)
{
    if (!r)
        return;
    free(r->err);
    free(r);
}

int gpu_is_fraction(const pod_t *p)
{
    const gpu_req_t *r = gpu_req_of(p);
    return r && !r->reservation && !r->err;
}

int gpu_is_reservation(const pod_t *p)
{
    const gpu_req_t *r = gpu_req_of(p);
    return r && r->reservation;
}

int64_t gpu_node_memory(const node_t *n)
{
    const char *v = n ? labels_get(&n->labels, GPU_LABEL_MEMORY) : NULL;
    int64_t m = 0;
    if (!v || parse_count(v, GPU_MAX_MIB, &m) != 0)
        return 0;
    return m;
}

double gpu_share(const pod_t *p, int64_t mem_mib)
{
    if (!gpu_is_fraction(p))
        return 0;
    const gpu_req_t *r = gpu_req_of(p);
    double one = r->frac_ppm ? (double)r->frac_ppm / GPU_PPM : mem_mib > 0 ? (double)r->mem_mib / (double)mem_mib : 0;
    if (one > 1)
        one = 1;
    return one * r->ndev;
}

/* --------------------------------------------------------------- slots */

/* A slot in use: fractions on it. A reservation pod alone holds the GPU
 * only until it is collected or a whole-GPU pod needs the GPU (its PreBind
 * deletes it), so it is not counted; it is the preferred slot to reuse. */
static int slot_shared(const gpu_slot_t *s)
{
    return s->nfrac > 0;
}

/* Exact integer arithmetic in millionths x MiB when the memory is known. */
static int slot_fits(const gpu_slot_t *s, int64_t M, int64_t ppm, int64_t mib)
{
    if (M > 0)
        return (s->ppm + ppm) * M + (s->mib + mib) * GPU_PPM <= (int64_t)GPU_PPM * M;
    if (mib > 0 || s->mib > 0)
        return 0;
    return s->ppm + ppm <= GPU_PPM;
}

/* Use of the slot after adding (ppm, mib), in millionths. */
static int64_t slot_fill(const gpu_slot_t *s, int64_t M, int64_t ppm, int64_t mib)
{
    if (M > 0)
        return ((s->ppm + ppm) * M + (s->mib + mib) * GPU_PPM) / M;
    return s->ppm + ppm;
}

static int node_gpus(const node_t *n)
{
    int64_t c = n ? res_get_scalar(&n->allocatable, RES_GPU) : 0;
    return c > 1000000 ? 1000000 : (int)c;
}

int gpu_node_shared(const gpu_node_t *g)
{
    int n = 0;
    for (int i = 0; g && i < GPU_MAX_DEVICES; i++)
        n += slot_shared(&g->slot[i]);
    return n;
}

int gpu_node_reserved(const gpu_node_t *g)
{
    int n = 0;
    for (int i = 0; g && i < GPU_MAX_DEVICES; i++)
        n += g->slot[i].nres > 0 || g->slot[i].nfrac > 0;
    return n;
}

uint64_t gpu_node_idle_reserved(const gpu_node_t *g)
{
    uint64_t m = 0;
    for (int i = 0; g && i < GPU_MAX_DEVICES; i++)
        if (g->slot[i].nres > 0 && g->slot[i].nfrac == 0)
            m |= 1ULL << i;
    return m;
}

uint64_t gpu_node_unreserved(const gpu_node_t *g)
{
    uint64_t m = 0;
    for (int i = 0; g && i < GPU_MAX_DEVICES; i++)
        if (g->slot[i].nfrac > 0 && g->slot[i].nres == 0)
            m |= 1ULL << i;
    return m;
}

double gpu_node_slot_use(const gpu_node_t *g, const node_t *node, int slot)
{
    if (!g || slot < 0 || slot >= GPU_MAX_DEVICES)
        return 0;
    return (double)slot_fill(&g->slot[slot], gpu_node_memory(node), 0, 0) / GPU_PPM;
}

typedef struct cand {
    int slot;
    int64_t fill;
} cand_t;

static int cand_cmp(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->fill != y->fill)
        return x->fill > y->fill ? -1 : 1;
    return x->slot - y->slot;
}

/* Best fit: the fullest shared slots the request fits, then, while whole
 * GPUs remain, idle reserved slots (their reservation is reused), then
 * untouched ones, lowest first. 1 with *mask and the fill of the fullest
 * shared slot taken (-1 when only new slots) in *best_fill. */
static int choose(const gpu_node_t *g, const node_t *node, int64_t gpu_used, const gpu_req_t *r, uint64_t *mask,
                  int64_t *best_fill, const char **reason, int *unresolvable)
{
    int C = node_gpus(node);
    int64_t M = gpu_node_memory(node);
    *unresolvable = 0;
    *reason = NULL;
    *best_fill = -1;
    if (C <= 0) {
        *reason = "node(s) had no GPU to share";
        *unresolvable = 1;
        return 0;
    }
    if (r->mem_mib > 0 && M == 0) {
        *reason = "node(s) didn't report GPU memory (label " GPU_LABEL_MEMORY ")";
        *unresolvable = 1;
        return 0;
    }
    if (r->mem_mib > M && M > 0) {
        *reason = "node(s) had no GPU with enough memory";
        *unresolvable = 1;
        return 0;
    }
    if (r->ndev > C || r->ndev > GPU_MAX_DEVICES) {
        *reason = "node(s) had fewer GPUs than gpu-fraction-num-devices";
        *unresolvable = 1;
        return 0;
    }
    cand_t c[GPU_MAX_DEVICES];
    int nc = 0;
    for (int i = 0; g && i < GPU_MAX_DEVICES; i++) {
        const gpu_slot_t *s = &g->slot[i];
        if (slot_shared(s) && slot_fits(s, M, r->frac_ppm, r->mem_mib))
            c[nc++] = (cand_t){ i, slot_fill(s, M, r->frac_ppm, r->mem_mib) };
    }
    qsort(c, (size_t)nc, sizeof(c[0]), cand_cmp);
    uint64_t m = 0;
    int taken = 0;
    for (int i = 0; i < nc && taken < r->ndev; i++, taken++) {
        m |= 1ULL << c[i].slot;
        if (i == 0)
            *best_fill = c[i].fill;
    }
    int64_t room = C - gpu_used;
    int lim = C < GPU_MAX_DEVICES ? C : GPU_MAX_DEVICES;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < lim && taken < r->ndev && room > 0; i++) {
            const gpu_slot_t *s = g ? &g->slot[i] : NULL;
            if (s && (slot_shared(s) || (pass == 0) != (s->nres > 0)))
                continue;
            if (!s && pass == 0)
                break;
            m |= 1ULL << i;
            taken++;
            room--;
        }
    }
    if (taken < r->ndev) {
        *reason = "node(s) had no free GPU to share";
        return 0;
    }
    *mask = m;
    return 1;
}

int gpu_node_fit(const gpu_node_t *g, const node_t *node, int64_t gpu_used, const pod_t *p, uint64_t *mask,
                 const char **reason, int *unresolvable)
{
    uint64_t m = 0;
    int64_t fill;
    int ok = choose(g, node, gpu_used, gpu_req_of(p), &m, &fill, reason, unresolvable);
    if (mask)
        *mask = ok ? m : 0;
    return ok;
}

int64_t gpu_node_score(const gpu_node_t *g, const node_t *node, int64_t gpu_used, const pod_t *p)
{
    uint64_t m;
    int64_t fill;
    const char *reason;
    int unres;
    if (!gpu_is_fraction(p) || !choose(g, node, gpu_used, gpu_req_of(p), &m, &fill, &reason, &unres))
        return 0;
    if (fill >= 0)
        return 50 + fill * 50 / GPU_PPM;
    int C = node_gpus(node);
    return C > 0 ? (gpu_used < C ? gpu_used : C) * 49 / C : 0;
}

/* ----------------------------------------------------------- accounting */

gpu_node_t *gpu_node_clone(const gpu_node_t *g)
{
    if (!g)
        return NULL;
    gpu_node_t *c = util_xmalloc(sizeof(*c));
    *c = *g;
    c->cap = g->nallocs;
    c->allocs = NULL;
    if (g->nallocs > 0) {
        c->allocs = util_xmalloc(sizeof(*c->allocs) * (size_t)g->nallocs);
        for (int i = 0; i < g->nallocs; i++) {
            c->allocs[i] = g->allocs[i];
            c->allocs[i].uid = util_strdup(g->allocs[i].uid);
        }
    }
    return c;
}

void gpu_node_free(gpu_node_t *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nallocs; i++)
        free(g->allocs[i].uid);
    free(g->allocs);
    free(g);
}

uint64_t gpu_node_mask_of(const gpu_node_t *g, const char *uid)
{
    for (int i = 0; g && i < g->nallocs; i++)
        if (strcmp(g->allocs[i].uid, uid) == 0)
            return g->allocs[i].mask;
    return 0;
}

static void apply(gpu_node_t *g, uint64_t mask, int64_t ppm, int64_t mib, int sign)
{
    for (int i = 0; i < GPU_MAX_DEVICES; i++) {
        if (!(mask & (1ULL << i)))
            continue;
        gpu_slot_t *s = &g->slot[i];
        s->ppm += sign * ppm;
        s->mib += sign * mib;
        s->nfrac += sign;
        if (s->nfrac <= 0)
            *s = (gpu_slot_t){ .nres = s->nres };
    }
}

static void add_fraction(gpu_node_t *g, const node_t *node, int64_t gpu_used, const pod_t *p)
{
    /* Only a bound pod's gpu-index is the scheduler's own writing (at bind);
     * on a pending pod it is the user's and carries no weight. */
    const gpu_req_t *r = gpu_req_of(p);
    uint64_t mask = p->node_name && p->node_name[0] ? r->index_mask : 0;
    if (!mask) {
        int64_t fill;
        const char *reason;
        int unres;
        /* An assumed fraction takes what Filter saw fit; one that no longer
         * fits (a bound pod from elsewhere) holds no slot. */
        if (!choose(g, node, gpu_used, r, &mask, &fill, &reason, &unres))
            mask = 0;
    }
    if (g->nallocs == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 4;
        g->allocs = util_xrealloc(g->allocs, sizeof(*g->allocs) * (size_t)g->cap);
    }
    g->allocs[g->nallocs++] = (gpu_alloc_t){ util_strdup(p->uid), mask, r->frac_ppm, r->mem_mib };
    apply(g, mask, r->frac_ppm, r->mem_mib, +1);
}

static void remove_fraction(gpu_node_t *g, const pod_t *p)
{
    for (int i = 0; i < g->nallocs; i++) {
        gpu_alloc_t *a = &g->allocs[i];
        if (strcmp(a->uid, p->uid) != 0)
            continue;
        apply(g, a->mask, a->ppm, a->mib, -1);
        free(a->uid);
        g->allocs[i] = g->allocs[--g->nallocs];
        return;
    }
}

int gpu_node_account(gpu_node_t **gp, const node_t *node, int64_t gpu_used, const pod_t *p, int sign)
{
    const gpu_req_t *r = gpu_req_of(p);
    if (!r || (r->err && !r->reservation))
        return 0;
    if (!*gp) {
        if (sign < 0)
            return 0;
        *gp = util_xcalloc(1, sizeof(**gp));
    }
    gpu_node_t *g = *gp;
    int before = gpu_node_shared(g);
    if (r->reservation) {
        gpu_slot_t *s = &g->slot[r->slot];
        s->nres += sign;
        if (s->nres < 0)
            s->nres = 0;
    } else if (sign > 0) {
        add_fraction(g, node, gpu_used, p);
    } else {
        remove_fraction(g, p);
    }
    return gpu_node_shared(g) - before;
}

/* ------------------------------------------------------------ registration */

int gpu_pod_ext, gpu_node_ext;

static void *ext_parse(const pod_t *p, json_t *obj)
{
    return gpu_req_parse(p, json_object_get(json_object_get(obj, "metadata"), "annotations"));
}

static void ext_req_free(void *data)
{
    gpu_req_free(data);
}

/* A shared slot is one GPU in use, whoever holds it; a reservation pod's
 * own GPU request is that same slot, so it does not count again. */
static int64_t ext_account(void **data, const node_info_t *ni, const pod_t *p, int sign)
{
    gpu_node_t *g = *data;
    int64_t d = gpu_node_account(&g, ni->node, res_get_scalar(&ni->requested, RES_GPU), p, sign);
    *data = g;
    if (gpu_is_reservation(p))
        d -= sign * res_get_scalar(&p->requests, RES_GPU);
    return d;
}

static void *ext_node_clone(const void *data)
{
    return gpu_node_clone(data);
}

static void ext_node_free(void *data)
{
    gpu_node_free(data);
}

static const pod_ext_t pod_ext = { .name = "gpu-sharing", .parse = ext_parse, .free = ext_req_free };

void gpu_capability_register(void)
{
    gpu_pod_ext = pod_ext_register(&pod_ext);
    static node_ext_t node_ext = { .name = "gpu-sharing",
                                   .resource = RES_GPU,
                                   .account = ext_account,
                                   .clone = ext_node_clone,
                                   .free = ext_node_free };
    node_ext.pod_ext = gpu_pod_ext;
    gpu_node_ext = node_ext_register(&node_ext);
}
