/* fuzz_selector.c -- label selectors from the API server. The input is
 * {"selector": ..., "term": ..., "map": ..., "labels": {...}, "name": "..."}:
 * selector is a metav1.LabelSelector (Pools, PDBs, spread and affinity
 * terms), term a v1.NodeSelectorTerm (node affinity), map a nodeSelector.
 * Each that parses is matched against the labels, copied and freed; a copy
 * must match exactly as the original does. */
#include "fuzz.h"
#include "api/labels.h"

static void check(const selector_t *s, const labels_t *l, const char *name)
{
    int m = selector_matches(s, l, name);
    selector_t c;
    if (selector_copy(&c, s) == 0) {
        FUZZ_ASSERT(selector_matches(&c, l, name) == m);
        selector_free(&c);
    }
    (void)selector_is_empty(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    char err[256];
    labels_t l = { NULL, 0 };
    json_t *lj = json_is_object(j) ? json_object_get(j, "labels") : NULL;
    if (labels_from_json(&l, lj, err, sizeof err) != 0)
        l = (labels_t){ NULL, 0 };
    const char *name = json_is_object(j) ? json_string_value(json_object_get(j, "name")) : NULL;
    selector_t s;
    json_t *src = json_is_object(j) ? json_object_get(j, "selector") : j;
    if (src && selector_from_label_selector(&s, src, err, sizeof err) == 0) {
        check(&s, &l, name);
        selector_free(&s);
    }
    src = json_is_object(j) ? json_object_get(j, "term") : j;
    if (src && selector_from_node_term(&s, src, err, sizeof err) == 0) {
        check(&s, &l, name);
        selector_free(&s);
    }
    src = json_is_object(j) ? json_object_get(j, "map") : j;
    if (src && selector_from_map(&s, src, err, sizeof err) == 0) {
        check(&s, &l, name);
        selector_free(&s);
    }
    labels_free(&l);
    json_decref(j);
    return 0;
}
