/* resources.h -- a resource vector: cpu in milli-cores, memory and
 * ephemeral-storage in bytes, pod count, and up to RES_MAX_SCALAR named
 * extended resources (nvidia.com/gpu, hugepages-2Mi, MIG profiles, RDMA
 * devices...). A plain value type: copy with '='.
 *
 * Scalar names are interned: each distinct name is stored once for the
 * life of the process (a bounded table, see res_intern) and vectors hold
 * the shared pointer, so a slot costs 16 bytes whatever the name's length
 * and copies stay plain. */
#ifndef AISCHED_RESOURCES_H
#define AISCHED_RESOURCES_H

#include <stdint.h>
#include <stddef.h>
#include <jansson.h>

/* MIG, hugepages and RDMA nodes list a dozen or two extended resources. */
#define RES_MAX_SCALAR 32
/* A qualified resource name: 253 (DNS prefix) + '/' + 63, and the NUL. */
#define RES_NAME_MAX 318
/* Distinct names the intern table accepts (input is untrusted). */
#define RES_MAX_NAMES 4096
#define RES_GPU_NAME  "nvidia.com/gpu"
/* The GPU's interned name: the intern table starts with this very array, so
 * vectors parsed from objects hold its address and a lookup by RES_GPU is a
 * pointer comparison (Filter and Score make several per node). */
extern const char res_gpu_name[];
#define RES_GPU res_gpu_name

typedef struct res_scalar {
    const char *name; /* interned (res_intern): never freed, compare by value */
    int64_t value;
} res_scalar_t;

typedef struct resources {
    int64_t milli_cpu;
    int64_t memory;
    int64_t ephemeral;
    int64_t pods;
    int nscalar;
    res_scalar_t scalar[RES_MAX_SCALAR];
} resources_t;

void res_zero(resources_t *r);
/* a + b clamped to int64's range: amounts come from untrusted objects, and
 * every sum of them saturates rather than overflows. */
static inline int64_t res_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}
/* The process-wide copy of name (thread-safe); NULL when the name is too
 * long or RES_MAX_NAMES distinct names were already seen. */
const char *res_intern(const char *name);
int64_t res_get_scalar(const resources_t *r, const char *name);
/* Adds v to the named scalar; -1 if the vector is full (RES_MAX_SCALAR). */
int res_add_scalar(resources_t *r, const char *name, int64_t v);
void res_add(resources_t *dst, const resources_t *src); /* saturating */
void res_sub(resources_t *dst, const resources_t *src); /* floors at 0 */
/* dst = max(dst, src) per resource (the init-container rule). */
void res_max(resources_t *dst, const resources_t *src);
/* Same amounts of the same resources (scalar order does not matter). */
int res_equal(const resources_t *a, const resources_t *b);
/* Parses a v1.ResourceList ({"cpu":"500m","memory":"1Gi",...}). Unknown
 * resource names become scalars; "pods" sets pods. -1 + message on a bad
 * quantity, a negative value or too many names. */
int res_from_json(resources_t *out, json_t *list, char *err, size_t errlen);
/* The same for a node's capacity or allocatable: a name that finds no room
 * is left out (counted in *ignored) instead of failing, so the node is kept
 * and only pods asking for that resource miss it there. Bad quantities
 * still fail. */
int res_from_json_node(resources_t *out, json_t *list, int *ignored, char *err, size_t errlen);

#endif
