/* preempt_eval.h -- one preemption for a pod set: the copies a plan runs
 * on, the victims point the plan asks, the evaluator and its commit step
 * (preempt_eval.c). */
#ifndef AISCHED_PREEMPT_EVAL_H
#define AISCHED_PREEMPT_EVAL_H

#include "scheduler/internal.h"

/* The copies a plan (or a gang's lender or topology choice) runs on
 * (framework/services.h: the rows get them through sim_build). */
typedef sched_sim_t pe_sim_t;

/* 0 when ready; -1 when a member's PreFilter fails (free it either way). */
int pe_sim_build(scheduler_t *s, int pool_id, pod_t *const *pods, int n, pe_sim_t *sim);
void pe_sim_free(pe_sim_t *sim);
/* First copy where member i passes every filter, or -1. */
int pe_sim_fit(scheduler_t *s, pe_sim_t *sim, int i);
/* Member i goes on copy k: every member's PreFilter state counts it. */
void pe_sim_place(scheduler_t *s, pe_sim_t *sim, int k, int i);

/* Pods without repeats (refs), as a plan's victims. */
typedef struct pe_vset {
    pod_t **v;
    int n;
    hashmap_t *seen;
} pe_vset_t;
/* 1 when p was not in vs yet (then vs holds a ref). */
int pe_vset_add(pe_vset_t *vs, pod_t *p);
void pe_vset_free(pe_vset_t *vs);

/* The victims point: every question the evaluator (and reclaim under a
 * queue limit) asks about victims goes through this table, so that rows
 * can answer it in place of the core. */
typedef struct pe_victims {
    /* One pod: whether it may go for preemptor and its rank (borrowers,
     * then elastic surplus, then lower priority; queue reclaim; a row's
     * protection, a minimum runtime, noted for vc->set; never a GPU
     * reservation, a pod not ours or one whose eviction is already
     * requested). */
    preempt_victim_fn pod;
    /* Each candidate's gang victims bring their whole gang (each mate by
     * the pod rule); candidates where a mate may not go, or where a PDB
     * protects one of a set holding a gang, are dropped. Returns how many
     * are left, in place. pdb_mu held. */
    int (*expand)(victim_ctx_t *vc, const pod_t *preemptor, preempt_candidate_t *cands, int n);
    /* Candidates whose victims break reclaim's rules are dropped. */
    int (*candidates)(const victim_ctx_t *vc, preempt_candidate_t *cands, int n);
    /* Several members' victims together keep reclaim's rules. */
    int (*set_ok)(const victim_ctx_t *vc, pod_t *const *victims, int n);
} pe_victims_t;
const pe_victims_t *pe_victims(const scheduler_t *s);

/* A pod set to make room for inside P: a set of one (set NULL: a lone
 * pod, or an elastic member, queued since first_ms) or a group's minimum
 * (set: its group, set->group; the rows' plan_within and preempting
 * points are asked of it). */
typedef struct pe_request {
    sched_pool_t *P;
    pod_t *const *pods; /* queue order */
    int need;
    int64_t first_ms;
    const pod_set_t *group; /* a group's minimum (set->group), or NULL: a set of one */
    pod_set_t *set;         /* the set it is for: rows note what they kept there; may be NULL */
    pod_t *const *gone;     /* victims already chosen (a queue limit's): off the copies first */
    int ngone;
} pe_request_t;

/* The evaluator: plans the set's minimum on copies, member by member, and
 * commits the plan. 1 when room is being made (or victims chosen earlier
 * are still leaving), 0 when no plan frees room. */
int preempt_eval(const pe_request_t *r, preempt_outcome_t *out);

/* How a commit is announced (logs, events, stats), by what made it. */
typedef enum { PE_BY_LONE, PE_BY_GROUP, PE_BY_LIMIT } pe_by_t;

/* The one commit step of a preemption: the victims of cands[best] stop
 * counting for their queues and the preemptors start counting for theirs,
 * the rows' victims_taken point hears of them, each preemptor is nominated to
 * where[i] (where NULL: room on no node), the eviction job goes to the
 * evictor with every candidate (it falls back to the next when an
 * eviction is refused). Takes cands (nc of them, freed by the evictor). */
typedef struct pe_commit {
    sched_pool_t *P;
    const victim_ctx_t *vc;
    pod_t *const *pods;
    int np;
    char *const *where;
    preempt_candidate_t *cands;
    int nc, best;
    pe_by_t by;
    const pod_set_t *set; /* PE_BY_GROUP */
} pe_commit_t;
void preempt_commit(const pe_commit_t *c);

/* The preemption row's call (services.h's preempt): the evaluator for the
 * set's minimum in its pool; then the rows' kept point: when no room is
 * made, what kept victims (a minimum runtime) goes into the set's wait
 * note; *kept says it (owned). */
int preempt_set(pod_set_t *set, preempt_outcome_t *seen, char **kept);
/* The borrowing row's room question (services.h's pool_room_for): the
 * pods placed in turn on copies of pool's nodes, no eviction. */
int pe_room_for(scheduler_t *s, int pool, pod_t *const *pods, int n, resources_t *alloc, resources_t *used, int *tasks);

#endif
