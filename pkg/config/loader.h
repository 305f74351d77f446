/* loader.h -- the YAML reading helpers config.c shares with kubesched.c
 * (internal to pkg/config): typed getters that fail with "FILE:LINE: ..."
 * and a mapping walker that refuses duplicate keys. */
#ifndef AISCHED_CONFIG_LOADER_H
#define AISCHED_CONFIG_LOADER_H

#include <stddef.h>
#include <yaml.h>
#include "config/config.h"

#define CFG_MAX_PROFILES 16

typedef struct cfg_loader {
    yaml_document_t *doc;
    const char *name; /* file name for messages */
    char *err;
    size_t errlen;
} cfg_loader_t;

/* Sets "name:LINE: message" (n's line) and returns -1. */
int cfg_fail(cfg_loader_t *l, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* n's text, or NULL with the error set when n is not a scalar. */
const char *cfg_scalar(cfg_loader_t *l, const yaml_node_t *n, const char *what);
/* A plain empty, "~" or "null" scalar. */
int cfg_is_null(const yaml_node_t *n);
/* dst: a heap-owned string member of the config (replaced, old freed). */
void cfg_set_str(void *dst, const char *s);
int cfg_get_str(cfg_loader_t *l, const yaml_node_t *n, const char *what, int allow_empty, void *dst);
int cfg_get_int(cfg_loader_t *l, const yaml_node_t *n, const char *what, int min, int max, int *dst);
int cfg_get_double(cfg_loader_t *l, const yaml_node_t *n, const char *what, double min, double max, double *dst);
int cfg_get_bool(cfg_loader_t *l, const yaml_node_t *n, const char *what, int *dst);
int cfg_get_duration(cfg_loader_t *l, const yaml_node_t *n, const char *what, int *dst);

/* Calls fn per key of the mapping (a null scalar is an empty mapping). */
typedef int (*cfg_pair_fn)(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx);
int cfg_each_pair(cfg_loader_t *l, const yaml_node_t *map, const char *what, cfg_pair_fn fn, void *ctx);

/* Calls fn per item of a list (a null scalar is an empty list; anything
 * else fails with the message not_list). */
typedef int (*cfg_item_fn)(cfg_loader_t *l, const yaml_node_t *item, void *ctx);
int cfg_each_item(cfg_loader_t *l, const yaml_node_t *seq, const char *not_list, cfg_item_fn fn, void *ctx);

/* Sections both file formats share; ctx is the sched_config_t. */
int cfg_on_client(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx);
int cfg_on_leader(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx);
/* A list of {name, weight} into fw->res_weights. */
int cfg_load_resources(cfg_loader_t *l, const yaml_node_t *seq, fw_config_t *fw);

/* One pluginConfig entry {name, args}: its nodes and name (args may be
 * NULL); 0, or -1 with the error set. */
int cfg_plugin_config_entry(cfg_loader_t *l, const yaml_node_t *item, const yaml_node_t **name_n,
                            const yaml_node_t **args, const char **name);

/* One {name, weight} plugin entry (ctx: cfg_plugin_item_t). */
typedef struct cfg_plugin_item {
    char name[FW_PLUGIN_NAME_LEN];
    int weight, have_name;
} cfg_plugin_item_t;
int cfg_plugin_item(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx);

/* The enabled or disabled list (key) of a plugin set at point: add gets
 * each {name, weight} read. */
typedef int (*cfg_plugin_add_fn)(cfg_loader_t *l, const yaml_node_t *item, int enable, const cfg_plugin_item_t *it,
                                 void *ctx);
int cfg_plugin_set(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, const char *point,
                   cfg_plugin_add_fn add, void *ctx);

/* PodTopologySpread args (ctx: cfg_spread_ctx_t): defaultConstraints into
 * fw->spread_defaults; have_type/list say whether defaultingType was given
 * and is List. The caller applies its API version's defaulting. */
typedef struct cfg_spread_ctx {
    fw_config_t *fw;
    int have_type, list;
} cfg_spread_ctx_t;
int cfg_spread_args(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx);

void cfg_free_profiles(sched_config_t *c);

/* A pluginConfig entry seen first by the caller of cfg_load_profiles: 0 read,
 * -1 error set, 1 left to the AiSchedulerConfiguration rules. */
typedef int (*cfg_args_hook_fn)(cfg_loader_t *l, const yaml_node_t *name_n, const char *name, const yaml_node_t *args,
                                sched_profile_config_t *p, sched_config_t *c);
/* `profiles:` as AiSchedulerConfiguration reads it (kube v1.20's
 * v1beta1 shape, plugin names and merge rules) into c->profiles; hook may
 * be NULL. 0, or -1 with the error in l. */
int cfg_load_profiles(cfg_loader_t *l, const yaml_node_t *seq, sched_config_t *c, cfg_args_hook_fn hook);

#endif
