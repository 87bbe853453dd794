package topo

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cli/clitest"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/machines"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(t, NewCommand, "", args...)
}

// The --json output keeps the field names tools rely on.
func TestJSONContract(t *testing.T) {
	out, _, err := run(t, "--machine", "dgx-1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		GPUs []struct {
			PCI  *string `json:"pci"`
			NUMA *int    `json:"numa"`
		} `json:"gpus"`
		NICs []struct {
			PCI       *string `json:"pci"`
			Netdev    *string `json:"netdev"`
			RDMA      *string `json:"rdma"`
			LinkLayer *string `json:"link_layer"`
			NUMA      *int    `json:"numa"`
			VFs       *int    `json:"vfs"`
		} `json:"nics"`
		Links []map[string]string `json:"links"`
		Rails []map[string]string `json:"rails"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.GPUs) != 8 || len(v.NICs) != 4 || len(v.Links) != 32 || len(v.Rails) != 8 {
		t.Fatalf("sizes: %d gpus %d nics %d links %d rails", len(v.GPUs), len(v.NICs), len(v.Links), len(v.Rails))
	}
	g := v.GPUs[0]
	if g.PCI == nil || *g.PCI != "0000:06:00.0" || g.NUMA == nil || *g.NUMA != 0 {
		t.Errorf("gpu[0] = %+v", g)
	}
	n := v.NICs[0]
	if n.PCI == nil || *n.PCI != "0000:05:00.0" || *n.Netdev != "ib0" || *n.RDMA != "mlx5_0" || *n.LinkLayer != "InfiniBand" || n.NUMA == nil || n.VFs == nil || *n.VFs != 0 {
		t.Errorf("nic[0] = %+v", n)
	}
	want := map[string]string{"gpu": "0000:06:00.0", "nic": "0000:05:00.0", "class": "PIX"}
	for k, val := range want {
		if v.Links[0][k] != val || v.Rails[0][k] != val {
			t.Errorf("links[0][%s] = %q, rails[0][%s] = %q, want %q", k, v.Links[0][k], k, v.Rails[0][k], val)
		}
	}
}

func TestHumanOutputFromSysfsWithDownPort(t *testing.T) {
	dir, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(dir) })
	if err := machines.WriteSysfs("dgx-1", dir, 0); err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.SetPortState(dir, "mlx5_3", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "--sysfs", dir)
	if err != nil {
		t.Fatal(err)
	}
	jsonOut, _, err := run(t, "--sysfs", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(jsonOut, `"healthy": false`) {
		t.Errorf("--json does not mark the DOWN NIC unhealthy:\n%s", jsonOut)
	}
	for _, want := range []string{
		"GPU0 PIX    PHB    SYS    SYS    0    0000:06:00.0",
		"mlx5_3 port 1 is DOWN",
		// Its PIX GPUs keep it: every healthy NIC is farther (PHB, SYS).
		"GPU7  0000:8a:00.0  mlx5_3  0000:8b:00.0  ib3     PIX",
		"0000:8a:00.0: GPU railed to mlx5_3 (0000:8b:00.0) whose port is not ACTIVE: no healthy NIC is as close (PIX)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--machine", "dgx-9000"},
		{"--machine", "dgx-1", "--sysfs", "/sys"},
		{"--vfs", "4"},
		{"--machine", "dgx-1", "--vfs", "-1"},
		{"--sysfs", "/nonexistent"},
		{"extra-arg"},
	} {
		if _, _, err := run(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// --nccl-topo on a sysfs tree: Azure NDv4's flat tree says NODE for a GPU
// and the HCA Azure pairs it with; with Azure's file the pair is PIX, the
// JSON says where the class comes from, and the human view counts them.
func TestNCCLTopoFlag(t *testing.T) {
	dir, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(dir) })
	if err := machines.WriteSysfs("azure-ndv4", dir, 0); err != nil {
		t.Fatal(err)
	}
	file := "../../nccltopo/testdata/ndv4-topo.xml"
	linkOf := func(args ...string) map[string]string {
		out, _, err := run(t, append(args, "--json")...)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Links []map[string]string `json:"links"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		for _, l := range v.Links {
			if l["gpu"] == "0003:00:00.0" && l["nic"] == "0103:00:00.0" {
				return l
			}
		}
		t.Fatalf("no link 0003:00:00.0 x 0103:00:00.0 in %s", out)
		return nil
	}
	if l := linkOf("--sysfs", dir); l["class"] != "NODE" || l["source"] != "" {
		t.Errorf("flat: %v", l)
	}
	if l := linkOf("--sysfs", dir, "--nccl-topo", file); l["class"] != "PIX" || l["source"] != "nccl-topo" {
		t.Errorf("with the file: %v", l)
	}
	if l := linkOf("--machine", "azure-ndv4", "--nccl-topo", file); l["class"] != "PIX" {
		t.Errorf("model with the file: %v", l)
	}
	out, _, err := run(t, "--sysfs", dir, "--nccl-topo", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"with NCCL topology file ndv4-topo.xml", "Classes of 64 of 64 pairs come from the NCCL topology file", "GPU2 SYS    SYS    PIX    PIX    SYS"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"/nonexistent.xml", "topo_test.go"} {
		if _, _, err := run(t, "--sysfs", dir, "--nccl-topo", bad); err == nil || !strings.Contains(err.Error(), "--nccl-topo") {
			t.Errorf("--nccl-topo %s: error %v", bad, err)
		}
	}
}

// The built-in cloud VM with an NCCL topology file shows the file's
// classes; the PVRDMA VM shows its paired netdev's function; a DOWN NIC
// says healthy false. New JSON fields only.
func TestJSONAddedFields(t *testing.T) {
	out, _, err := run(t, "--machine", "azure-ndv5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		NICs  []map[string]any `json:"nics"`
		Rails []map[string]any `json:"rails"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if r := v.Rails[0]; r["class"] != "PIX" || r["source"] != "nccl-topo" || r["nic"] != "0101:00:00.0" {
		t.Errorf("rails[0] = %v", r)
	}
	if _, ok := v.NICs[0]["healthy"]; ok {
		t.Errorf("a healthy NIC has a healthy field: %v", v.NICs[0])
	}
	out, _, err = run(t, "--machine", "vsphere-pvrdma", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if n := v.NICs[0]; n["rdma"] != "vmw_pvrdma0" || n["netdev"] != "ens224" || n["netdev_pci"] != "0000:13:00.0" {
		t.Errorf("PVRDMA NIC = %v", n)
	}
}
