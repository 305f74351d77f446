/* podext.c -- the registry of per-capability pod parsers (api/podext.h). */
#include <stdio.h>
#include <stdlib.h>

#include "api/podext.h"

static const pod_ext_t *exts[POD_EXT_MAX];
static int nexts;
static int sealed; /* written once before threads start; read with acquire */

int pod_ext_register(const pod_ext_t *ext)
{
    if (pod_ext_sealed() || nexts == POD_EXT_MAX) {
        fprintf(stderr, "pod_ext_register(%s): %s\n", ext->name,
                nexts == POD_EXT_MAX ? "no free slot (POD_EXT_MAX)" : "registry already sealed");
        abort();
    }
    exts[nexts] = ext;
    return nexts++;
}

void pod_ext_seal(void)
{
    __atomic_store_n(&sealed, 1, __ATOMIC_RELEASE);
}

int pod_ext_sealed(void)
{
    return __atomic_load_n(&sealed, __ATOMIC_ACQUIRE);
}

int pod_ext_count(void)
{
    return nexts;
}

void pod_ext_parse_all(pod_t *p, json_t *obj)
{
    if (!pod_ext_sealed()) {
        fprintf(stderr,
                "pod_from_json: pod %s parsed before capabilities_init(): every capability's data on "
                "it would be lost\n",
                p->key ? p->key : "?");
        abort();
    }
    for (int i = 0; i < nexts; i++) {
        p->ext[i] = exts[i]->parse(p, obj);
        if (p->ext[i])
            p->ext_mask |= 1u << i;
    }
}

void pod_ext_free_all(pod_t *p)
{
    for (int i = 0; p->ext_mask && i < nexts; i++)
        if (p->ext[i])
            exts[i]->free(p->ext[i]);
}
