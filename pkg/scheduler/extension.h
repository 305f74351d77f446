/* extension.h -- the scheduling cycle's extension points: one table of
 * rows, one row per capability, run in table order on a pod set.
 *
 * A pod set is the unit of a cycle: a lone pod is a set of one, a gang's
 * minimum is one set (placed all or nothing), and each elastic member
 * beyond the minimum is a set of one that ranks behind. The cycle
 * (cycle.c) is the same for all three:
 *
 *   gate -> admit -> pre_place -> [Filter/Score, assume, reserve] per member
 *        -> placed: commit, bind (pre_bind on a bind worker)
 *        -> not placed: post_filter rows in order, then the set waits
 *   report (every reason given), end (always, last)
 *
 * Nothing is held between turns: a set that is not placed forgets every
 * member it assumed before its cycle ends.
 *
 * Before all this, pre_enqueue (kube's PreEnqueue) decides whether a
 * pending pod enters a queue at all: on its add, on every update, and
 * again when popped. A pod it keeps out is in no cycle (gates.c).
 *
 * Around the cycle:
 *
 *   pool thread, each turn:   tick -> pop a pod -> the cycle above
 *   Binding answered 2xx:     post_bind
 *   an event that may let waiting pods fit (a pod left its node, a node
 *   changed, a Queue...):     on_event, every row -> the widest answer
 *                             for each pool wakes it (events.c)
 *
 * on_event is kube's QueueingHint: a row may narrow what an event wakes
 * (the reservation: in the pool of a held node, only the pods its room
 * admits); when no row answers, every pool's waiting pods move. */
#ifndef AISCHED_SCHED_EXTENSION_H
#define AISCHED_SCHED_EXTENSION_H

#include <jansson.h>
#include <stddef.h>

#include "framework/framework.h"
#include "framework/queues.h"
#include "framework/services.h"
#include "kube/informer.h"
#include "queue/queue.h"

struct scheduler;
struct sched_pool;

/* The most rows a table may have: a pod set keeps a slot for each. */
#define SCHED_MAX_ROWS 32

struct pod_set;

/* What rows keep that the core's mechanism reads (sched_ext_t.publish). */
typedef struct sched_published {
    /* The groups' store (the gang row's PodGroups and members), opaque to
     * the core: only the services' calls that forward to it (services.c)
     * know its type; the rows read it through them. */
    void *group_store;
    /* The group of a set the row formed (a minimum, or a surplus member's:
     * its minimum's), or NULL; kept in the row's slot, valid until the
     * set's end. The core only forwards it to the rows that ask (the
     * services' set_gang), with set_group_row as row. */
    const void *(*set_group)(const sched_row_t *row, const struct pod_set *set);
    const sched_row_t *set_group_row;
    /* When an elastic gang's freezing window ends (the minimum-runtime
     * row's, asked with its row freeze_row; the services' freeze_end). */
    int64_t (*freeze_end)(const sched_row_t *row, const char *ns, const char *group, const pod_t *member, char *src,
                          size_t srclen);
    const sched_row_t *freeze_row;
    /* The value of the PriorityClass name (the priority-classes row's, its
     * room classes): 1 with *out when the class is known. */
    int (*class_value)(void *classes, const char *name, int32_t *out);
    void *classes;
    /* The topology levels gangs may ask for (the topology row's, parsed
     * from --topology-levels; the services' topo_levels). */
    const topo_levels_t *topo_levels;
    /* The GPUs a pod's DRA claims count as in its queue (the
     * dynamic-resources row's, with its room; the services'
     * queue_devices). Leaf locks only. */
    double (*queue_devices)(void *self, const pod_t *pod);
    void *queue_devices_self;
    /* Each node's value of a DRA device attribute (the dynamic-resources
     * row's, with its room; the services' device_attr_nodes). */
    void (*device_attr_nodes)(void *self, const char *attr, sched_node_value_fn fn, void *ud);
    void *device_attr_self;
} sched_published_t;

