/* resources.c -- resource vector arithmetic and v1.ResourceList parsing. */
#include "api/resources.h"
#include "api/quantity.h"
#include "util/hashmap.h"
#include "util/util.h"
#include "util/lockorder.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

void res_zero(resources_t *r)
{
    memset(r, 0, sizeof *r);
}

static int64_t floor_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r) || r < 0)
        return 0;
    return r;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* The intern table: name -> the same name, owned by the map's key copy.
 * Entries live until exit; the map is reachable from here, so leak
 * checkers do not report it. */
static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;
static hashmap_t *intern_map;
const char res_gpu_name[] = RES_GPU_NAME;

const char *res_intern(const char *name)
{
    if (!name || strlen(name) >= RES_NAME_MAX)
        return NULL;
    lo_mutex_lock(&intern_mu, LO_RES_INTERN);
    if (!intern_map) {
        intern_map = hashmap_new(64);
        hashmap_put(intern_map, res_gpu_name, (void *)res_gpu_name);
    }
    char *v = hashmap_get(intern_map, name);
    if (!v && hashmap_len(intern_map) < RES_MAX_NAMES) {
        v = util_strdup(name);
        hashmap_put(intern_map, name, v);
    }
    lo_mutex_unlock(&intern_mu, LO_RES_INTERN);
    return v;
}

/* By address first: names from vectors, RES_GPU and the scorer's are
 * interned, so the string comparison runs only for a name from elsewhere or
 * one the vector lacks. */
static res_scalar_t *find_scalar(const resources_t *r, const char *name)
{
    for (int i = 0; i < r->nscalar; i++)
        if (r->scalar[i].name == name)
            return (res_scalar_t *)&r->scalar[i];
    for (int i = 0; i < r->nscalar; i++)
        if (strcmp(r->scalar[i].name, name) == 0)
            return (res_scalar_t *)&r->scalar[i];
    return NULL;
}

/* Finds or creates the slot for an interned name; NULL when full. */
static res_scalar_t *scalar_slot_interned(resources_t *r, const char *iname)
{
    res_scalar_t *s = find_scalar(r, iname);
    if (s)
        return s;
    if (r->nscalar >= RES_MAX_SCALAR)
        return NULL;
    s = &r->scalar[r->nscalar++];
    s->name = iname;
    s->value = 0;
    return s;
}

/* Finds or creates the named slot; NULL when full or the name cannot be
 * interned. The table is consulted only for a name the vector lacks. */
static res_scalar_t *scalar_slot(resources_t *r, const char *name)
{
    res_scalar_t *s = find_scalar(r, name);
    if (s)
        return s;
    if (r->nscalar >= RES_MAX_SCALAR)
        return NULL;
    const char *iname = res_intern(name);
    return iname ? scalar_slot_interned(r, iname) : NULL;
}

int64_t res_get_scalar(const resources_t *r, const char *name)
{
    const res_scalar_t *s = find_scalar(r, name);
    return s ? s->value : 0;
}

int res_add_scalar(resources_t *r, const char *name, int64_t v)
{
    res_scalar_t *s = scalar_slot(r, name);
    if (!s)
        return -1;
    s->value = res_sat_add(s->value, v);
    return 0;
}

void res_add(resources_t *dst, const resources_t *src)
{
    dst->milli_cpu = res_sat_add(dst->milli_cpu, src->milli_cpu);
    dst->memory = res_sat_add(dst->memory, src->memory);
    dst->ephemeral = res_sat_add(dst->ephemeral, src->ephemeral);
    dst->pods = res_sat_add(dst->pods, src->pods);
    /* A vector already holding RES_MAX_SCALAR names drops one more: the
     * parser refuses such pods, so this only guards arithmetic on odd mixes. */
    for (int i = 0; i < src->nscalar; i++) {
        res_scalar_t *s = scalar_slot_interned(dst, src->scalar[i].name);
        if (s)
            s->value = res_sat_add(s->value, src->scalar[i].value);
    }
}

