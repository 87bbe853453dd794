package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// One VF on every PF: every placed GPU has its own NIC (GPUDirect for all
// on a machine whose GPUs each have a PIX rail), at the price of devices
// held that no GPU of the pod uses; single-GPU pods on an 8-GPU/4-NIC
// node hold 4 devices for one GPU, 3 of them idle.
func TestAllPFs(t *testing.T) {
	t.Parallel()
	topo := builtin(t, "roce-8gpu-4nic")
	cfg := Config{Machine: "roce-8gpu-4nic", Topology: topo, Nodes: 4, Pods: 400, Seed: 1, Devices: AllPFs,
		Mix: []MixEntry{{GPUs: 1, Weight: 1}}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Policies {
		names = append(names, p.Name)
	}
	if d := cmp.Diff([]string{AllPFsPolicy}, names); d != "" {
		t.Fatalf("policies (-want +got):\n%s", d)
	}
	p := res.Policies[0]
	if p.GPUs == 0 || p.GDRGPUs != p.GPUs {
		t.Errorf("GPUDirect GPUs %d of %d, want all", p.GDRGPUs, p.GPUs)
	}
	if p.DevicesHeld != 4*p.PodsPlaced || p.DevicesIdle != 3*p.PodsPlaced {
		t.Errorf("held %d, idle %d for %d one-GPU pods: want 4 and 3 each", p.DevicesHeld, p.DevicesIdle, p.PodsPlaced)
	}
	row := res.Table().Rows[0]
	if !strings.Contains(strings.Join(row, " "), "4.00 (75.0% idle)") {
		t.Errorf("table row %q lacks the devices held", row)
	}
	// The same workload with one device per GPU holds one device per GPU.
	cfg.Devices, cfg.Policies = PerGPU, nil
	base, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := base.Policy("kubelet"); k.DevicesHeld != k.GPUs {
		t.Errorf("per GPU: %d devices held for %d GPUs", k.DevicesHeld, k.GPUs)
	}
}

func TestAllPFsRefusesPoliciesAndJobs(t *testing.T) {
	t.Parallel()
	topo := builtin(t, "roce-8gpu-4nic")
	p, err := PolicyByName("kubelet")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Topology: topo, Nodes: 1, Pods: 1, Devices: AllPFs, Policies: []Policy{p}}, "give no policies"},
		{Config{Topology: topo, Nodes: 1, Pods: 1, Devices: AllPFs, Mix: []MixEntry{{Pods: 2, GPUs: 4, Weight: 1}}}, "single pods only"},
	} {
		if _, err := Run(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}
