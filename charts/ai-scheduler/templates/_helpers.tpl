{{/* Names and labels shared by every template. */}}
{{- define "ai-scheduler.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ai-scheduler.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ai-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ai-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ai-scheduler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "ai-scheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "ai-scheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ai-scheduler.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ai-scheduler.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.resourceNamespace -}}
{{- end -}}

{{- define "ai-scheduler.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Refuses values that would make a broken install. */}}
{{- define "ai-scheduler.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail "replicas > 1 needs leaderElection.enabled=true (two active schedulers would double-book nodes)" -}}
{{- end -}}
{{- if not (has .Values.scoring.strategy (list "LeastAllocated" "MostAllocated")) -}}
{{- fail "scoring.strategy must be LeastAllocated or MostAllocated" -}}
{{- end -}}
{{- if or (lt (int .Values.metrics.port) 1) (gt (int .Values.metrics.port) 65535) -}}
{{- fail "metrics.port must be 1..65535 (the probes use it)" -}}
{{- end -}}
{{- if or (lt (int .Values.gang.scheduleTimeoutSeconds) 1) (gt (int .Values.gang.scheduleTimeoutSeconds) 86400) -}}
{{- fail "gang.scheduleTimeoutSeconds must be 1..86400" -}}
{{- end -}}
{{- if or (lt (int .Values.queues.usageHalfLifeSeconds) 0) (lt (int .Values.queues.starvationAgeSeconds) 0) -}}
{{- fail "queues.usageHalfLifeSeconds and queues.starvationAgeSeconds must be >= 0" -}}
{{- end -}}
{{- end -}}
