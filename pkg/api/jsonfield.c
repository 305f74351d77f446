/* jsonfield.c -- typed fields of untrusted JSON objects. */
#include "api/jsonfield.h"
#include "util/util.h"

static const char *type_name(json_type type)
{
    switch (type) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    default: return "of the expected type";
    }
}

int jf_get(json_t *obj, const char *key, json_type type, json_t **out, const char *what, char *err, size_t errlen)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (json_typeof(v) != type)
        return util_errf(err, errlen, "%s.%s: not %s", what, key, type_name(type));
    *out = v;
    return 0;
}
