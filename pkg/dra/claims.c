/* claims.c -- a pod's DRA claims: spec.resourceClaims resolved against
 * status.resourceClaimStatuses (kube's resourceclaim.Name). */
#include <stdlib.h>
#include <string.h>

#include "api/podext.h"
#include "dra/claims.h"
#include "util/util.h"

static int dra_pod_ext = -1;

const dra_pod_t *dra_pod(const pod_t *p)
{
    if (dra_pod_ext < 0 || !(p->ext_mask & (1u << dra_pod_ext)))
        return NULL;
    return p->ext[dra_pod_ext];
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

static void *ext_parse(const pod_t *p, json_t *obj)
{
    (void)p;
    json_t *claims = json_object_get(json_object_get(obj, "spec"), "resourceClaims");
    if (!json_is_array(claims) || json_array_size(claims) == 0)
        return NULL;
    json_t *statuses = json_object_get(json_object_get(obj, "status"), "resourceClaimStatuses");
    dra_pod_t *d = util_xcalloc(1, sizeof(*d));
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
    free(d->invalid);
    free(d);
}

static const pod_ext_t pod_ext = { .name = "dynamic-resources", .parse = ext_parse, .free = ext_free };

void dra_capability_register(void)
{
    dra_pod_ext = pod_ext_register(&pod_ext);
}
