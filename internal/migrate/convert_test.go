package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func convert(t *testing.T, data []byte, opts Options) (*v1alpha1.AgentConfig, *Report) {
	t.Helper()
	cfg, r, err := ConvertSRIOVDP(data, opts)
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	roundTrip(t, cfg)
	return cfg, r
}

// roundTrip: the YAML loads with the agent's own parser (strict decode,
// defaults, validation) into the same configuration, defaulted.
func roundTrip(t *testing.T, cfg *v1alpha1.AgentConfig) {
	t.Helper()
	y, err := Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, y, 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := v1alpha1.Load(path)
	if err != nil {
		t.Fatalf("the agent's loader refuses the output: %v\n%s", err, y)
	}
	want := *cfg
	want.Pools = slices.Clone(cfg.Pools)
	v1alpha1.Default(&want)
	if diff := cmp.Diff(&want, loaded); diff != "" {
		t.Errorf("round trip changed the configuration (-want +got):\n%s", diff)
	}
}

func pool(t *testing.T, cfg *v1alpha1.AgentConfig, name string) v1alpha1.Pool {
	t.Helper()
	for _, p := range cfg.Pools {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no pool %s in %v", name, poolNames(cfg))
	return v1alpha1.Pool{}
}

func poolNames(cfg *v1alpha1.AgentConfig) []string {
	var out []string
	for _, p := range cfg.Pools {
		out = append(out, p.Name)
	}
	return out
}

// entry returns the message of the report entry for resource and field
// with action a, failing the test when there is none.
func entry(t *testing.T, r *Report, resource, field string, a Action) string {
	t.Helper()
	for _, e := range r.Entries {
		if e.Resource == resource && e.Field == field && e.Action == a {
			return e.Message
		}
	}
	t.Errorf("no %s entry for %s %s in\n%s", a, resource, field, reportText(r))
	return ""
}

func reportText(r *Report) string {
	var b strings.Builder
	_ = r.Write(&b)
	return b.String()
}

func yes() *bool { v := true; return &v }

// TestReadmeExample converts the configuration example of the SR-IOV
// network device plugin's README (with its one trailing comma removed).
func TestReadmeExample(t *testing.T) {
	t.Parallel()
	cfg, r := convert(t, read(t, "readme-example.json"), Options{})
	want := []string{"intel.com/intel_sriov_netdevice", "mellanox.com/mlnx_sriov_rdma", "intel.com/infiniband_rdma_netdevs",
		"intel.com/intel_sriov_netdevice_additional_env", "broadcom.com/brcm_sriov_bnxt", "intel.com/old_selectors_syntax_example"}
	if got := poolNames(cfg); !slices.Equal(got, want) {
		t.Errorf("pools %v, want %v", got, want)
	}
	if r.Resources != 10 || r.Pools != 6 || !r.Lossy() {
		t.Errorf("resources %d pools %d lossy %v", r.Resources, r.Pools, r.Lossy())
	}
	for res, field := range map[string]string{
		"intel.com/intel_sriov_dpdk": "selectors", "intel.com/ct6dx_vdpa_vhost": "selectors[0].vdpaType",
		"intel.com/intel_fpga": "deviceType", "nvidia.com/bf2_sf": "deviceType",
	} {
		entry(t, r, res, field, Skipped)
	}
	if m := entry(t, r, "intel.com/intel_sriov_dpdk", "selectors[0].drivers", Dropped); !strings.Contains(m, "vfio-pci") {
		t.Errorf("dpdk drivers: %q", m)
	}
	entry(t, r, "intel.com/intel_sriov_dpdk", "selectors[0].needVhostNet", Dropped)
	entry(t, r, "intel.com/intel_sriov_netdevice_additional_env", "additionalInfo", Dropped)
	if m := entry(t, r, "intel.com/intel_sriov_netdevice", "resourcePrefix", Changed); !strings.Contains(m, "intel.com/intel_sriov_netdevice") {
		t.Errorf("default prefix: %q", m)
	}

	vf := pool(t, cfg, "intel.com/intel_sriov_netdevice")
	if vf.DeviceKind != v1alpha1.KindVF || !slices.Equal(vf.Selectors.Devices, []string{"154c", "10ed", "1889"}) ||
		!slices.Equal(vf.Selectors.Drivers, []string{"i40evf", "ixgbevf", "iavf"}) || vf.Selectors.RDMACapable != nil || vf.DeviceNodes.UMAD {
		t.Errorf("intel VF pool %+v", vf)
	}
	mlx := pool(t, cfg, "mellanox.com/mlnx_sriov_rdma")
	if mlx.DeviceKind != v1alpha1.KindVF || !cmp.Equal(mlx.Selectors.RDMACapable, yes()) || !mlx.DeviceNodes.UMAD || !mlx.DeviceNodes.ISSM {
		t.Errorf("mellanox pool %+v", mlx)
	}
	entry(t, r, "mellanox.com/mlnx_sriov_rdma", "selectors[0].drivers", Note) // mlx5_ib is no PCI driver
	ib := pool(t, cfg, "intel.com/infiniband_rdma_netdevs")
	if !slices.Equal(ib.Selectors.LinkLayers, []string{v1alpha1.LinkLayerInfiniBand}) || ib.DeviceKind != v1alpha1.KindVF {
		t.Errorf("infiniband pool %+v", ib)
	}
	if m := entry(t, r, "intel.com/infiniband_rdma_netdevs", "deviceKind", Note); !strings.Contains(m, "vf assumed") {
		t.Errorf("kind note %q", m)
	}
	// 14e4:1750 is a BCM57508 PF: the plugin handed out PFs.
	if b := pool(t, cfg, "broadcom.com/brcm_sriov_bnxt"); b.DeviceKind != v1alpha1.KindPF {
		t.Errorf("broadcom pool %+v", b)
	}
	entry(t, r, "", "deviceKind", Note) // the default-route note for pf pools
	old := pool(t, cfg, "intel.com/old_selectors_syntax_example")
	if diff := cmp.Diff(vf.Selectors, old.Selectors); diff != "" {
		t.Errorf("object selectors differ from the list form (-want +got):\n%s", diff)
	}
}

// TestRoCETwoRails: two resources each selecting one RoCE PF by name with
// isRdma, as published two-rail deployments configured the plugin. Every
// field maps; nothing is dropped.
func TestRoCETwoRails(t *testing.T) {
	t.Parallel()
	cfg, r := convert(t, read(t, "roce-two-rails.json"), Options{})
	if r.Lossy() {
		t.Errorf("lossy:\n%s", reportText(r))
	}
	for name, pf := range map[string]string{"intel.com/sriov_111": "ens111f0np0", "intel.com/sriov_112": "ens112f0np0"} {
		p := pool(t, cfg, name)
		want := v1alpha1.Pool{Name: name, DeviceKind: v1alpha1.KindVF, Policy: v1alpha1.PolicyGPUAware,
			Selectors:   v1alpha1.Selectors{Vendors: []string{"15b3"}, PFNames: []string{pf}, RDMACapable: yes()},
			DeviceNodes: v1alpha1.DeviceNodes{UMAD: true, ISSM: true}}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		if m := entry(t, r, name, "deviceKind", Changed); !strings.Contains(m, "pfNames only against VFs") {
			t.Errorf("%s kind: %q", name, m)
		}
	}
	// A different default prefix, as the plugin's --resource-prefix.
	cfg, _ = convert(t, read(t, "roce-two-rails.json"), Options{ResourcePrefix: "example.com"})
	if got := poolNames(cfg); !slices.Equal(got, []string{"example.com/sriov_111", "example.com/sriov_112"}) {
		t.Errorf("with --resource-prefix: %v", got)
	}
}

func TestInfiniBand(t *testing.T) {
	cfg, r := convert(t, read(t, "infiniband.json"), Options{})
	vf := pool(t, cfg, "nvidia.com/ib_vf")
	if vf.DeviceKind != v1alpha1.KindVF || !slices.Equal(vf.Selectors.LinkLayers, []string{"InfiniBand"}) || !slices.Equal(vf.Selectors.Drivers, []string{"mlx5_core"}) {
		t.Errorf("ib_vf %+v", vf)
	}
	if m := entry(t, r, "nvidia.com/ib_vf", "selectors[0].pKeys", Dropped); !strings.Contains(m, "0x8001") {
		t.Errorf("pKeys: %q", m)
	}
	pf := pool(t, cfg, "nvidia.com/ib_pf")
	if pf.DeviceKind != v1alpha1.KindPF || !slices.Equal(pf.Selectors.PCIAddresses, []string{"0000:18:00.0", "0000:40:00.0"}) {
		t.Errorf("ib_pf %+v", pf)
	}
	if m := entry(t, r, "nvidia.com/ib_pf", "deviceKind", Changed); !strings.Contains(m, "PF device IDs") {
		t.Errorf("ib_pf kind: %q", m)
	}
	if !r.Lossy() {
		t.Error("pKeys dropped but the report is not lossy")
	}
}

// TestConfigMap accepts the plugin's ConfigMap as it is kept in clusters
// (the shape of the plugin's docs/rdma/configMap.yaml).
func TestConfigMap(t *testing.T) {
	t.Parallel()
	cfg, r := convert(t, read(t, "rdma-configmap.yaml"), Options{})
	if got := poolNames(cfg); !slices.Equal(got, []string{"mellanox.com/mlnx_rdma", "intel.com/intel_rdma"}) {
		t.Errorf("pools %v", got)
	}
	for _, p := range cfg.Pools {
		if p.DeviceKind != v1alpha1.KindVF || !cmp.Equal(p.Selectors.RDMACapable, yes()) {
			t.Errorf("%+v", p)
		}
	}
	if r.Lossy() {
		t.Errorf("lossy:\n%s", reportText(r))
	}
}

func TestInvalidInput(t *testing.T) {
	for name, doc := range map[string]string{
		"readme verbatim": string(read(t, "invalid-readme-trailing-comma.json")),
		"not json":        "resourceList: [",
		"empty":           "  ",
		"array":           `[{"resourceName": "a"}]`,
		"no resourceList": `{"resources": []}`,
		"empty list":      `{"resourceList": []}`,
		"device type":     `{"resourceList": [{"resourceName": "a", "deviceType": "gpu", "selectors": {}}]}`,
		"name with slash": `{"resourceList": [{"resourceName": "a/b", "selectors": {}}]}`,
		"no name":         `{"resourceList": [{"selectors": {}}]}`,
		"null resource":   `{"resourceList": [null]}`,
		"duplicate":       `{"resourceList": [{"resourceName": "a", "selectors": {}}, {"resourceName": "a", "resourcePrefix": "intel.com", "selectors": {}}]}`,
		"no selectors":    `{"resourceList": [{"resourceName": "a"}]}`,
		"null selectors":  `{"resourceList": [{"resourceName": "a", "selectors": null}]}`,
		"empty selectors": `{"resourceList": [{"resourceName": "a", "selectors": []}]}`,
		"null in list":    `{"resourceList": [{"resourceName": "a", "selectors": [null]}]}`,
		"wrong type":      `{"resourceList": [{"resourceName": "a", "selectors": {"vendors": "15b3"}}]}`,
		"rdma and vdpa":   `{"resourceList": [{"resourceName": "a", "selectors": [{"isRdma": true, "vdpaType": "vhost"}]}]}`,
	} {
		cfg, r, err := ConvertSRIOVDP([]byte(doc), Options{})
		if !errors.Is(err, ErrInvalid) || cfg != nil || r != nil {
			t.Errorf("%s: cfg %v report %v err %v, want ErrInvalid", name, cfg != nil, r != nil, err)
		}
	}
	// The README's own example has a trailing comma the plugin refuses.
	if _, _, err := ConvertSRIOVDP(read(t, "invalid-readme-trailing-comma.json"), Options{}); err == nil ||
		!strings.Contains(err.Error(), "at line 87, column 10: invalid character '}'") {
		t.Errorf("position of the syntax error: %v", err)
	}
	if _, _, err := ConvertSRIOVDP(read(t, "roce-two-rails.json"), Options{DeviceKind: "nic"}); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("bad device kind option: %v", err)
	}
}

// TestNothingConvertible: every resource is skipped: ErrNoPools with the
// report saying why.
func TestNothingConvertible(t *testing.T) {
	cfg, r, err := ConvertSRIOVDP([]byte(`{"resourceList": [
		{"resourceName": "fpga", "deviceType": "accelerator", "selectors": {"vendors": ["8086"]}},
		{"resourceName": "eth", "selectors": {"linkTypes": ["ETHER"]}}]}`), Options{})
	if !errors.Is(err, ErrNoPools) || cfg != nil || r == nil {
		t.Fatalf("err %v cfg %v report %v", err, cfg, r)
	}
	entry(t, r, "intel.com/fpga", "deviceType", Skipped)
	if m := entry(t, r, "intel.com/eth", "selectors.linkTypes", Dropped); !strings.Contains(m, "exactly") {
		t.Errorf("linkTypes: %q", m)
	}
	entry(t, r, "intel.com/eth", "selectors", Skipped)
	if r.Pools != 0 || r.Resources != 2 {
		t.Errorf("counts %d %d", r.Pools, r.Resources)
	}
}