void res_sub(resources_t *dst, const resources_t *src)
{
    dst->milli_cpu = floor_sub(dst->milli_cpu, src->milli_cpu);
    dst->memory = floor_sub(dst->memory, src->memory);
    dst->ephemeral = floor_sub(dst->ephemeral, src->ephemeral);
    dst->pods = floor_sub(dst->pods, src->pods);
    for (int i = 0; i < src->nscalar; i++) {
        res_scalar_t *s = find_scalar(dst, src->scalar[i].name);
        if (s)
            s->value = floor_sub(s->value, src->scalar[i].value);
    }
}

void res_max(resources_t *dst, const resources_t *src)
{
    dst->milli_cpu = max64(dst->milli_cpu, src->milli_cpu);
    dst->memory = max64(dst->memory, src->memory);
    dst->ephemeral = max64(dst->ephemeral, src->ephemeral);
    dst->pods = max64(dst->pods, src->pods);
    for (int i = 0; i < src->nscalar; i++) {
        res_scalar_t *s = scalar_slot_interned(dst, src->scalar[i].name);
        if (s)
            s->value = max64(s->value, src->scalar[i].value);
    }
}

/* A quantity in JSON is normally a string, but Quantity.UnmarshalJSON also
 * takes a bare number; render a number into buf and use the one grammar.
 * Returns the text to parse, or NULL for any other JSON type. */
static const char *quantity_text(json_t *v, char *buf, size_t n)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        /* An embedded NUL would otherwise hide trailing garbage. */
        return strlen(s) == json_string_length(v) ? s : NULL;
    }
    if (json_is_integer(v)) {
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d))
            return NULL;
        /* 15 significant digits: 0.1 stays "0.1" instead of 0.10000000000000001. */
        snprintf(buf, n, "%.15g", d);
        return buf;
    }
    return NULL;
}

static int parse_list(resources_t *out, json_t *list, int *ignored, char *err, size_t errlen)
{
    res_zero(out);
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_object(list))
        return util_errf(err, errlen, "resource list is not an object");
    const char *name;
    json_t *v;
    json_object_foreach (list, name, v) {
        char buf[64];
        const char *text = quantity_text(v, buf, sizeof buf);
        if (!text) {
            res_zero(out);
            return util_errf(err, errlen, "resource %.64s: not a quantity", name);
        }
        int is_cpu = strcmp(name, "cpu") == 0;
        int64_t q;
        char qerr[128];
        if (quantity_parse(text, is_cpu ? 3 : 0, &q, qerr, sizeof qerr) < 0) {
            res_zero(out);
            return util_errf(err, errlen, "resource %.64s: %s", name, qerr);
        }
        if (q < 0) {
            res_zero(out);
            return util_errf(err, errlen, "resource %.64s: negative quantity %.64s", name, text);
        }
        if (is_cpu)
            out->milli_cpu = q;
        else if (strcmp(name, "memory") == 0)
            out->memory = q;
        else if (strcmp(name, "ephemeral-storage") == 0)
            out->ephemeral = q;
        else if (strcmp(name, "pods") == 0)
            out->pods = q;
        else if (res_add_scalar(out, name, q) < 0) {
            if (ignored) {
                (*ignored)++;
                continue;
            }
            res_zero(out);
            return util_errf(err, errlen, "resource %.64s: too many resource names or name too long", name);
        }
    }
    return 0;
}

int res_from_json(resources_t *out, json_t *list, char *err, size_t errlen)
{
    return parse_list(out, list, NULL, err, errlen);
}

int res_from_json_node(resources_t *out, json_t *list, int *ignored, char *err, size_t errlen)
{
    int dummy = 0;
    return parse_list(out, list, ignored ? ignored : &dummy, err, errlen);
}

int res_equal(const resources_t *a, const resources_t *b)
{
    if (a->milli_cpu != b->milli_cpu || a->memory != b->memory || a->ephemeral != b->ephemeral || a->pods != b->pods ||
        a->nscalar != b->nscalar)
        return 0;
    for (int i = 0; i < a->nscalar; i++)
        if (res_get_scalar(b, a->scalar[i].name) != a->scalar[i].value)
            return 0;
    return 1;
}
