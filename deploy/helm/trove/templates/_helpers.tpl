{{/* The name of every object: the release name, with -trove unless it says trove already. */}}
{{- define "trove.fullname" -}}
{{- if contains "trove" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-trove" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "trove.selectorLabels" -}}
app.kubernetes.io/name: trove
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "trove.labels" -}}
{{ include "trove.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* trove.validate fails the render on settings Trove would refuse at start. */}}
{{- define "trove.validate" -}}
{{- if not (hasPrefix "https://" .Values.publicURL) -}}
{{- fail "publicURL must be the https:// URL clients use to reach Trove (TLS ends in front of the Service)" -}}
{{- end -}}
{{- if not .Values.postgres.existingSecret -}}
{{- fail "postgres.existingSecret must name a Secret holding the PostgreSQL DSN: the chart runs Trove on PostgreSQL" -}}
{{- end -}}
{{- if not .Values.s3.bucket -}}
{{- fail "s3.bucket must name an existing bucket: the chart keeps Trove's archives in S3" -}}
{{- end -}}
{{- if not (has .Values.s3.downloadMode (list "redirect" "proxy")) -}}
{{- fail "s3.downloadMode must be redirect or proxy" -}}
{{- end -}}
{{- range $k, $v := .Values.env -}}
{{- if not (regexMatch "^TROVE_[A-Z0-9_]+$" $k) -}}
{{- fail (printf "env: %q is not a TROVE_* setting (docs/configuration.md)" $k) -}}
{{- end -}}
{{- end -}}
{{- end -}}
