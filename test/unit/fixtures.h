/* fixtures.h -- helpers shared by the unit suites. Include after cmocka.h. */
#ifndef AISCHED_TEST_FIXTURES_H
#define AISCHED_TEST_FIXTURES_H

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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

#endif
