/* preemption.h -- PostFilter part one: make room inside the pool.
 *
 * Victims are pods scheduled by ai-scheduler that are borrowers on this pool
 * (they rank below every home pod) or home pods of lower priority. On each
 * candidate node: remove every victim, check the preemptor fits, then put
 * victims back (highest rank first, PDB-protected ones before the others) as
 * long as the preemptor still fits; what stays out is the minimal set. The
 * node is chosen by fewest PDB violations, then the lowest highest-victim
 * rank, then the smallest rank sum, then the fewest victims, then the
 * victims that checkpointed most recently (the latest oldest
 * checkpointed-at among a candidate's victims; a victim that never said
 * counts as 0, so one such victim makes the candidate's value 0), then the
 * most recently started victims. Pure computation: the scheduler evicts. */
#ifndef AISCHED_PREEMPTION_H
#define AISCHED_PREEMPTION_H

#include <stdint.h>
#include <jansson.h>
#include "api/labels.h"
#include "api/types.h"
#include "framework/framework.h"

typedef struct pdb {
    char *ns;
    char *name;
    selector_t selector;
    int32_t disruptions_allowed; /* status.disruptionsAllowed */
} pdb_t;

/* policy/v1 or policy/v1beta1 PodDisruptionBudget. NULL + message on bad input. */
pdb_t *pdb_from_json(json_t *obj, char *err, size_t errlen);
void pdb_free(pdb_t *p);

/* Is `victim` preemptible by `preemptor` here? If so, return 1 and set
 * *rank: a value that orders victims (lower = evicted first). The scheduler
 * ranks 4 x priority (+1 for a pod keeping its gang at minMember) and
 * shifts elastic surplus 2^36 and borrowers 2^38 below every home pod. */
typedef int (*preempt_victim_fn)(const pod_t *victim, const pod_t *preemptor, void *ud, int64_t *rank);

/* Whether p can be taken off node by an eviction: it is bound there
 * (node NULL: bound anywhere) and not done. A node's view holds more than
 * that: pods nominated there (room an earlier preemption promised them),
 * pods placed whose Binding is in flight (assumed), the room held for a
 * consolidation's movers and for a gang's reservation. They count in every
 * fit, as kube-scheduler's Filter counts nominated pods, so a preemptor
 * never takes room promised to a pod that ranks at least as high; they are
 * never victims, which kube gets by keeping nominated pods out of
 * NodeInfo.Pods: an Eviction of a pod that is not bound deletes it (a bare
 * pod is gone for good, a controller's starts over), and one whose Binding
 * is in flight would race with that Binding, which then fails or places a
 * pod already deleted. Every victim search (preempt_select_on_node, the
 * consolidation planner, reclaim under a queue limit) asks this. */
int preempt_removable(const pod_t *p, const char *node);

/* What each victim adds to rank_sum beyond its rank (ranks may be as low
 * as -2^39), so one more victim always makes the sum larger. */
#define PREEMPT_RANK_OFFSET ((int64_t)1 << 40)

typedef struct preempt_candidate {
    char *node;      /* owned */
    pod_t **victims; /* one ref each, owned */
    int nvictims;
    int pdb_violations;
    int64_t max_rank; /* highest victim rank */
    int64_t rank_sum;
    int64_t latest_start_ms;
    int64_t checkpointed_ms; /* min over victims of checkpointed_at_ms (wall ms; 0 none) */
} preempt_candidate_t;

/* Finds the minimal victim set on one node. Returns 1 and fills *out when
 * the preemptor fits after evicting it, 0 when it does not fit even with
 * every candidate gone. fw's filters decide fit (so selectors, taints and
 * ports still apply). */
int preempt_select_on_node(framework_t *fw, const pod_t *preemptor, const node_info_t *ni, preempt_victim_fn is_victim,
                           void *ud, pdb_t *const *pdbs, int npdbs, preempt_candidate_t *out);
/* The same with the caller's PreFilter state: cs was prefiltered for the
 * preemptor (with the cluster view set, under the cache lock, so inter-pod
 * plugins see every pod). Victims' removal and reprieve update cs through
 * the plugins' add_pod/remove_pod; cs is as the caller gave it on return,
 * so one state serves every candidate node. */
int preempt_select_on_node_cs(framework_t *fw, cycle_state_t *cs, const pod_t *preemptor, const node_info_t *ni,
                              preempt_victim_fn is_victim, void *ud, pdb_t *const *pdbs, int npdbs,
                              preempt_candidate_t *out);
/* How many of pods (victims, most important first) the PDBs protect past
 * their disruptionsAllowed, by the same walk as a candidate's count. */
int preempt_pdb_violations(pod_t *const *pods, int n, pdb_t *const *pdbs, int npdbs);
/* Index of the best candidate by the rules above; -1 if n == 0. */
int preempt_pick(const preempt_candidate_t *c, int n);
void preempt_candidate_clear(preempt_candidate_t *c);

/* What a set's preemption saw (the core's evaluator), for its decision
 * record. */
typedef struct preempt_outcome {
    int waiting; /* victims chosen earlier are still leaving */
    int nodes;   /* a set of one: nodes where evicting could help */
    int cands;   /* a set of one: those with victims allowed */
    int victims; /* victims of the chosen room */
    char node[256];
} preempt_outcome_t;

#endif
