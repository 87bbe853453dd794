{{/* The label keys of the fabric's two levels (fabric.labels): the scheme's
(railyard: railyard.io/leaf-set and railyard.io/fabric-unit; topograph:
fabric.topograph.run/tier-0 and tier-1), or fabric.labels.leafSet and
.unit. The containers' flags and the admission policies both use these,
so they name the same keys. */}}
{{- define "railyard.fabricLeafSetLabel" -}}
{{- $l := .Values.fabric.labels | default dict -}}
{{- if $l.leafSet -}}
{{- $l.leafSet -}}
{{- else if eq ($l.scheme | default "railyard") "topograph" -}}
fabric.topograph.run/tier-0
{{- else -}}
railyard.io/leaf-set
{{- end -}}
{{- end -}}

{{- define "railyard.fabricUnitLabel" -}}
{{- $l := .Values.fabric.labels | default dict -}}
{{- if $l.unit -}}
{{- $l.unit -}}
{{- else if eq ($l.scheme | default "railyard") "topograph" -}}
fabric.topograph.run/tier-1
{{- else -}}
railyard.io/fabric-unit
{{- end -}}
{{- end -}}

{{/* Refuses keys the commands would refuse (fabric.LabelKeys.Validate):
the schema checks their form, this what a pattern cannot say. */}}
{{- define "railyard.fabricCheckLabels" -}}
{{- $leafSet := include "railyard.fabricLeafSetLabel" . -}}
{{- $unit := include "railyard.fabricUnitLabel" . -}}
{{- if eq $leafSet $unit -}}
{{- fail (printf "fabric.labels: the leaf set and the unit both use %s; want two keys" $unit) -}}
{{- end -}}
{{- range $k := list $leafSet $unit -}}
{{- $prefix := index (splitList "/" $k) 0 -}}
{{- if or (eq $prefix "kubernetes.io") (eq $prefix "k8s.io") (hasSuffix ".kubernetes.io" $prefix) (hasSuffix ".k8s.io" $prefix) -}}
{{- fail (printf "fabric.labels: %s is in a domain Kubernetes reserves (kubernetes.io, k8s.io)" $k) -}}
{{- end -}}
{{- if or (hasPrefix "rail.railyard.io/" $k) (eq $k "railyard.io/degraded-rails") -}}
{{- fail (printf "fabric.labels: %s is another fabric label's key" $k) -}}
{{- end -}}
{{- end -}}
{{- end -}}
