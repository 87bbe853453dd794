package fakesysfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/sysfs"
)

// A generated mlx5 RoCE port has NVIDIA's lossless traffic class and
// mlx5's default CNP settings; an InfiniBand port has neither.
func TestGeneratedRoCEPortsHaveTrafficClassAndCNP(t *testing.T) {
	t.Parallel()
	d, err := SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := Generate(root, d, Options{}); err != nil {
		t.Fatal(err)
	}
	fs := sysfs.New(root)
	for _, rdma := range []string{"mlx5_1", "mlx5_2"} {
		got, err := fs.RoCETrafficClass(rdma, 1)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sysfs.TrafficClass{Global: 106}, got); diff != "" {
			t.Errorf("%s (-want +got)\n%s", rdma, diff)
		}
	}
	for _, nd := range []string{"ens42np0", "ens59np0"} {
		if got, err := fs.RoCECNP(nd); err != nil || got != (sysfs.CNP{DSCP: 48, Prio: 6}) {
			t.Errorf("%s CNP: %+v, %v", nd, got, err)
		}
	}
	if _, err := fs.RoCETrafficClass("mlx5_0", 1); !errors.Is(err, sysfs.ErrNotFound) {
		t.Errorf("InfiniBand mlx5_0: %v, want no tc/", err)
	}
}

func TestSetAndRemoveTrafficClass(t *testing.T) {
	t.Parallel()
	d, err := SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := Generate(root, d, Options{}); err != nil {
		t.Fatal(err)
	}
	fs := sysfs.New(root)
	for _, tc := range []struct {
		set  TrafficClass
		want sysfs.TrafficClass
	}{
		{TrafficClass{Global: -1}, sysfs.TrafficClass{Global: -1}},
		{TrafficClass{Global: 96, Rules: []string{"dst_ip=10.0.0.0/8,tclass=104"}},
			sysfs.TrafficClass{Global: 96, Rules: []sysfs.TrafficClassRule{{Match: "dst_ip=10.0.0.0/8", TClass: 104}}}},
	} {
		if err := SetTrafficClass(root, "mlx5_1", 1, tc.set); err != nil {
			t.Fatal(err)
		}
		got, err := fs.RoCETrafficClass("mlx5_1", 1)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%+v (-want +got)\n%s", tc.set, diff)
		}
	}
	// Unset is an empty file, as the driver shows it.
	if b, err := os.ReadFile(filepath.Join(root, "class/infiniband/mlx5_2/tc/1/traffic_class")); err != nil || string(b) != "Global tclass=106\n" {
		t.Errorf("mlx5_2: %q, %v", b, err)
	}
	if err := SetTrafficClass(root, "mlx5_2", 1, TrafficClass{Global: -1}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "class/infiniband/mlx5_2/tc/1/traffic_class")); err != nil || len(b) != 0 {
		t.Errorf("unset mlx5_2: %q, %v, want an empty file", b, err)
	}
	if err := RemoveTrafficClass(root, "mlx5_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.RoCETrafficClass("mlx5_1", 1); !errors.Is(err, sysfs.ErrNotFound) {
		t.Errorf("after RemoveTrafficClass: %v", err)
	}
	if err := SetTrafficClass(root, "mlx5_9", 1, LosslessTrafficClass); err == nil {
		t.Error("an unknown RDMA device written")
	}
	if err := RemoveTrafficClass(root, "mlx5_9"); err == nil {
		t.Error("an unknown RDMA device's tc/ removed")
	}
}