typedef enum {
    SET_LONE = 0, /* a pod outside any gang */
    SET_MINIMUM,  /* a gang's pending members; the first need place together */
    SET_SURPLUS   /* one elastic member beyond its gang's minimum */
} set_kind_t;

/* What the set's members belong to, as the core's decision records name
 * it (trace.c) and preemption plans it (preempt_eval.c): filled by the
 * row that forms the set (the gang row, for a minimum; kind NULL: a set
 * of its own pods), freed with the set. */
typedef struct set_group {
    const char *kind;      /* the records' kind ("podgroup"; static) */
    char *ns, *name, *key; /* its object (owned) */
    char *priority_class;  /* the class its members preempt with when above
                           * their own (owned; NULL: none) */
} set_group_t;

typedef enum {
    SET_OPEN = 0, /* still in its cycle */
    SET_PLACED,   /* assumed and handed to the binder */
    SET_HELD,     /* given back before placement (gate, admit) */
    SET_FAILED,   /* did not fit; post-filter ran; given back */
    SET_ROOM,     /* did not fit; a post-filter row is making room; given back */
    SET_MOVED,    /* taken by another pool's queue (borrowing, going home) */
    SET_DROPPED   /* fenced, or no longer ours: freed */
} set_outcome_t;

typedef struct pod_set {
    struct sched_pool *P;  /* the pool whose thread runs the cycle */
    int pool_id;           /* P's id and name, for rows that see no sched_pool */
    const char *pool_name; /* (the pool's; pools live as long as the scheduler) */
    set_kind_t kind;
    /* Taken out of P's queue, the cycle's until given on (then NULL).
     * items[0..need) place all or nothing; items[need..n) are the
     * gang's elastic members, each its own SET_SURPLUS set afterwards. */
    queue_item_t **items;
    int n, need;
    /* A set of many (the gang row forms them) is one group's: its
     * minimum, or an elastic member behind it. These say so generically. */
    int placed;                   /* members of its group already placed (count toward min) */
    int min;                      /* its group's minimum (a gang's minMember; 0: a set of one) */
    char *label;                  /* its group in messages ("pod group ns/name"); NULL for a set of one */
    const struct pod_set *parent; /* a surplus set's minimum set */
    set_group_t group;            /* what its members belong to (the row that forms the set fills it) */
    char *only_node;              /* gate: a set of one goes to this node or nowhere (owned) */
    fw_node_match_t match;        /* pre_place: nodes limited to those it matches (a row's) */
    int has_match, match_soft;    /* match_soft: a member that fits nowhere inside may go outside */
    char *placed_msg;             /* said once placed (a pre_place row's) */
    char *place_note;             /* a pre_place row's note, said after why if it does not fit (owned) */
    char *why;                    /* why it is held or did not fit */
    const char *reason;           /* its events' reason (FailedScheduling) */
    int fits;                     /* members assumed before the first failure */
    int backoff;                  /* given back to the backoff queue */
    set_outcome_t outcome;
    /* A row's note of what the set waits for (said after why; owned) and
     * when to try it again (wall ms; 0: at the next event or the flush). */
    char *wait_note;
    int64_t wake_wall_ms;
    /* Its decision record in the making (trace.c): the steps the rows
     * said (pod_set_step) and why its failing member fit nowhere; NULL
     * until a row says something. */
    struct pod_set_trace *trace;
    int records; /* decision records are kept (else pod_set_step says nothing) */
    /* Each row's own data for this set, at the row's place in the table
     * (sched_row_t.index): made by the row's point that needs it, freed
     * by its end (which runs whatever the outcome); NULL until then. */
    void *slot[SCHED_MAX_ROWS];
} pod_set_t;

/* A nominee point's answers (sched_ext_t.nominee). */
enum { NOMINEE_ANY = 0, NOMINEE_FREE, NOMINEE_KEPT };

