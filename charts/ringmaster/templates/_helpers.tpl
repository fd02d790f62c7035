{{- define "ringmaster.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ringmaster.labels" -}}
app.kubernetes.io/name: ringmaster-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ringmaster.selectorLabels" -}}
app.kubernetes.io/name: ringmaster-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ringmaster.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ringmaster.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The rules the operator needs on jobs, pods, services, events, the job key
Secrets and (with networkPolicy.enabled) NetworkPolicies. */}}
{{- define "ringmaster.jobRules" -}}
- apiGroups: ["ringmaster.io"]
  resources: ["distributedjobs"]
  verbs: ["get", "list", "watch", "delete"]
- apiGroups: ["ringmaster.io"]
  resources: ["distributedjobs/status"]
  verbs: ["get", "update"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- /* The job key Secret: created before the pods, read back only on
AlreadyExists. No list/watch (no cache of Secrets), no update/delete (a key is
never replaced; the garbage collector deletes it with its job). */}}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create", "get"]
{{- if .Values.networkPolicy.enabled }}
{{- /* Only with networkPolicy.enabled (--network-policy). */}}
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["create", "get"]
{{- end }}
{{- end -}}
