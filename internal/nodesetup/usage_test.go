package nodesetup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

func netopsSettings() netops.VFSettings { return netops.VFSettings{} }

type fakePod struct {
	ns, name, resource string
	ids                []string
}

type fakeLister struct{ pods []fakePod }

func (l *fakeLister) List(context.Context) ([]podlist.Pod, error) {
	var out []podlist.Pod
	for _, p := range l.pods {
		out = append(out, podlist.Pod{Namespace: p.ns, Name: p.name, Containers: []podlist.Container{{Name: "main",
			Devices: []podlist.Devices{{Resource: p.resource, IDs: p.ids}}}}})
	}
	return out, nil
}

func TestPodResourcesUsageNamesPods(t *testing.T) {
	t.Parallel()
	l := &fakeLister{pods: []fakePod{
		{"default", "a", "railyard.io/vf", []string{"0000:18:00.2"}},
		{"default", "b", "nvidia.com/gpu", []string{"GPU-1"}},
		{"ml", "c", "railyard.io/shared", []string{"0000:18:00.3-s4"}},
	}}
	m, err := PodResourcesUsage{Lister: l}.Usage(context.Background(), []string{"0000:18:00.2", "0000:18:00.3", "0000:18:00.4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || !strings.Contains(m["0000:18:00.2"][0], "pod default/a") || !strings.Contains(m["0000:18:00.3"][0], "pod ml/c") {
		t.Fatalf("usage = %v", m)
	}
}

func TestCNIStateUsageReadsRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := state.Store{Dir: dir}
	if err := s.Put(&state.Record{Key: "0000:18:00.2", PCI: "0000:18:00.2", ContainerID: "3f2a9c1b7d004e55aa", Network: "rdma-a", Netns: "/var/run/netns/cni-1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(&state.Record{Key: "netdev-eth9", ContainerID: "x"}); err != nil {
		t.Fatal(err)
	}
	m, err := CNIStateUsage{Dir: dir}.Usage(context.Background(), []string{"0000:18:00.2", "0000:18:00.3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || !strings.Contains(m["0000:18:00.2"][0], "container 3f2a9c1b7d00 (network \"rdma-a\"") {
		t.Fatalf("usage = %v", m)
	}
	if m, err := (CNIStateUsage{Dir: t.TempDir() + "/none"}).Usage(context.Background(), []string{"0000:18:00.2"}); err != nil || len(m) != 0 {
		t.Fatalf("missing state dir: %v, %v", m, err)
	}
}

// A VF whose driver link cannot be read is not "not in use": the source
// says it could not tell.
func TestSysfsUsageReportsWhatItCannotRead(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := w.kernel.SetNumVFs(context.Background(), rocePF, 2); err != nil {
		t.Fatal(err)
	}
	st, _ := w.fs.SRIOV(rocePF)
	link := filepath.Join(w.root, "bus/pci/devices", st.VFs[1].PCI, "driver")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := SysfsUsage{FS: w.fs}.Usage(context.Background(), []string{st.VFs[0].PCI, st.VFs[1].PCI})
	if err == nil || !strings.Contains(err.Error(), st.VFs[1].PCI) {
		t.Fatalf("err = %v, want the unreadable driver of %s", err, st.VFs[1].PCI)
	}
}
