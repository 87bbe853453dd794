package podresources

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

const nic = "railyard.io/rdma"

func TestFinderOverRealGRPC(t *testing.T) {
	fk := podrestest.Start(t, "")
	sock := fk.Socket
	client := podlist.New(sock)
	defer client.Close()
	gpuMap := Map{"GPU-aaaa": "0000:1b:00.0", "GPU-bbbb": "0000:43:00.0"}
	f := NewFinder(client, gpuMap, []string{"nvidia.com/gpu", "amd.com/gpu"})
	ctx := context.Background()

	// A running pod that already has GPUs and our NIC is no candidate.
	done := podrestest.Pod("done", map[string][]string{"nvidia.com/gpu": {"GPU-cccc"}, nic: {"0000:18:00.1"}})
	fk.Set(done)
	fd, err := f.PodGPUs(ctx, nic)
	if err != nil || len(fd.GPUs) != 0 || !strings.Contains(fd.Note, "not allocated yet") {
		t.Fatalf("no candidate: %+v %v", fd, err)
	}

	// The admitted pod: GPUs allocated first, no NIC yet.
	fk.Set(done, podrestest.Pod("new", map[string][]string{"nvidia.com/gpu": {"GPU-bbbb", "GPU-aaaa"}}))
	fd, err = f.PodGPUs(ctx, nic)
	if err != nil || strings.Join(fd.GPUs, ",") != "0000:1b:00.0,0000:43:00.0" || fd.Container != "default/new/main" {
		t.Fatalf("single candidate: %+v %v", fd, err)
	}

	// A second GPU-only pod appears: "new" was seen before, so the fresh
	// one is the admitted one. AMD IDs are PCI addresses already.
	fk.Set(done, podrestest.Pod("new", map[string][]string{"nvidia.com/gpu": {"GPU-aaaa"}}),
		podrestest.Pod("amd", map[string][]string{"amd.com/gpu": {"0000:C1:00.0"}}))
	fd, err = f.PodGPUs(ctx, nic)
	if err != nil || strings.Join(fd.GPUs, ",") != "0000:c1:00.0" || fd.Container != "default/amd/main" {
		t.Fatalf("fresh candidate: %+v %v", fd, err)
	}

	// Two fresh GPU-only pods: ambiguous, no answer.
	fk.Set(podrestest.Pod("x", map[string][]string{"nvidia.com/gpu": {"GPU-aaaa"}}), podrestest.Pod("y", map[string][]string{"nvidia.com/gpu": {"GPU-bbbb"}}))
	fd, err = f.PodGPUs(ctx, nic)
	if err != nil || len(fd.GPUs) != 0 || !strings.Contains(fd.Note, "cannot tell") {
		t.Fatalf("ambiguous: %+v %v", fd, err)
	}

	// Unmapped UUID: reported in the note.
	fk.Set(podrestest.Pod("z", map[string][]string{"nvidia.com/gpu": {"GPU-zzzz"}}))
	fd, err = f.PodGPUs(ctx, nic)
	if err != nil || len(fd.GPUs) != 0 || !strings.Contains(fd.Note, "GPU-zzzz") {
		t.Fatalf("unmapped: %+v %v", fd, err)
	}
}

func TestPrimeSetsAsideRunningGPUPods(t *testing.T) {
	fk := podrestest.Start(t, "")
	sock := fk.Socket
	client := podlist.New(sock)
	defer client.Close()
	f := NewFinder(client, nil, []string{"amd.com/gpu"})
	old := podrestest.Pod("gpu-only-job", map[string][]string{"amd.com/gpu": {"0000:01:00.0"}})
	fk.Set(old)
	if err := f.Prime(context.Background(), []string{nic}); err != nil {
		t.Fatal(err)
	}
	fk.Set(old, podrestest.Pod("admitted", map[string][]string{"amd.com/gpu": {"0000:02:00.0"}}))
	fd, err := f.PodGPUs(context.Background(), nic)
	if err != nil || strings.Join(fd.GPUs, ",") != "0000:02:00.0" {
		t.Fatalf("%+v %v", fd, err)
	}
	// Both pods end: the next Prime forgets them.
	if f.Known() != 2 {
		t.Fatalf("known = %d, want 2", f.Known())
	}
	fk.Set()
	if err := f.Prime(context.Background(), []string{nic}); err != nil || f.Known() != 0 {
		t.Fatalf("after the pods ended: known = %d, %v", f.Known(), err)
	}
}

func TestFinderSocketMissing(t *testing.T) {
	client := podlist.New(filepath.Join(t.TempDir(), "absent.sock"))
	defer client.Close()
	f := NewFinder(client, nil, []string{"nvidia.com/gpu"})
	if _, err := f.PodGPUs(context.Background(), nic); err == nil {
		t.Fatal("no error from a missing socket")
	}
}

func TestParseMap(t *testing.T) {
	csv := "# nvidia-smi --query-gpu=uuid,pci.bus_id --format=csv,noheader\nGPU-aaaa, 00000000:1B:00.0\n\nGPU-bbbb, 00000000:43:00.0\n"
	m, err := ParseMap([]byte(csv))
	if err != nil || m["GPU-aaaa"] != "0000:1b:00.0" || m["GPU-bbbb"] != "0000:43:00.0" {
		t.Fatalf("csv: %v %v", m, err)
	}
	m, err = ParseMap([]byte(`{"GPU-aaaa": "0000:1b:00.0"}`))
	if err != nil || m["GPU-aaaa"] != "0000:1b:00.0" {
		t.Fatalf("json: %v %v", m, err)
	}
	if pci, ok := m.PCIAddress("00000000:9A:00.0"); !ok || pci != "0000:9a:00.0" {
		t.Errorf("PCI passthrough = %q %v", pci, ok)
	}
	if _, ok := m.PCIAddress("GPU-nope"); ok {
		t.Error("unknown UUID resolved")
	}
	// A GPU behind Intel VMD: nvidia-smi pads the domain to eight digits,
	// sysfs names it 10000:1b:00.0 (pciaddr's one rule; refused before).
	if m, err := ParseMap([]byte("GPU-a, 00010000:1B:00.0\n")); err != nil || m["GPU-a"] != "10000:1b:00.0" {
		t.Errorf("a VMD domain: %v, %v", m, err)
	}
	for _, bad := range []string{"GPU-a 0000:1b:00.0", "GPU-a, 1b:00.0", `{"a": 1}`, `{"a": "x"}`, ", 0000:1b:00.0", "GPU-a, 0000:1b:20.0", "GPU-a, 0000:1b:00.8", "GPU-a, 0000:1b:00.0\nGPU-a, 0000:1c:00.0"} {
		if _, err := ParseMap([]byte(bad)); err == nil {
			t.Errorf("ParseMap(%q) accepted", bad)
		}
	}
}

func TestLoadMapMissing(t *testing.T) {
	if _, err := LoadMap(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("no error")
	}
}

func FuzzParseMap(f *testing.F) {
	f.Add([]byte("GPU-a, 00000000:1B:00.0\n"))
	f.Add([]byte(`{"GPU-a":"0000:1b:00.0"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMap(data)
		if err != nil {
			return
		}
		for id, pci := range m {
			if !pciaddr.IsCanonical(pci) || id == "" {
				t.Fatalf("bad entry %q -> %q", id, pci)
			}
		}
	})
}
