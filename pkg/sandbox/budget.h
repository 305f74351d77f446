/* budget.h -- PodDisruptionBudgets in the sandbox: what the API server's
 * Eviction checks (a budget with no disruption left refuses, 429) and what
 * the disruption controller keeps up to date (status.disruptionsAllowed,
 * from the matching pods' health), so a simulated run's evictions meet
 * the budgets the live ones would. */
#ifndef AISCHED_SANDBOX_BUDGET_H
#define AISCHED_SANDBOX_BUDGET_H

#include <jansson.h>
#include <stdint.h>

typedef struct sb_budgets sb_budgets_t;

sb_budgets_t *budgets_new(void);
void budgets_free(sb_budgets_t *b);

/* A PDB stored (obj, borrowed) or deleted (obj NULL). healthy and expected
 * are the counts of its namespace's matching pods now (the caller scans:
 * budgets_matches tells which). 0, or -1 for a PDB that does not parse
 * (it is then left out). */
int budgets_set(sb_budgets_t *b, const char *ns, const char *name, json_t *obj, char *err, size_t errlen);
/* Whether PDB ns/name selects pod (a Pod object). */
int budgets_matches(sb_budgets_t *b, const char *ns, const char *name, json_t *pod);
/* Counts after a scan: the PDB's healthy and expected pods. */
void budgets_counts(sb_budgets_t *b, const char *ns, const char *name, int healthy, int expected);

/* A pod changed (old or now NULL when it was created or deleted): the
 * counts of the budgets that select it move. */
void budgets_pod(sb_budgets_t *b, json_t *old, json_t *now);

/* Whether an eviction of pod may go: 1, or 0 with *pdb the name of the
 * budget that has no disruption left (borrowed). */
int budgets_allow(sb_budgets_t *b, json_t *pod, const char **pdb);

/* Calls fn for each budget whose disruptionsAllowed changed since the last
 * call, with its new value (the caller writes it into the object). */
void budgets_each_changed(sb_budgets_t *b, void (*fn)(void *ud, const char *ns, const char *name, int32_t allowed),
                          void *ud);

/* Pure: disruptionsAllowed from the spec's minAvailable or maxUnavailable
 * (an integer or "N%"; a percentage of expected, rounded up as the
 * controller does) and the counts; never below 0. */
int32_t budgets_allowed(json_t *spec, int healthy, int expected);

#endif
