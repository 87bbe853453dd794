package machines_test

import (
	"context"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

func TestLineRateOfBuiltInMachines(t *testing.T) {
	ctx := context.Background()
	h100, err := machines.Topology(ctx, "dgx-h100", 0)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := h100.LineRate("")
	if err != nil {
		t.Fatal(err)
	}
	// 8 x 400G NDR compute rails; the 100G storage/management ports lose.
	if lr.Gbps != 400 || lr.NICs != 8 || !strings.Contains(lr.Description, "GPU rail NICs") {
		t.Errorf("dgx-h100: %+v", lr)
	}
	one, err := h100.LineRate("mlx5_1")
	if err != nil || one.Gbps != 100 || one.NICs != 1 {
		t.Errorf("mlx5_1: %+v %v", one, err)
	}
	if _, err := h100.LineRate("mlx5_99"); err == nil {
		t.Error("unknown device accepted")
	}
	roce, err := machines.Topology(ctx, "roce-8gpu-4nic", 0)
	if err != nil {
		t.Fatal(err)
	}
	if lr, err := roce.LineRate(""); err != nil || lr.Gbps != 100 || lr.NICs != 4 {
		t.Errorf("roce-8gpu-4nic: %+v %v", lr, err)
	}
	var none *topology.Topology
	if _, err := none.LineRate(""); err == nil {
		t.Error("nil topology accepted")
	}
}