/* What a row's gate, admit, pre_place or post_filter says:
 * EXT_NEXT  the set goes on (to the next row);
 * EXT_HOLD  the set waits before placement: set->why says why;
 * EXT_FAIL  it cannot be placed as it stands (set->why): post-filter runs;
 * EXT_DONE  (post_filter) the row made room, or moved the items: the
 *           rows after it do not run. */
typedef enum { EXT_NEXT = 0, EXT_HOLD, EXT_FAIL, EXT_DONE } ext_rc_t;

/* What a pre_enqueue row says of a pod it keeps out of the queues. */
typedef struct enqueue_hold {
    const char *reason; /* its PodScheduled=False condition's reason (static);
                         * NULL: a short hold, said in no condition or event */
    char *message;      /* that condition's message (owned) */
    int event;          /* also one Warning event, reason FailedScheduling */
} enqueue_hold_t;

/* An object kind a row watches. scheduler_start lists and watches path
 * with an informer whose handler gets the row's room; a sandbox feeds the
 * objects of kind to the same handler (scheduler_feed). A row's list ends
 * with an entry whose kind is NULL. */
typedef struct sched_watch {
    const char *kind; /* "PodGroup": as a sandbox is fed it */
    const char *path; /* "/apis/scheduling.x-k8s.io/v1alpha1/podgroups" */
    informer_handler_fn on_event;
    int shown; /* the dashboard shows these objects: each event moves its change counter */
} sched_watch_t;

/* A row's watch that pods wait for (sched_ext_t.wait; a gang member for
 * its PodGroup, a pod for its Queue): once nodes and pods are listed,
 * scheduler_start gives the list of kind up to ms, unless its API is not
 * served (the JSON at served_path lists, in served_list, no item whose
 * served_field is served_value), which unserved says (info); late is said
 * (warning) when the list is not done in time. A missing API or RBAC
 * grant never stops the scheduler. */
typedef struct sched_watch_wait {
    const char *kind; /* one of the row's watches */
    int ms;
    const char *served_path, *served_list, *served_field, *served_value;
    const char *unserved, *late;
} sched_watch_wait_t;

/* An event that may let waiting pods fit (on_event). */
typedef enum {
    SCHED_EV_POD_DELETED = 0,    /* a pod holding room left the cache (bound,
                                  * assumed, or pending and nominated) */
    SCHED_EV_POD_COMPLETED,      /* a bound or assumed pod finished */
    SCHED_EV_POD_FORGOTTEN,      /* an assumed pod was not bound (its bind
                                  * failed, or it is held back) */
    SCHED_EV_NOMINATION_DROPPED, /* nominated pods gave up their room */
    SCHED_EV_EVICTION_REFUSED,   /* a preemption's room is given back */
    SCHED_EV_POD_ASSIGNED,       /* a bound pod others' affinity may want,
                                  * or one whose requests shrank */
    SCHED_EV_NODE_CHANGED,
    SCHED_EV_OBJECT /* another object the scheduler watches: a Queue,
                     * PodGroup, PriorityClass, Pool, storage object */
} sched_event_kind_t;

typedef struct sched_event {
    sched_event_kind_t kind;
    const pod_t *pod;   /* the pod involved, or NULL (unknown, or several) */
    const char *node;   /* the node involved, or NULL */
    const char *reason; /* what the queues log: "PodDeleted", "QueueChanged"... */
} sched_event_t;

/* How much of one pool an answer wakes: the widest answer wins. */
typedef enum {
    SCHED_WAKE_NONE = 0, /* nothing */
    SCHED_WAKE_SOME,     /* the waiting pods match admits */
    SCHED_WAKE_ALL       /* every waiting pod */
} sched_wake_level_t;

/* A row's answer to an event: pool gets in_pool, every other pool gets
 * others. "Nothing" is all NONE; "every pool" is others = ALL with pool
 * -1; "only these pods of pool X" is in_pool = SOME with others = NONE.
 * match is called with the queue's mutex held, as queue_move_matching's
 * pred; release (if any) frees ud once the wake is done. */
