/* usage.c -- per-pool resource sums (capacity, used, shared, borrowed,
 * pending) and the Pool .status document built from them. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/quantity.h"
#include "gpu/gpu.h"
#include "pool/pool.h"
#include "util/hashmap.h"
#include "util/util.h"

/* Index of the pod's home pool in specs, or n_specs (default) when the
 * annotation is absent or names no existing pool. O(n_specs): pools are few. */
static int home_index(const pool_spec_t *specs, int n_specs, const pod_t *p)
{
    const char *home = p->pool;
    if (!home || !*home)
        return n_specs;
    for (int i = 0; i < n_specs; i++)
        if (specs[i].name && !strcmp(specs[i].name, home))
            return i;
    return n_specs;
}

/* The pod's requests with pods=1, so the pods dimension of used/shared/
 * borrowed counts pods whatever the parser put there. */
static resources_t pod_charge(const pod_t *p)
{
    resources_t r = p->requests;
    r.pods = 1;
    return r;
}

void pool_usage_compute(const pool_spec_t *specs, int n_specs, node_t *const *nodes, int nnodes, pod_t *const *pods,
                        int npods, const char *scheduler_name, pool_usage_t *out)
{
    for (int i = 0; i <= n_specs; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        res_zero(&out[i].capacity);
        res_zero(&out[i].allocatable);
        res_zero(&out[i].used);
        res_zero(&out[i].shared);
        res_zero(&out[i].borrowed);
        res_zero(&out[i].pending_req);
    }

    /* node name -> pool index + 1 (a NULL value means "not a node we know") */
    hashmap_t *where = hashmap_new((size_t)(nnodes > 0 ? nnodes * 2 : 8));
    hashmap_t *gangs = hashmap_new(16); /* "pool|ns/group" of pending gang members */
    for (int i = 0; i < nnodes; i++) {
        const node_t *nd = nodes[i];
        if (!nd || !nd->name)
            continue;
        int idx = pool_partition_node(specs, n_specs, &nd->labels, nd->name);
        if (idx < 0)
            idx = n_specs;
        hashmap_put(where, nd->name, (void *)(uintptr_t)(idx + 1));
        res_add(&out[idx].capacity, &nd->capacity);
        res_add(&out[idx].allocatable, &nd->allocatable);
        out[idx].nodes++;
    }

    for (int i = 0; i < npods; i++) {
        const pod_t *p = pods[i];
        if (!p || pod_is_terminal(p))
            continue;
        int home = home_index(specs, n_specs, p);
        resources_t req = pod_charge(p);
        if (pod_is_bound(p)) {
            uintptr_t v = (uintptr_t)hashmap_get(where, p->node_name);
            if (v == 0)
                continue; /* node unknown (gone, or not listed yet) */
            int on = (int)v - 1;
            /* A reservation pod belongs to whichever pool owns its node. */
            if (gpu_is_reservation(p))
                home = on;
            res_add(&out[on].used, &req);
            out[on].pods_running++;
            out[on].gpu_shared += gpu_is_reservation(p);
            if (on != home) {
                res_add(&out[on].shared, &req);
                res_add(&out[home].borrowed, &req);
            }
        } else if (!p->deleting &&
                   (!scheduler_name || (p->scheduler_name && !strcmp(p->scheduler_name, scheduler_name)))) {
            if (p->ngates > 0) {
                out[home].gated++; /* not waiting for a node yet */
                continue;
            }
            res_add(&out[home].pending_req, &req);
            out[home].pending++;
            const char *g = labels_get(&p->labels, "scheduling.x-k8s.io/pod-group");
            if (g && g[0]) {
                sbuf_t k = { 0 };
                sbuf_printf(&k, "%d|%s/%s", home, p->ns, g);
                if (!hashmap_get(gangs, k.data)) {
                    hashmap_put(gangs, k.data, (void *)1);
                    out[home].pending_gangs++;
                }
                sbuf_free(&k);
            }
        }
    }
    hashmap_free(where);
    hashmap_free(gangs);
}

static void set_str(json_t *obj, const char *key, const char *val)
{
    json_object_set_new(obj, key, json_string(val));
}

/* A v1.ResourceList with the four core names and the GPU always present (so
 * printer columns never show <none>), other extended resources when nonzero. */
static json_t *resource_list(const resources_t *r)
{
    json_t *o = json_object();
    char buf[64];
    quantity_format_k8s_milli(r->milli_cpu, buf, sizeof(buf));
    set_str(o, "cpu", buf);
    quantity_format_k8s_bytes(r->memory, buf, sizeof(buf));
    set_str(o, "memory", buf);
    quantity_format_k8s_bytes(r->ephemeral, buf, sizeof(buf));
    set_str(o, "ephemeral-storage", buf);
    snprintf(buf, sizeof(buf), "%lld", (long long)r->pods);
    set_str(o, "pods", buf);
    snprintf(buf, sizeof(buf), "%lld", (long long)res_get_scalar(r, RES_GPU));
    set_str(o, RES_GPU, buf);
    for (int i = 0; i < r->nscalar && i < RES_MAX_SCALAR; i++) {
        if (!strcmp(r->scalar[i].name, RES_GPU) || r->scalar[i].value == 0)
            continue;
        snprintf(buf, sizeof(buf), "%lld", (long long)r->scalar[i].value);
        set_str(o, r->scalar[i].name, buf);
    }
    return o;
}

json_t *pool_usage_to_status(const pool_usage_t *u)
{
    json_t *st = json_object();
    resources_t free_ = u->allocatable;
    res_sub(&free_, &u->used);
    json_object_set_new(st, "capacity", resource_list(&u->capacity));
    json_object_set_new(st, "allocatable", resource_list(&u->allocatable));
    json_object_set_new(st, "used", resource_list(&u->used));
    /* "requests" is the original Ai-Scheduler's name for the same sums. */
    json_object_set_new(st, "requests", resource_list(&u->used));
    json_object_set_new(st, "shared", resource_list(&u->shared));
    json_object_set_new(st, "borrowed", resource_list(&u->borrowed));
    json_object_set_new(st, "free", resource_list(&free_));
    json_object_set_new(st, "pending", json_integer(u->pending));
    json_object_set_new(st, "gated", json_integer(u->gated));
    json_object_set_new(st, "nodes", json_integer(u->nodes));
    return st;
}
