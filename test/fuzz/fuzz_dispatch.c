/* fuzz_dispatch.c -- a MultiClusterJob's template and params (written by
 * users on the hub): dsp_param_refs, dsp_substitute and dsp_specialise for
 * each cluster the params name. The input is
 * {"template": [...], "params": {...}, "cluster": "a", "name": "j"}.
 * Every object specialised must come out named `<name>-<cluster>` in the
 * member's namespace with the job's uid label. */
#include "fuzz.h"
#include "dispatch/template.h"

static void check_objects(const json_t *objs, const char *cluster)
{
    size_t i;
    json_t *o;
    json_array_foreach (objs, i, o) {
        json_t *md = json_object_get(o, "metadata");
        FUZZ_ASSERT(json_is_object(md));
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        FUZZ_ASSERT(name && ns && !strcmp(ns, "member-ns"));
        size_t nl = strlen(name), cl = strlen(cluster);
        FUZZ_ASSERT(nl > cl && name[nl - cl - 1] == '-' && !strcmp(name + nl - cl, cluster));
        const char *uid =
            json_string_value(json_object_get(json_object_get(md, "labels"), "resource.aibee.cn/multiclusterjob-uid"));
        FUZZ_ASSERT(uid && !strcmp(uid, "uid-1"));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    json_t *tmpl = json_object_get(j, "template");
    json_t *params = json_object_get(j, "params");
    const char *cluster = json_string_value(json_object_get(j, "cluster"));
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!cluster)
        cluster = "a";
    if (!name)
        name = "job";
    char err[256] = "";
    json_t *names = json_array();
    if (tmpl)
        dsp_param_refs(tmpl, names);
    json_decref(names);
    json_t *sub = dsp_substitute(tmpl ? tmpl : j, params, cluster, err, sizeof err);
    if (sub)
        json_decref(sub);
    else
        FUZZ_ASSERT(err[0] != '\0');
    err[0] = '\0';
    json_t *objs = tmpl ? dsp_specialise(tmpl, params, cluster, "member-ns", name, "uid-1", err, sizeof err) : NULL;
    if (objs) {
        check_objects(objs, cluster);
        json_decref(objs);
    } else if (tmpl) {
        FUZZ_ASSERT(err[0] != '\0');
    }
    char buf[300];
    (void)dsp_object_name(name, cluster, buf, sizeof buf);
    json_decref(j);
    return 0;
}
