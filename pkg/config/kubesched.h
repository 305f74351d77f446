/* kubesched.h -- KubeSchedulerConfiguration files of
 * kubescheduler.config.k8s.io/v1 (kube 1.25+) and v1beta3, read with kube
 * 1.30-1.35's defaults and merge rules, and v1beta1 (kube 1.20-1.21), read
 * with v1.20's, into ai-scheduler profiles (internal to pkg/config;
 * config_load_string dispatches here). */
#ifndef AISCHED_CONFIG_KUBESCHED_H
#define AISCHED_CONFIG_KUBESCHED_H

#include "config/loader.h"

#define KUBESCHED_GROUP "kubescheduler.config.k8s.io/"
#define KUBESCHED_KIND  "KubeSchedulerConfiguration"

/* Whether root (a mapping) has an apiVersion in KUBESCHED_GROUP. */
int kubesched_is(cfg_loader_t *l, const yaml_node_t *root);

/* root: the file's mapping, whose apiVersion is in KUBESCHED_GROUP. Checks
 * the version and kind, then loads the profiles (none in the file: kube's
 * one default profile) over c. 0, or -1 with the error in l. */
int kubesched_load(cfg_loader_t *l, const yaml_node_t *root, sched_config_t *c);

#endif
