/* claims.c -- a pod's DRA claims: spec.resourceClaims resolved against
 * status.resourceClaimStatuses (kube's resourceclaim.Name). */
#include <stdlib.h>
#include <string.h>

#include "api/podext.h"
#include "dra/claims.h"
#include "util/util.h"

static int dra_slot = -1;

static const dra_pod_t *slot(const pod_t *p)
{
    if (dra_slot < 0 || !(p->ext_mask & (1u << dra_slot)))
        return NULL;
    return p->ext[dra_slot];
}

const dra_pod_t *dra_pod(const pod_t *p)
{
    const dra_pod_t *d = slot(p);
    return d && (d->n > 0 || d->invalid) ? d : NULL;
}

const dra_pod_t *dra_pod_ext(const pod_t *p)
{
    const dra_pod_t *d = slot(p);
    return d && d->nx > 0 ? d : NULL;
}

static const char *str_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void set_invalid(dra_pod_t *d, const char *fmt, const char *what)
{
    if (d->invalid)
        return;
    sbuf_t b = { 0 };
    sbuf_printf(&b, fmt, what ? what : "");
    d->invalid = b.data;
}

/* The status entry named name: 1 with *claim (NULL: none needed), 0 when
 * the status has none yet. */
static int status_claim(json_t *statuses, const char *name, const char **claim)
{
    size_t i;
    json_t *s;
    json_array_foreach (statuses, i, s) {
        const char *n = str_of(s, "name");
        if (n && !strcmp(n, name)) {
            *claim = str_of(s, "resourceClaimName");
            return 1;
        }
    }
    return 0;
}

static void resolve(dra_pod_t *d, dra_pod_claim_t *c, json_t *pc, json_t *statuses)
{
    const char *direct = str_of(pc, "resourceClaimName"), *tmpl = str_of(pc, "resourceClaimTemplateName");
    if (direct && tmpl) {
        set_invalid(d, "spec.resourceClaims[%s]: both resourceClaimName and resourceClaimTemplateName", c->name);
        return;
    }
    if (direct) {
        c->claim = util_strdup(direct);
        return;
    }
    if (!tmpl) {
        set_invalid(d, "spec.resourceClaims[%s]: neither resourceClaimName nor resourceClaimTemplateName", c->name);
        return;
    }
    c->from_template = 1;
    const char *name = NULL;
    if (!status_claim(statuses, c->name, &name))
        c->waiting = 1;
    else if (!name)
        c->skip = 1;
    else
        c->claim = util_strdup(name);
}

/* An extended resource a DeviceClass may serve (kube's
 * IsDRAExtendedResourceName): a name with a domain outside kubernetes.io,
 * or a class's implicit deviceclass.resource.kubernetes.io/<class>. */
static int ext_resource_name(const char *n)
{
    if (!strchr(n, '/') || !strncmp(n, "requests.", 9))
        return 0;
    return !strstr(n, "kubernetes.io/") || !strncmp(n, DRA_IMPLICIT_PREFIX, strlen(DRA_IMPLICIT_PREFIX));
}

/* A whole, positive request ("2", 2): the count, else 0 (devices are whole). */
static int64_t whole(json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v) > 0 ? json_integer_value(v) : 0;
    const char *s = json_string_value(v);
    char *end = NULL;
    long long n = s ? strtoll(s, &end, 10) : 0;
    return s && end != s && !*end && n > 0 ? n : 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Container idx's extended-resource requests into d. */
static void parse_container(dra_pod_t *d, json_t *ctr, int idx)
{
    json_t *reqs = json_object_get(json_object_get(ctr, "resources"), "requests");
    const char *name = str_of(ctr, "name"), *k;
    json_t *v;
    size_t n = json_object_size(reqs), i = 0;
    if (!n || !name)
        return;
    const char **keys = util_xcalloc(n, sizeof(char *));
    json_object_foreach (reqs, k, v)
        keys[i++] = k;
    qsort(keys, n, sizeof(char *), cmp_str);
    for (i = 0; i < n; i++) {
        int64_t cnt = whole(json_object_get(reqs, keys[i]));
        if (!cnt || !ext_resource_name(keys[i]))
            continue;
        d->x = util_xrealloc(d->x, (size_t)(d->nx + 1) * sizeof(*d->x));
        dra_ext_req_t *x = &d->x[d->nx++];
        sbuf_t b = { 0 };
        sbuf_printf(&b, "container-%d-request-%d", idx, (int)i);
        *x = (dra_ext_req_t){ util_strdup(name), util_strdup(keys[i]), b.data, cnt };
    }
    free(keys);
}

/* Init containers are not served from DRA here (kube lets a short-lived
 * one reuse a regular container's request): only spec.containers, indexed
 * after the init containers as kube numbers them. */
static void parse_ext(dra_pod_t *d, json_t *spec)
{
    size_t i, ninit = json_array_size(json_object_get(spec, "initContainers"));
    json_t *c;
    json_array_foreach (json_object_get(spec, "containers"), i, c)
        parse_container(d, c, (int)(ninit + i));
}

static void *ext_parse(const pod_t *p, json_t *obj)
{
    (void)p;
    json_t *spec = json_object_get(obj, "spec");
    json_t *claims = json_object_get(spec, "resourceClaims");
    dra_pod_t *d = util_xcalloc(1, sizeof(*d));
    parse_ext(d, spec);
    if (!json_is_array(claims) || json_array_size(claims) == 0) {
        if (d->nx)
            return d;
        free(d);
        return NULL;
    }
    json_t *statuses = json_object_get(json_object_get(obj, "status"), "resourceClaimStatuses");
    d->c = util_xcalloc(json_array_size(claims), sizeof(*d->c));
    size_t i;
    json_t *pc;
    json_array_foreach (claims, i, pc) {
        const char *name = str_of(pc, "name");
        if (!json_is_object(pc) || !name || !*name) {
            set_invalid(d, "spec.resourceClaims[]: an entry without a name%s", "");
            continue;
        }
        dra_pod_claim_t *c = &d->c[d->n++];
        c->name = util_strdup(name);
        resolve(d, c, pc, statuses);
    }
    return d;
}

static void ext_free(void *data)
{
    dra_pod_t *d = data;
    if (!d)
        return;
    for (int i = 0; i < d->n; i++) {
        free(d->c[i].name);
        free(d->c[i].claim);
    }
    free(d->c);
    for (int i = 0; i < d->nx; i++) {
        free(d->x[i].container);
        free(d->x[i].resource);
        free(d->x[i].request);
    }
    free(d->x);
    free(d->invalid);
    free(d);
}

static const pod_ext_t pod_ext = { .name = "dynamic-resources", .parse = ext_parse, .free = ext_free };

void dra_capability_register(void)
{
    dra_slot = pod_ext_register(&pod_ext);
}
