package archgraph

// A Layer is one subgraph of the diagram. A pattern is a package path
// relative to the module ("internal/sysfs") or a path followed by "/..."
// for it and every package below it. A package belongs to the layer of its
// most specific pattern: an exact path wins over any "/..." pattern, and a
// longer "/..." pattern over a shorter one.
type Layer struct {
	ID       string // mermaid subgraph ID (drawn as l_<ID>)
	Title    string
	Patterns []string
	// Tests marks a layer of test code, left out of the layer view.
	Tests bool
}

// Unassigned is the group of packages no layer names.
var Unassigned = Layer{ID: "unassigned", Title: "unassigned: add to internal/archgraph/layers.go"}

// Layers is the module's layering, drawn in this order. docs/architecture.md
// has a section of its package table per layer, titled as here, and
// test/arch's rules name layers by ID: tests hold both to this table.
var Layers = []Layer{
	{ID: "mains", Title: "mains", Patterns: []string{"cmd/...", "hack/..."}},
	{ID: "cli", Title: "CLI (one package per verb)", Patterns: []string{"internal/cli/..."}},
	{ID: "adapters", Title: "node adapters (agent, device plugin, node setup, doctor, counters)", Patterns: []string{
		"internal/agent", "internal/deviceplugin", "internal/podresources", "internal/nodesetup", "internal/doctor",
		"internal/rdmastats", "internal/porthealth", "internal/capture",
	}},
	{ID: "cni", Title: "CNI (railyard-cni and its installer)", Patterns: []string{"internal/cni", "internal/cni/config", "internal/cniinstall"}},
	{ID: "dra", Title: "DRA (driver, job rails, rails controller)", Patterns: []string{"internal/dra", "internal/draplugin", "internal/jobrails", "internal/railctl"}},
	{ID: "fabric", Title: "rail fabric (LLDP, wiring)", Patterns: []string{"internal/fabric", "internal/lldp", "internal/ibneighbor", "internal/nodefabric", "internal/schedtopo"}},
	{ID: "prooftools", Title: "proof tools (benchmarks, simulator)", Patterns: []string{
		"internal/bench", "internal/benchreport", "internal/benchplan", "internal/benchrun", "internal/benchprobe", "internal/benchverify",
		"internal/chart", "internal/sim", "internal/simreport",
	}},
	{ID: "build", Title: "build and docs (image, chart, this graph)", Patterns: []string{"internal/image", "internal/helmchart", "internal/release", "internal/archgraph"}},
	{ID: "nodestate", Title: "node state the agent and railyard-cni share (late binding, DRA view, CNI records, PodResources list)", Patterns: []string{
		"internal/binding", "internal/draview", "internal/cni/state", "internal/podresources/podlist",
	}},
	{ID: "policies", Title: "policies and pools", Patterns: []string{"internal/alloc", "internal/pool"}},
	{ID: "config", Title: "configuration APIs", Patterns: []string{"api/...", "internal/migrate"}},
	{ID: "network", Title: "network changes (netops: the only package that changes the network)", Patterns: []string{"internal/netops"}},
	{ID: "model", Title: "model (read-only)", Patterns: []string{
		"internal/sysfs", "internal/discovery", "internal/topology", "internal/nccltopo", "internal/assign",
		"internal/machine", "internal/fakesysfs", "machines", "internal/rdmacounter", "internal/firmware",
		"internal/containerdev",
	}},
	{ID: "foundations", Title: "foundations (leaves)", Patterns: []string{
		"internal/pciaddr", "internal/inputfile", "internal/atomicfile", "internal/deviceid", "internal/version",
		"internal/termsafe", "internal/strictjson", "internal/kubeevent",
	}},
	{ID: "testhelpers", Title: "test helpers", Tests: true, Patterns: []string{
		"internal/benchrun/benchruntest", "internal/cli/clitest", "internal/cni/multustest", "internal/cni/sysfstest",
		"internal/cni/state/statetest", "internal/lldp/lldptest", "internal/ibneighbor/ibneighbortest",
		"internal/deviceplugin/kubelettest", "internal/dra/gpustandin", "internal/netops/netnstest",
		"internal/netops/netopstest", "internal/podresources/podrestest", "internal/exectest", "internal/draplugin/draplugintest",
	}},
	{ID: "tests", Title: "test suites", Tests: true, Patterns: []string{"test/..."}},
}

// LayerOf returns the layer of the module package p (a path relative to
// the module, "internal/sysfs"), or false when no layer names it.
func LayerOf(p string, layers []Layer) (Layer, bool) {
	i, _ := layerOf(p, layers)
	if i < 0 {
		return Layer{}, false
	}
	return layers[i], true
}