typedef struct sched_wake {
    int pool; /* -1: none named */
    sched_wake_level_t in_pool;
    sched_wake_level_t others; /* NONE or ALL */
    queue_pod_pred_fn match;   /* in_pool == SOME */
    void *ud;
    void (*release)(void *ud);
} sched_wake_t;

/* The victims point's question (sched_ext_t.victims): may victim go so
 * that preemptor fits, inside pool pool_id? The rest is the preemptor's
 * side, as preemption's evaluator sees it. */
typedef struct sched_victim_q {
    const pod_t *victim, *preemptor;
    int pool_id;
    /* Queues are on: the preemptor's queue (tenant), its request (a
     * group: its minimum's), whether it starves, its priority, when it was
     * created (wall ms); now_wall the time the rules judge at. */
    int queues, tenant;
    const double *req;
    int starving;
    int32_t prio;
    int64_t created_ms, now_wall;
    /* A group's preemption (a set of many: a gang's minimum): the priority
     * of its class, which its members preempt with when it is above their
     * own. */
    int has_group_prio;
    int32_t group_prio;
    /* The set the preemption is for (NULL: none): a protect row notes in
     * its slot what it kept, said by its kept point. */
    pod_set_t *set;
} sched_victim_q_t;

/* Whose rule a victims answer is, weakest first. */
typedef enum {
    VICTIM_PASS = 0,    /* no say */
    VICTIM_BY_PRIORITY, /* the priority rule (the preemption row) */
    VICTIM_BY_QUEUE,    /* queue reclaim (the tenants row) */
    VICTIM_BY_POOL,     /* the lender takes its room back (the lender row) */
    VICTIM_NEVER        /* never a victim (a GPU reservation: the gpu-sharing row) */
} sched_victim_rule_t;

/* A row's answer (zeroed before it is asked). */
typedef struct sched_victim_answer {
    sched_victim_rule_t rule;
    int may;      /* under rule: 1 the victim may go, 0 it may not */
    int kind;     /* when it may: FS_MINRT_PREEMPT or FS_MINRT_RECLAIM (the
                   * minimum runtime that protects it) */
    int64_t rank; /* added to the victim's rank, whatever the rule (lowest
                   * rank evicted first) */
} sched_victim_answer_t;

/* A group of pods as the dashboard's pages show it (sched_ext_t.groups):
 * strings valid for the call. */
typedef struct sched_group_info {
    const char *key, *ns, *name; /* key: "ns/name" */
    const char *queue;           /* the queue its pods are charged to */
    const char *pool;            /* the pool it waits in, else its members' */
    const char *note;            /* why it waits, as the row knows (NULL: no word) */
    int members;                 /* the pods it has */
    int done;                    /* its minimum is placed */
} sched_group_info_t;
typedef void (*sched_group_fn)(void *ud, const sched_group_info_t *g);

/* A node's figures as the dashboard's pages show them (sched_ext_t.node_use):
 * the core's count, which a row that counts GPUs otherwise replaces. */
typedef struct sched_node_use {
    double gpu_used;    /* GPUs in use (the core's: requested nvidia.com/gpu) */
    int64_t gpu_shared; /* GPUs shared among pods (the core's: 0) */
    int dra_devices;    /* DRA devices on it (the core's: 0) and */
    int dra_used;       /* how many are in use */
} sched_node_use_t;

/* A pod's figures as the dashboard's pages show them (sched_ext_t.pod_use). */
typedef struct sched_pod_use {
    double gpus; /* GPUs it asks (the core's: whole nvidia.com/gpu) plus what
                  * rows add (its share of shared GPUs) */
    int holder;  /* a pod a row made to hold room for others (a GPU
                  * reservation pod): no pool lends it */
} sched_pod_use_t;

