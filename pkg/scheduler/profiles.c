/* profiles.c -- scheduling profiles (one framework per schedulerName), the
 * informers of the objects that drive default spreading (Services, RCs,
 * ReplicaSets, StatefulSets), and the warning for fields we ignore. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

int profiles_init(scheduler_t *s, const scheduler_opts_t *o, char *err, size_t errlen)
{
    int n = 1 + (o->nextra > 0 ? o->nextra : 0);
    s->owners = owners_new();
    s->profiles = util_xcalloc((size_t)n, sizeof(*s->profiles));
    for (int i = 0; i < n; i++) {
        const char *name = i == 0 ? s->name : o->extra_names[i - 1];
        const fw_config_t *c = i == 0 ? &o->fw : &o->extra_fw[i - 1];
        for (int j = 0; j < s->nprofiles; j++)
            if (strcmp(s->profiles[j].name, name) == 0)
                return util_errf(err, errlen, "profile \"%s\" is defined twice", name);
        framework_t *fw = framework_new(c);
        if (!fw)
            return util_errf(err, errlen, "invalid framework configuration for profile \"%s\"", name);
        framework_set_owners(fw, s->owners);
        s->profiles[s->nprofiles].name = util_strdup(name);
        s->profiles[s->nprofiles].fw = fw;
        s->nprofiles++;
    }
    s->fw = s->profiles[0].fw;
    return 0;
}

void profiles_destroy(scheduler_t *s)
{
    for (int k = 0; k < OWNER_NKINDS; k++)
        informer_free(s->inf_owners[k]);
    for (int i = 0; i < s->nprofiles; i++) {
        free(s->profiles[i].name);
        framework_free(s->profiles[i].fw);
    }
    free(s->profiles);
    s->profiles = NULL;
    s->nprofiles = 0;
    s->fw = NULL;
    owners_free(s->owners);
    s->owners = NULL;
}

framework_t *sched_pod_fw(scheduler_t *s, const pod_t *p)
{
    for (int i = 1; i < s->nprofiles; i++)
        if (strcmp(s->profiles[i].name, p->scheduler_name) == 0)
            return s->profiles[i].fw;
    return s->fw;
}

int sched_is_ours(scheduler_t *s, const char *scheduler_name)
{
    if (!scheduler_name)
        return 0;
    for (int i = 0; i < s->nprofiles; i++)
        if (strcmp(s->profiles[i].name, scheduler_name) == 0)
            return 1;
    return 0;
}

int sched_may_preempt(scheduler_t *s, const pod_t *p)
{
    return !p->preempt_never && framework_preemption_enabled(sched_pod_fw(s, p));
}

void sched_warn_unsupported(scheduler_t *s, const pod_t *p)
{
    if (!p->unsupported)
        return;
    char msg[900];
    snprintf(msg, sizeof(msg), "ai-scheduler does not implement %s; the pod is scheduled as if unset", p->unsupported);
    LOG_W("pod %s: %s", p->key, msg);
    writer_pod_event(s->writer, p, "Warning", "UnsupportedConstraint", msg);
}

/* --- owners informers ---------------------------------------------------- */

static void on_owner_event(scheduler_t *s, owner_kind_t kind, kube_event_type_t type, const char *key, json_t *obj)
{
    if (type == KUBE_DELETED) {
        owners_delete(s->owners, kind, key);
        return;
    }
    char err[256];
    if (owners_update(s->owners, kind, key, obj, err, sizeof(err)) != 0)
        LOG_W("%s ignored for spreading: %s", key, err);
}

static void on_service(void *ud, kube_event_type_t t, const char *k, json_t *o)
{
    on_owner_event(ud, OWNER_SERVICE, t, k, o);
}
static void on_rc(void *ud, kube_event_type_t t, const char *k, json_t *o)
{
    on_owner_event(ud, OWNER_RC, t, k, o);
}
static void on_rs(void *ud, kube_event_type_t t, const char *k, json_t *o)
{
    on_owner_event(ud, OWNER_RS, t, k, o);
}
static void on_sts(void *ud, kube_event_type_t t, const char *k, json_t *o)
{
    on_owner_event(ud, OWNER_STS, t, k, o);
}

void sched_owner_event(scheduler_t *s, int kind, kube_event_type_t type, const char *key, json_t *obj)
{
    static const informer_handler_fn fns[OWNER_NKINDS] = {
        [OWNER_SERVICE] = on_service,
        [OWNER_RC] = on_rc,
        [OWNER_RS] = on_rs,
        [OWNER_STS] = on_sts,
    };
    if (kind >= 0 && kind < OWNER_NKINDS)
        fns[kind](s, type, key, obj);
}

void owners_informers_create(scheduler_t *s)
{
    static const char *const paths[OWNER_NKINDS] = {
        [OWNER_SERVICE] = "/api/v1/services",
        [OWNER_RC] = "/api/v1/replicationcontrollers",
        [OWNER_RS] = "/apis/apps/v1/replicasets",
        [OWNER_STS] = "/apis/apps/v1/statefulsets",
    };
    static const informer_handler_fn fns[OWNER_NKINDS] = {
        [OWNER_SERVICE] = on_service,
        [OWNER_RC] = on_rc,
        [OWNER_RS] = on_rs,
        [OWNER_STS] = on_sts,
    };
    for (int k = 0; k < OWNER_NKINDS; k++)
        s->inf_owners[k] = informer_new(s->kc, paths[k], NULL, fns[k], s);
}

/* Not waited for long: they only shape scores, and a missing permission
 * must not keep the scheduler from starting. */
void owners_informers_start(scheduler_t *s)
{
    for (int k = 0; k < OWNER_NKINDS; k++)
        if (informer_start(s->inf_owners[k]) != 0)
            LOG_W("cannot start a watcher for default spreading");
    int64_t deadline = util_now_ms() + 3000;
    for (int k = 0; k < OWNER_NKINDS; k++) {
        int64_t left = deadline - util_now_ms();
        if (!informer_wait_synced(s->inf_owners[k], left > 0 ? (int)left : 1))
            LOG_W("%s not listed yet: default spreading ignores them until they are", k == OWNER_SERVICE ? "services"
                                                                                      : k == OWNER_RC
                                                                                          ? "replicationcontrollers"
                                                                                      : k == OWNER_RS ? "replicasets"
                                                                                                      : "statefulsets");
    }
}
