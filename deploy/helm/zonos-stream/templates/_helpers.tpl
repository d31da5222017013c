{{/* Names, labels and the checks every template shares. */}}

{{/* The chart's name, or nameOverride. */}}
{{- define "zonos-stream.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's objects' name: fullnameOverride, else release-chart
(just the release when it already holds the chart's name). */}}
{{- define "zonos-stream.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "zonos-stream.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select the release's pods (Service, PDB, ServiceMonitor). */}}
{{- define "zonos-stream.selectorLabels" -}}
app.kubernetes.io/name: {{ include "zonos-stream.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "zonos-stream.labels" -}}
helm.sh/chart: {{ include "zonos-stream.chart" . }}
{{ include "zonos-stream.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: speech-server
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "zonos-stream.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The Secret holding the API keys: the user's, or the one the chart
creates from apiKeys. A server listening beyond loopback refuses to start
without a key, so a release without either fails here, at install. */}}
{{- define "zonos-stream.secretName" -}}
{{- if .Values.existingSecret }}
{{- .Values.existingSecret }}
{{- else if .Values.apiKeys }}
{{- printf "%s-api-keys" (include "zonos-stream.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- fail "API keys are required (the server listens beyond loopback): set existingSecret to a Secret holding them, or apiKeys to a list" }}
{{- end }}
{{- end }}

{{- define "zonos-stream.secretKey" -}}
{{- if .Values.existingSecret }}{{ .Values.existingSecretKey }}{{ else }}api-keys{{ end }}
{{- end }}

{{/* The keys the chart writes, checked as zonos serve checks them. */}}
{{- define "zonos-stream.apiKeys" -}}
{{- range .Values.apiKeys }}
{{- if lt (len .) 16 }}
{{- fail (printf "an API key of %d characters is too easy to guess; use at least 16 (openssl rand -hex 24)" (len .)) }}
{{- end }}
{{- if or (contains "\n" .) (contains " " .) (hasPrefix "#" .) }}
{{- fail "an API key may not hold a space or a line break, nor start with #: the key file holds one key a line" }}
{{- end }}
{{- end }}
{{- join "\n" .Values.apiKeys }}
{{- end }}

{{/* The server container's resources: the values' with the one GPU added. */}}
{{- define "zonos-stream.resources" -}}
{{- $res := deepCopy (.Values.resources | default dict) }}
{{- $limits := get $res "limits" | default dict }}
{{- if hasKey $limits "nvidia.com/gpu" }}
{{- fail "resources.limits must not name nvidia.com/gpu: the chart sets it to 1 (one engine per GPU; more pods for more GPUs)" }}
{{- end }}
{{- $_ := set $limits "nvidia.com/gpu" "1" }}
{{- $_ := set $res "limits" $limits }}
{{- toYaml $res }}
{{- end }}

{{/* The pod must outlive the preStop pause, the shutdown grace and the
5 s the server gives ended streams to write their last bytes. */}}
{{- define "zonos-stream.checkGrace" -}}
{{- $need := add (int .Values.preStopSleepSeconds) (int .Values.server.shutdownGraceSeconds) 5 }}
{{- if le (int .Values.terminationGracePeriodSeconds) $need }}
{{- fail (printf "terminationGracePeriodSeconds %d must exceed preStopSleepSeconds + server.shutdownGraceSeconds + 5 = %d, or streams are killed before the server ends them" (int .Values.terminationGracePeriodSeconds) $need) }}
{{- end }}
{{- end }}

{{/* Weights come from a claim filled beforehand, or are pulled into the
pod's volume; with neither the server would find no model. */}}
{{- define "zonos-stream.checkModels" -}}
{{- if and (not .Values.models.persistentVolumeClaim) (not .Values.models.pull.enabled) }}
{{- fail "no model weights: set models.persistentVolumeClaim to a claim holding the Hugging Face cache, or models.pull.enabled to pull them into the pod" }}
{{- end }}
{{- end }}
