{{/* The chart's name; nameOverride replaces it in the full name. */}}
{{- define "ringmaster.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Helm's usual full name: fullnameOverride, else the release name when it
already contains the chart's name, else "<release>-<name>". 63 characters at
most: every object name (and the Lease, --leader-election-id) derives from it. */}}
{{- define "ringmaster.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "ringmaster.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<fullname>-<suffix>" in 63 characters: the full name is cut, never the
suffix, so two objects never end up with the same truncated name (a Service
name must be a DNS label). Usage: include "ringmaster.suffixedName" (list . "metrics") */}}
{{- define "ringmaster.suffixedName" -}}
{{- $ctx := index . 0 -}}
{{- $suffix := index . 1 -}}
{{- $room := int (sub 62 (len $suffix)) -}}
{{- printf "%s-%s" (include "ringmaster.fullname" $ctx | trunc $room | trimSuffix "-") $suffix -}}
{{- end -}}

{{- define "ringmaster.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* app.kubernetes.io/name stays ringmaster-operator whatever nameOverride
says: it is the label manifests/, the docs and the tests select the
operator's pods by (kubectl logs -l app.kubernetes.io/name=ringmaster-operator);
app.kubernetes.io/instance tells two releases apart. */}}
{{- define "ringmaster.labels" -}}
{{ include "ringmaster.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "ringmaster.chart" . }}
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
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
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
{{- /* The TF_CONFIG cluster's ConfigMap (ringmaster.io/tf-config: ConfigMap):
created before the pods, read back only on AlreadyExists; immutable, deleted
with its job by the garbage collector. */}}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create", "get"]
{{- /* Kubernetes' gang scheduling (--gang-scheduling auto, where the API server
serves scheduling.k8s.io's Workload API): a job's Workload and PodGroup,
created before its pods and read back only on AlreadyExists, as the key. */}}
- apiGroups: ["scheduling.k8s.io"]
  resources: ["workloads", "podgroups"]
  verbs: ["create", "get"]
{{- if .Values.networkPolicy.enabled }}
{{- /* Only with networkPolicy.enabled (--network-policy). */}}
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["create", "get"]
{{- end }}
{{- if .Values.tfjob.enabled }}
{{- /* Only with tfjob.enabled (--tfjob): Kubeflow's TFJobs, as the
DistributedJobs above. */}}
{{- /* patch: Ringmaster's state annotation (docs/kubeflow.md). */}}
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs"]
  verbs: ["get", "list", "watch", "delete", "patch"]
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs/status"]
  verbs: ["get", "update"]
{{- /* A TFJob's replica that goes for good loses its Service too. */}}
- apiGroups: [""]
  resources: ["services"]
  verbs: ["delete"]
{{- end }}
{{- end -}}
