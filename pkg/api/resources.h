/* resources.h -- a resource vector: cpu in milli-cores, memory and
 * ephemeral-storage in bytes, pod count, and a few named extended resources
 * (nvidia.com/gpu, hugepages-2Mi, ...). A plain value type: copy with '='. */
#ifndef AISCHED_RESOURCES_H
#define AISCHED_RESOURCES_H

#include <stdint.h>
#include <stddef.h>
#include <jansson.h>

#define RES_MAX_SCALAR   8
#define RES_NAME_MAX     64
#define RES_GPU          "nvidia.com/gpu"

typedef struct res_scalar {
    char    name[RES_NAME_MAX];
    int64_t value;
} res_scalar_t;

typedef struct resources {
    int64_t      milli_cpu;
    int64_t      memory;
    int64_t      ephemeral;
    int64_t      pods;
    int          nscalar;
    res_scalar_t scalar[RES_MAX_SCALAR];
} resources_t;

void    res_zero(resources_t *r);
int64_t res_get_scalar(const resources_t *r, const char *name);
/* Adds v to the named scalar; -1 if the vector is full (RES_MAX_SCALAR). */
int     res_add_scalar(resources_t *r, const char *name, int64_t v);
void    res_add(resources_t *dst, const resources_t *src);   /* saturating */
void    res_sub(resources_t *dst, const resources_t *src);   /* floors at 0 */
/* dst = max(dst, src) per resource (the init-container rule). */
void    res_max(resources_t *dst, const resources_t *src);
/* Parses a v1.ResourceList ({"cpu":"500m","memory":"1Gi",...}). Unknown
 * resource names become scalars; "pods" sets pods. -1 + message on a bad
 * quantity, a negative value or too many names. */
int     res_from_json(resources_t *out, json_t *list, char *err, size_t errlen);

#endif
