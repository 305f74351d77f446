/* fuzz_rules.c -- the workload table (grouper/rules.h): the input as a
 * WorkloadGroups file (YAML or JSON) loaded over the defaults, as a
 * minMember expression and as a when condition, and as an owner object
 * every row of the table is evaluated on. */
#include "fuzz.h"
#include "grouper/rules.h"

static void eval_rows(const wl_table_t *t, json_t *owner)
{
    for (int i = 0; i < wl_table_nrows(t); i++) {
        const wl_row_t *r = wl_table_row(t, i);
        wl_verdict_t v;
        FUZZ_ASSERT(wl_row_eval(r, owner, &v) == 0);
        FUZZ_ASSERT(v.gang ? v.min_member >= 1 : v.why != NULL);
        wl_verdict_clear(&v);
        char *p = wl_object_path(r, "x.io/v1", "ns", "name");
        free(p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wl_table_t *t = wl_table_new_default();
    char err[512] = "";
    if (wl_table_load_string(t, (const char *)data, size, "fuzz", err, sizeof err) != 0)
        FUZZ_ASSERT(err[0] != '\0');
    char *s = fuzz_str(data, size);
    json_t *owner = fuzz_json(data, size);
    json_t *fixed = json_pack("{s:{s:i,s:[{s:i},{}]}}", "spec", "a", 3, "l", "r", 2);
    int64_t v;
    if (s && wl_expr_eval(s, fixed, &v, err, sizeof err) != 0)
        FUZZ_ASSERT(err[0] != '\0');
    if (s) {
        json_t *doc = json_pack("{s:s,s:s,s:[{s:s,s:s,s:s,s:[s],s:[s]}]}", "apiVersion",
                                "ai-scheduler.aibee.cn/v1alpha1", "kind", "WorkloadGroups", "kinds", "group", "x.io",
                                "kind", "X", "resource", "xs", "minMember", s, "when", s);
        if (doc && wl_table_load_json(t, doc, "fuzz", err, sizeof err) != 0)
            FUZZ_ASSERT(err[0] != '\0');
        json_decref(doc);
        char *n = wl_group_name("Kind", s, s);
        FUZZ_ASSERT(n == NULL || (strlen(n) <= 63 && strlen(n) > 0));
        free(n);
    }
    eval_rows(t, owner ? owner : fixed);
    json_decref(fixed);
    json_decref(owner);
    free(s);
    wl_table_free(t);
    return 0;
}
