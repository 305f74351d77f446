/* template.h -- turns a MultiClusterJob's template into the objects one
 * member cluster gets: `<% $mcc.NAME %>` replaced by that cluster's value,
 * each object renamed `<name>-<cluster>`, put in the cluster's namespace and
 * labelled with the hub job's uid (the only objects the controller ever
 * touches carry that label).
 *
 * Pure functions on jansson values; no I/O. */
#ifndef AISCHED_DISPATCH_TEMPLATE_H
#define AISCHED_DISPATCH_TEMPLATE_H

#include <stddef.h>
#include <jansson.h>

/* Labels put on every specialised object and on the pod template inside it
 * (spec.template, spec.jobTemplate.spec.template), so pods carry them too. */
#define DSP_LABEL_UID     "resource.aibee.cn/multiclusterjob-uid"
#define DSP_LABEL_JOB     "resource.aibee.cn/multiclusterjob"
#define DSP_LABEL_CLUSTER "resource.aibee.cn/multicluster-cluster"

/* Substitutes params into a deep copy of v for cluster. A string that is
 * exactly one `<% $mcc.NAME %>` (blanks around are allowed) becomes the
 * value itself, keeping its JSON type; inside a longer string the value is
 * written as text (strings as they are, anything else as compact JSON).
 * Returns a new reference, or NULL with err ("unknown param \"x\"", "param
 * \"x\" has no value for cluster \"c\"", "unterminated <% in ..."). */
json_t *dsp_substitute(const json_t *v, const json_t *params, const char *cluster, char *err, size_t errlen);

/* The objects for one member: a new array, or NULL with err. template is
 * the spec's list; every item must be an object with apiVersion and kind;
 * one without metadata.name takes the job's name. Pod-group references (scheduling.x-k8s.io/pod-group,
 * pod-group.scheduling.sigs.k8s.io, scheduling.k8s.io/group-name labels and
 * annotations) naming an object of the template are renamed with it. */
json_t *dsp_specialise(const json_t *tmpl, const json_t *params, const char *cluster, const char *ns,
                       const char *job_name, const char *job_uid, char *err, size_t errlen);

/* `<name>-<cluster>` into buf; -1 when it would be longer than 253. */
int dsp_object_name(const char *name, const char *cluster, char *buf, size_t n);

/* Every `<% $mcc.NAME %>` the value refers to, appended to names (strings,
 * each once). For validation before any cluster is contacted. */
void dsp_param_refs(const json_t *v, json_t *names);

#endif
