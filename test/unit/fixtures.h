/* fixtures.h -- helpers shared by the unit suites. Include after cmocka.h. */
#ifndef AISCHED_TEST_FIXTURES_H
#define AISCHED_TEST_FIXTURES_H

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/types.h"
#include "framework/nodeinfo.h"

/* JSON written with ' for " (readable in C strings); fails the test on a
 * typo. Returns a new reference. */
static inline json_t *parse_sq(const char *sq)
{
    char *s = strdup(sq);
    for (char *c = s; *c; c++)
        if (*c == '\'')
            *c = '"';
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (j == NULL)
        fail_msg("bad test JSON (%s): %s", e.text, s);
    free(s);
    return j;
}

/* A Pod from test JSON (parse_sq's quoting); fails the test when the
 * parser rejects it. New reference. */
static inline pod_t *fx_pod(const char *sq)
{
    char err[256] = "";
    json_t *j = parse_sq(sq);
    pod_t *p = pod_from_json(j, err, sizeof(err));
    json_decref(j);
    if (p == NULL)
        fail_msg("pod_from_json: %s (%s)", err, sq);
    return p;
}

/* A node_info holding the Node in sq (its only reference to it); free
 * with node_info_free. Fails the test when the parser rejects it. */
static inline node_info_t *fx_node_info(const char *sq)
{
    char err[256] = "";
    json_t *j = parse_sq(sq);
    node_t *n = node_from_json(j, err, sizeof(err));
    json_decref(j);
    if (n == NULL)
        fail_msg("node_from_json: %s (%s)", err, sq);
    node_info_t *ni = node_info_new(n->name);
    node_info_set_node(ni, n);
    node_unref(n);
    return ni;
}

#endif
