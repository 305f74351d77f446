/* explain.h -- `ai-scheduler explain [pod|podgroup] NS/NAME`: why a pending
 * pod or gang is not placed, from the leader's decision record
 * (/debug/pods/NS/NAME, /debug/podgroups/NS/NAME), as text, JSON or YAML. */
#ifndef AISCHED_CMD_EXPLAIN_H
#define AISCHED_CMD_EXPLAIN_H

#include <stdio.h>
#include <jansson.h>

/* argv after "explain". Returns the exit code: 0, 1 (no record, or the
 * scheduler cannot be reached: one line on errf), 2 (usage). */
int explain_main(int argc, char **argv, FILE *out, FILE *errf);

/* A record (explain/explain.h's keys) as readable sections. */
void explain_print_text(FILE *out, const json_t *rec);

#endif