/* How the core combines the victims answers (victims.c, one victim):
 *  1. mechanism first, no row asked: a pod not ours, one being deleted,
 *     the preemptor itself, one whose eviction is already requested is
 *     never a victim;
 *  2. every row with the point answers, in table order; the answer of
 *     the strongest rule decides (NEVER > BY_POOL > BY_QUEUE >
 *     BY_PRIORITY; of two of one rule, the first row's). A NEVER ends
 *     the asking. No answer but PASS: not a victim;
 *  3. a victim's rank is the sum of every row's rank;
 *  4. a victim the rule allows is still kept while a row's protect point
 *     protects it from the deciding answer's kind (the minimum-runtime
 *     row: a young pod, a frozen gang's surplus), which notes it for the
 *     set and says it at its kept point when the evaluation ends.
 * With the rows of extensions.c this is the one order: a GPU reservation
 * never; a borrower always, ranked below every home pod, as reclaim;
 * across queues only reclaim's rules (a refusal there is final, a yes is
 * reclaim), inside one queue reclaim of a starving queue's own; last, a
 * pod below the preemptor's priority (or its group class's). */

/* One capability's row. Every point is optional. The set points run on
 * the set's pool thread with no lock held.
 *
 * The points that take a sched_row_t get the row's room (row->self) and
 * the services table (framework/services.h): a row, in its concept's
 * folder, sees the core only through them. */
