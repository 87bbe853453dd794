package simreport

import "html/template"

var page = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
.settings td { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0 1.5em; }
p.note { color: #555; font-size: 0.92em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>

<h2>Results</h2>
<table>
<tr>{{range .Table.Columns}}<th>{{.Title}}</th>{{end}}</tr>
{{range .Table.Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="note">{{range .Table.Columns}}{{if .Note}}<b>{{.Title}}</b>: {{.Note}}. {{end}}{{end}}</p>

{{with .Jobs}}<h2>Jobs of several pods</h2>
<table>
<tr>{{range .Columns}}<th>{{.Title}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="note">{{range .Columns}}{{if .Note}}<b>{{.Title}}</b>: {{.Note}}. {{end}}{{end}}</p>
{{end}}
{{range .Charts}}<img src="{{.}}.{{$.Format}}" alt="{{.}} chart">
{{end}}

<p class="note">The full result is in <a href="result.json">result.json</a>.</p>

<h2>Settings</h2>
<table class="settings">
{{range .Settings}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>
{{end}}</table>

<h2>Model</h2>
<p class="note">Every node is the same machine model. Pods arrive as a Poisson process at the rate that
offers the configured share of the cluster's GPUs and live for an exponential time. The scheduler places
a pod on a node with enough free GPUs and NIC devices. GPUs are chosen like a stock cluster: kubelet's
Topology Manager narrows them to the fewest NUMA nodes, and the NVIDIA device plugin prefers GPUs under
one PCIe switch; every policy gets the same GPU choice, so the comparison isolates the NIC choice.
Allocate-time policies answer kubelet's GetPreferredAllocation: kubelet offers the NUMA-aligned free
devices when there are more than needed, and it allocates a pod's resources in Go map order, so the
policy knows the pod's GPUs only when the GPUs came first (a seeded coin toss per pod). Late binding
hands kubelet NUMA tokens and chooses each token's device at sandbox creation, when the GPUs are known,
on the token's NUMA node. Claim-time policies (a DRA claim, the optimum) choose with the GPUs, over every
free device of the node. Jobs of several pods run on a rail-optimized fabric (NIC i of every node on
leaf i of its scalable unit) and are placed whole: each pod on its own (per-pod), or every pod on one
rail set (rail-set), waiting for one when the cluster has room but not on the same rails. The bandwidth model gives each GPU the bandwidth of the class of its nearest allocated NIC; its
default (10.5 GB/s within a PCIe switch, 3.5 GB/s across the host bridge) is a published measurement on
an 8-GPU, 4-NIC node; PXB counts as GPUDirect (10.5). See docs/alloc.md.</p>
</body>
</html>
`))
