package rdmacounter

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

// The small node with one VF per PF: its PFs and VFs in the model's
// order, a VF on its PF's rail, the owner of the held one.
func TestDevices(t *testing.T) {
	t.Parallel()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{VFsPerPF: 1}); err != nil {
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	held := Owner{Namespace: "ml", Pod: "p", Container: "c", Job: "j"}
	want := []Device{
		{RDMA: "mlx5_0", Ports: []int{1}, PCI: "0000:18:00.0", Kind: KindPF, Rail: 0},
		{RDMA: "mlx5_3", Ports: []int{1}, PCI: "0000:18:00.1", Kind: KindVF, Rail: 0, Owner: held},
		{RDMA: "mlx5_1", Ports: []int{1}, PCI: "0000:2a:00.0", Kind: KindPF, Rail: 1},
		{RDMA: "mlx5_4", Ports: []int{1}, PCI: "0000:2a:00.1", Kind: KindVF, Rail: 1},
		{RDMA: "mlx5_2", Ports: []int{1}, PCI: "0000:3b:00.0", Kind: KindPF, Rail: -1},
		{RDMA: "mlx5_5", Ports: []int{1}, PCI: "0000:3b:00.1", Kind: KindVF, Rail: -1},
	}
	if diff := cmp.Diff(want, Devices(topo, map[string]Owner{"0000:18:00.1": held})); diff != "" {
		t.Errorf("Devices (-want +got):\n%s", diff)
	}
}

func TestJobName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		labels     map[string]string
		controller string
		want       string
	}{
		{"JobSet pod: the JobSet, not its child Job", map[string]string{"jobset.sigs.k8s.io/jobset-name": "llama", "batch.kubernetes.io/job-name": "llama-workers-0"}, "llama-workers-0", "llama"},
		{"PyTorchJob or MPIJob worker", map[string]string{"training.kubeflow.org/job-name": "bert"}, "bert", "bert"},
		{"batch Job", map[string]string{"batch.kubernetes.io/job-name": "nccl-test"}, "nccl-test", "nccl-test"},
		{"old batch Job", map[string]string{"job-name": "old"}, "old", "old"},
		{"StatefulSet: its controller", map[string]string{"app": "x"}, "trainer-sts", "trainer-sts"},
		{"bare pod", nil, "", ""},
	} {
		if got := JobName(c.labels, c.controller); got != c.want {
			t.Errorf("%s: JobName = %q, want %q", c.name, got, c.want)
		}
	}
}