typedef struct sched_ext {
    const char *name;
    /* The row's options, checked before the scheduler is built: 0, or -1
     * with err (scheduler_new fails with it). */
    int (*check)(const scheduler_opts_t *o, char *err, size_t errlen);
    /* The row's room, made when the scheduler is built (NULL: none) and
     * freed by fini when it is freed, after every thread stopped. */
    void *(*init)(const sched_services_t *svc, void *core);
    void (*fini)(void *self);
    /* A row with a thread of its own starts it when the scheduler starts
     * (0, or -1 with err: the scheduler does not start) and stops it
     * before the core's binder, writer and caches go (stop may be called
     * twice, and without start). */
    int (*start)(const sched_row_t *row, char *err, size_t errlen);
    void (*stop)(const sched_row_t *row);
    /* The objects the row keeps its own state of (NULL: none), and the
     * one of them pods wait for at the start (NULL: none). */
    const sched_watch_t *watches;
    const sched_watch_wait_t *wait;
    /* 0 lets a pending pod into a scheduling queue; 1 keeps it out, hold
     * filled. Called under the held set's mutex (gates.c), so a row takes
     * only a leaf lock of its own and writes nothing: gates.c writes what
     * hold says, once per pod. A row whose hold ends by itself (the
     * grouper's) lets go with sched_pod_released. */
    int (*pre_enqueue)(const sched_row_t *row, const pod_t *pod, enqueue_hold_t *hold);
    /* May widen the set (a gang gathers its pending members) or hold it. */
    ext_rc_t (*gate)(const sched_row_t *row, pod_set_t *set);
    /* Quotas and limits of the set's members taken together. */
    ext_rc_t (*admit)(const sched_row_t *row, pod_set_t *set);
    /* Narrows where the set goes (set->match), or fails it. */
    ext_rc_t (*pre_place)(const sched_row_t *row, pod_set_t *set);
    /* One member assumed on node: 0, or -1 with err (the node no longer
     * fits it); unreserve undoes a reserve that succeeded, in the cycle or
     * when the pod's bind does not happen (sched_rows_unreserve). */
    int (*reserve)(const sched_row_t *row, const pod_t *pod, const char *node, char *err, size_t errlen);
    void (*unreserve)(const sched_row_t *row, const pod_t *pod);
    /* The set's minimum is assumed and its binds are on their way. */
    void (*commit)(const sched_row_t *row, pod_set_t *set);
    /* The set did not fit: make room, or move it. */
    ext_rc_t (*post_filter)(const sched_row_t *row, pod_set_t *set);
    /* The set is given back with msg (before each member's own event). */
    void (*report)(const sched_row_t *row, pod_set_t *set, const char *msg);
    /* Last, whatever the outcome: the row lets go of what it holds. */
    void (*end)(const sched_row_t *row, pod_set_t *set);
    /* Bind worker, before the Binding: PREBIND_READY; PREBIND_WAITING
     * (the row took *it and resubmits the bind); PREBIND_FAILED (err).
     * ann: the annotations the Binding carries (created on demand). */
    int (*pre_bind)(const sched_row_t *row, queue_item_t **it, const char *node, const char *lender, json_t **ann,
                    char *err, size_t errlen);
    /* The node as pod should see it with the room the row holds there for
     * others (a consolidation's movers, a gang's reservation): view
     * itself, or a clone with what it adds (*cloned set; a clone it was
     * given is changed in place). Cache lock held; the cycle's hottest
     * loop asks it of every node it filters. */
    node_info_t *(*node_view)(const sched_row_t *row, const pod_t *pod, node_info_t *view, int *cloned);
    /* Whether room nominated on a node of pool for nominee is kept from
     * pod, where the row has a say: NOMINEE_FREE (pod may use it, whatever
     * else says), NOMINEE_KEPT (pod sees it taken), or NOMINEE_ANY (the
     * core's rule: home pool first, then priority). same_side: both are
     * home in pool, or both borrowers. Cache lock held; asked for every
     * nominated pod on every node a cycle filters. */
    int (*nominee)(const sched_row_t *row, const pod_t *nominee, const pod_t *pod, int pool, int same_side);
    /* What the row keeps that the Filter plugins read (fw_cluster_t's
     * store fields: the volume store): set in cl, asked once when the rows
     * are built, valid as long as the room. Every cluster view the core
     * makes starts from it. */
    void (*cluster)(const sched_row_t *row, fw_cluster_t *cl);
    /* What the row publishes of the Queues (framework/queues.h: tenants,
     * fair share, quotas and limits), bound to its room: asked once when
     * the rows are built; the core keeps it and forwards what other rows
     * need through the services. One row answers it (the tenants row). */
    void (*queues)(const sched_row_t *row, sched_queues_t *q);
    /* What the row keeps that the core reads (sched_published_t): set in
     * pub, asked once when the rows are built, valid as long as the room. */
    void (*publish)(const sched_row_t *row, sched_published_t *pub);
    /* Offline mode (the sandbox) starts no row's thread (start, above) and
     * calls drain instead, once per drain of the scheduler: the thread's
     * work done once; 1 when there was some. */
    int (*drain)(const sched_row_t *row);
    /* The Binding succeeded (kube's PostBind), on the thread that got the
     * API server's answer: what the row says of the bound pod. lender: the
     * pool it borrowed node from, or NULL. */
    void (*post_bind)(const sched_row_t *row, const pod_t *pod, const char *node, const char *lender);
    /* Housekeeper, once a second. */
    void (*housekeep)(const sched_row_t *row);
    /* Housekeeper, as it writes Pool pool's .status: the row adds its own
     * fields to status (the core's: capacity and use). */
    void (*pool_status)(const sched_row_t *row, const char *pool, json_t *status);
    /* A pool's thread, at each turn before it pops the next pod (the row
     * keeps its own cadence). */
    void (*tick)(const sched_row_t *row, struct sched_pool *P);
    /* An event that may let waiting pods fit (kube's QueueingHint): 1 with
     * *wake filled (zeroed, pool -1, when called), or 0: no opinion.
     * Called where the event is seen (an informer, a pool thread, a bind
     * or eviction worker) with no lock of the core held. */
    int (*on_event)(const sched_row_t *row, const sched_event_t *ev, sched_wake_t *wake);
    /* Preemption's victims point (preempt_eval.c): each candidate's
     * victims widened to what must go with them (the gang row: a gang
     * goes whole, each mate by the pod rule, asked through the services'
     * is_victim with vc); a candidate where that cannot be is dropped
     * (cleared). Returns how many are left, in place. pdb_mu held. */
    int (*expand)(const sched_row_t *row, void *vc, const pod_t *preemptor, preempt_candidate_t *cands, int n);
    /* Preemption's copies and reclaim's jobs (preempt_eval.c): mates, the
     * pods that go with victim when it goes (its group's others, unless it
     * is a member its group may lose alone), each a new reference in *out
     * (the caller unrefs them and frees *out; 0: none); minimum_member, 1
     * when pod is one of its group's minimum (one job for reclaim with the
     * group's other minimum members, as group_of names the group). The
     * first row that answers decides. pdb_mu may be held: leaf locks only. */
    int (*mates)(const sched_row_t *row, const pod_t *victim, pod_t ***out);
    int (*minimum_member)(const sched_row_t *row, const pod_t *pod);
    /* Preemption's victims point: this row's rule for one victim (the
     * combining rule is above sched_victim_q_t). pdb_mu held; the row
     * takes only leaf locks. */
    void (*victims)(const sched_row_t *row, const sched_victim_q_t *q, sched_victim_answer_t *a);
    /* Preemption's victims point, its last step (the combining rule's 4):
     * 1 when q's victim, which the rules allow under kind (FS_MINRT_*),
     * is still kept now; the row notes it in q->set's slot when there is
     * a set. Also asked of the victims a queue limit's store chose, and of
     * the pods a consolidation would move (services' min_runtime). pdb_mu
     * may be held; the row takes only leaf locks. */
    int (*protect)(const sched_row_t *row, const sched_victim_q_t *q, int kind);
    /* A preemption for set was evaluated (made: room is being made): what
     * the row's protect point kept goes on the set when no room was made
     * (its wait note and retry time), and into *text when text is given
     * and *text is NULL (owned); then the row forgets it. */
    void (*kept)(const sched_row_t *row, pod_set_t *set, int made, char **text);
    /* A preemption's victims were committed (before the preemptors are
     * nominated): what the row says of them. */
    void (*victims_taken)(const sched_row_t *row, pod_t *const *victims, int n);
    /* Preemption's planning (preempt_eval.c) of a group's minimum: the
     * node matches it must stay in, one plan inside each, the best kept
     * (the topology row: each domain of a required level). The count with
     * *out (the caller frees each and the array), or -1: no say. The
     * first row that says decides. */
    int (*plan_within)(const sched_row_t *row, const struct pod_set *set, fw_node_match_t **out);
    /* A group's preemption was committed in pool (nvictims evicted for the
     * need members of set's minimum): what the row says of it. */
    void (*preempting)(const sched_row_t *row, const struct pod_set *set, const char *pool, int nvictims, int need);
    /* The set's group as its decision record shows it (trace.c's "gang"
     * key, given the group it waits behind, may be NULL): a new
     * reference, or NULL (no say; the first answer is taken). */
    json_t *(*record)(const sched_row_t *row, const struct pod_set *set, const char *behind);
    /* Why no decision record of kind ns/name is kept (scheduler_explain_
     * absent), for a kind the row's sets are recorded under ("podgroup"):
     * the whole message (owned), or NULL (not the row's kind). */
    char *(*absent)(const sched_row_t *row, const char *kind, const char *ns, const char *name);
    /* The PriorityClass a pod's group preempts with when it is above the
     * pod's own (owned), or NULL: none, or no group. The first answer is
     * taken. Leaf locks only. */
    char *(*group_class)(const sched_row_t *row, const pod_t *pod);
    /* The dashboard (scheduler/dashboard.c): fn once for each group of
     * pods the row keeps (the pending page shows a group with pending
     * pods as one row, the overview counts the waiting ones); fn copies
     * what it keeps and calls nothing back. pools: the live pools' names
     * by id (a dead one's NULL), which the row names a group's pool by.
     * group_of: the name of the group pod names (borrowed from pod; NULL:
     * none). Any thread, no lock of the core held. */
    void (*groups)(const sched_row_t *row, const char *const *pools, int npools, sched_group_fn fn, void *ud);
    const char *(*group_of)(const sched_row_t *row, const pod_t *pod);
    /* The dashboard's node figures (the nodes page, its map, the
     * overview): u holds the core's count (and what rows before said), the
     * row changes what it counts otherwise. Cache read lock and ni's
     * stripe held; ni->node is set. */
    void (*node_use)(const sched_row_t *row, const node_info_t *ni, sched_node_use_t *u);
    /* The dashboard's nodes page: the row adds its fields to the node's
     * item (after the core's, in table order). Cache read lock and ni's
     * stripe held; ni is NULL when the node left the cache since its
     * figures were taken (the row adds its fields as for a node with
     * nothing of its own). */
    void (*node_doc)(const sched_row_t *row, const node_info_t *ni, json_t *item);
    /* The dashboard's pod figures (pending and lent resources): u holds
     * the core's, the row adds or marks its own. Any thread; the pod may
     * be on a node whose stripe is held. */
    void (*pod_use)(const sched_row_t *row, const pod_t *pod, sched_pod_use_t *u);
    /* Whether the row's housekeeping has work that time moves on (a
     * stale gang waiting out its grace, GPU reservation pods held): a
     * sandbox does not jump its clock past idle seconds while one has. */
    int (*timed)(const sched_row_t *row);
    /* Pods informer: a pod (any scheduler's) was added or changed, right
     * after the cache took it and before the queues hear of it; the row
     * may keep a reference (pod_ref). */
    void (*pod_seen)(const sched_row_t *row, pod_t *pod);
    /* Pods informer: a pod left the cache (deleted), before the event that
     * wakes the pools. */
    void (*pod_deleted)(const sched_row_t *row, const pod_t *pod);
    /* Pods informer: one of our pods stopped pending (bound, or finished
     * before it was). */
    void (*pod_settled)(const sched_row_t *row, const pod_t *pod);
} sched_ext_t;

