{{/* Names and labels. */}}
{{- define "railyard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "railyard.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end -}}

{{- define "railyard.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "railyard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (printf "%s-agent" (include "railyard.fullname" .)) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* "true" when a pool has delivery dra (the agent's DRA kubelet plugin), else "". */}}
{{- define "railyard.dra" -}}
{{- $dra := false -}}
{{- range .Values.config.pools -}}
{{- if eq (.delivery | default "devicePlugin") "dra" -}}{{- $dra = true -}}{{- end -}}
{{- end -}}
{{- if $dra -}}true{{- end -}}
{{- end -}}

{{/* "true" when the agent labels counters with its node's pods' jobs
(metrics.jobNames, with metrics on); "" otherwise. */}}
{{- define "railyard.jobNames" -}}
{{- if and .Values.metrics.enabled .Values.metrics.jobNames -}}true{{- end -}}
{{- end -}}

{{- define "railyard.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* The fabric container's image: with fabric.infiniband.enabled, the image
with infiniband-diags (hack/image --infiniband-diags: <tag>-infiniband-diags),
never image.digest (the plain image's). */}}
{{- define "railyard.fabricImage" -}}
{{- $ib := .Values.fabric.infiniband -}}
{{- if not $ib.enabled -}}
{{- include "railyard.image" . -}}
{{- else if $ib.image.digest -}}
{{- printf "%s@%s" ($ib.image.repository | default .Values.image.repository) $ib.image.digest -}}
{{- else -}}
{{- printf "%s:%s" ($ib.image.repository | default .Values.image.repository) ($ib.image.tag | default (printf "%s-infiniband-diags" (.Values.image.tag | default .Chart.AppVersion))) -}}
{{- end -}}
{{- end -}}

{{/* The agent configuration file: values.config + apiVersion, kind, metricsAddr. */}}
{{- define "railyard.agentConfig" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $_ := set $cfg "metricsAddr" (ternary (printf "0.0.0.0:%d" (int .Values.metrics.port)) "0" .Values.metrics.enabled) -}}
apiVersion: railyard.io/v1alpha1
kind: AgentConfig
{{ toYaml $cfg }}
{{- end -}}

{{/*
The agent's host paths: exactly the directories its configuration names
(defaults as in api/config/v1alpha1), each mounted at the same path.
stateDir and cdiSpecDir are used with ncclIBHCA merged, a pool with
binding sandbox (the binding store is <stateDir>/binding) or a pool with
delivery dra (the checkpoint of prepared claims, the claims' CDI specs),
which also uses the DRA kubelet plugin's two directories.
Rendered as JSON: {"mounts": [{name, path, readOnly, type}]}.
*/}}
{{- define "railyard.agentMounts" -}}
{{- $c := .Values.config -}}
{{- $all := list
  (dict "name" "sysfs" "path" ($c.sysfsRoot | default "/sys") "readOnly" true "type" "Directory")
  (dict "name" "dev-infiniband" "path" (printf "%s/infiniband" (($c.devRoot | default "/dev") | trimSuffix "/")) "readOnly" true "type" "DirectoryOrCreate")
  (dict "name" "device-plugins" "path" ($c.pluginDir | default "/var/lib/kubelet/device-plugins") "readOnly" false "type" "Directory")
  (dict "name" "pod-resources" "path" (dir ($c.podResourcesSocket | default "/var/lib/kubelet/pod-resources/kubelet.sock")) "readOnly" false "type" "Directory")
  (dict "name" "devinfo" "path" ($c.devInfoDir | default "/var/run/k8s.cni.cncf.io/devinfo/dp") "readOnly" false "type" "DirectoryOrCreate")
-}}
{{- $sandbox := false -}}
{{- range $c.pools -}}
{{- if eq (.binding | default "allocate") "sandbox" -}}{{- $sandbox = true -}}{{- end -}}
{{- end -}}
{{- $dra := include "railyard.dra" . -}}
{{- if or (eq ($c.ncclIBHCA | default "env") "merged") $sandbox $dra -}}
{{- $all = append $all (dict "name" "state" "path" ($c.stateDir | default "/var/lib/railyard") "readOnly" false "type" "DirectoryOrCreate") -}}
{{- if $c.cdiSpecDir -}}
{{- $all = append $all (dict "name" "cdi" "path" $c.cdiSpecDir "readOnly" false "type" "DirectoryOrCreate") -}}
{{- end -}}
{{- end -}}
{{- if $dra -}}
{{- $all = append $all (dict "name" "dra-plugin" "path" .Values.dra.pluginDir "readOnly" false "type" "DirectoryOrCreate") -}}
{{- $all = append $all (dict "name" "plugins-registry" "path" .Values.dra.registryDir "readOnly" false "type" "Directory") -}}
{{- end -}}
{{- if .Values.cni.podEvents -}}
{{- $all = append $all (dict "name" "cni-state" "path" "/var/lib/cni/railyard" "readOnly" true "type" "DirectoryOrCreate") -}}
{{- end -}}
{{- if $c.gpuMap -}}
{{- $all = append $all (dict "name" "gpu-map" "path" (dir $c.gpuMap) "readOnly" true "type" "Directory") -}}
{{- end -}}
{{- if $c.ncclTopologyFile -}}
{{- $all = append $all (dict "name" "nccl-topology" "path" (dir $c.ncclTopologyFile) "readOnly" true "type" "Directory") -}}
{{- end -}}
{{- $seen := dict -}}
{{- $mounts := list -}}
{{- range $all -}}
{{- if not (hasKey $seen .path) -}}
{{- $_ := set $seen .path true -}}
{{- $mounts = append $mounts . -}}
{{- end -}}
{{- end -}}
{{- toJson (dict "mounts" $mounts) -}}
{{- end -}}

{{/* The security context of both containers (docs/install.md, Security). */}}
{{- define "railyard.securityContext" -}}
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
# uid 0 owns the host directories written (kubelet's sockets, the CNI bin
# dir); no capability is kept, so root here cannot bypass file permissions.
runAsUser: 0
runAsGroup: 0
runAsNonRoot: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
The node policy file: values.nodeSetup.policy + apiVersion and kind. The
sources of "VFs in use" default to the agent's: railyard-cni's state
directory and kubelet's PodResources socket (docs/nodesetup.md).
*/}}
{{- define "railyard.nodePolicy" -}}
{{- $p := deepCopy .Values.nodeSetup.policy -}}
{{- if not (hasKey $p "cniStateDir") -}}
{{- $_ := set $p "cniStateDir" "/var/lib/cni/railyard" -}}
{{- end -}}
{{- if not (hasKey $p "podResourcesSocket") -}}
{{- $_ := set $p "podResourcesSocket" (.Values.config.podResourcesSocket | default "/var/lib/kubelet/pod-resources/kubelet.sock") -}}
{{- end -}}
apiVersion: railyard.io/v1alpha1
kind: NodePolicy
{{ toYaml $p }}
{{- end -}}