/* extensions.c: the table, in order. */
const sched_ext_t *sched_extensions(int *n);

/* events.c: what performs an event's combined wake (the scheduler's pools,
 * or a test's record): all or some of pool's waiting pods move. */
typedef struct sched_wake_sink {
    int npools; /* pools 0..npools-1 (a sink skips one that is gone) */
    void (*all)(void *ud, int pool, const char *reason);
    void (*some)(void *ud, int pool, queue_pod_pred_fn match, void *match_ud, const char *reason);
    void *ud;
} sched_wake_sink_t;

/* Asks each of the n rows that has on_event (ext[i] with its rows[i]),
 * combines their answers and performs the wake on sink. For each pool the
 * widest answer wins: ALL if any row said ALL of it; else, if rows said
 * SOME, the pods any of their matches admits; else nothing. When no row
 * answered, every pool's waiting pods move. Returns how many answered. */
int sched_events_fan_out(const sched_ext_t *ext, const sched_row_t *rows, int n, const sched_event_t *ev,
                         const sched_wake_sink_t *sink);

/* A set of one from a popped item (the set takes it). */
void pod_set_init(pod_set_t *set, struct sched_pool *P, set_kind_t kind, queue_item_t *it);
/* Frees what the set still owns (items left in it are freed, not given
 * back: the cycle gives them back first). */
void pod_set_clear(pod_set_t *set);
/* Replaces set->why (takes msg). */
void pod_set_why(pod_set_t *set, const char *reason, char *msg);
/* The pods of the set's minimum (items[0..need)), borrowed, in a
 * malloc'd array the caller frees: what the evaluator, the lender choice
 * and the topology row's copies take. */
pod_t **pod_set_pods(const pod_set_t *set);
/* A row's step for the set's decision record (trace.c): step ("admission",
 * "consolidation", "preemption", "borrowing", "gang-wait"...), its result
 * ("planned", "no candidate", "skipped"...) and a detail: names, reasons
 * and numbers only. Said on the paths where the set is not placed. */
void pod_set_step(pod_set_t *set, const char *step, const char *result, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
