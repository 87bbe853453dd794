package discovery_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/machines"
)

// pathRecorder counts the sysfs paths discovery builds.
type pathRecorder struct {
	mu    sync.Mutex
	paths map[string]int
}

func (r *pathRecorder) Record(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths[p]++
}

// Each NIC carries its RDMA device's fw_ver, read once per PF (never per
// VF); an unreadable one leaves the version empty and fails nothing.
func TestDiscoverReadsEachNICsFirmware(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 4); err != nil {
		t.Fatal(err)
	}
	rec := &pathRecorder{paths: map[string]int{}}
	topo, err := discovery.Options{Recorder: rec}.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	cx7 := 0
	for _, n := range topo.NICs {
		if n.Firmware == "" {
			t.Errorf("%s (%s, %04x:%04x): no firmware", n.RDMA, n.PCI, n.Vendor, n.Device)
		}
		if n.Vendor == 0x15b3 && n.Device == 0x1021 {
			cx7++
			if n.Firmware != "28.39.1002" {
				t.Errorf("ConnectX-7 %s: firmware %q, want the generated 28.39.1002", n.RDMA, n.Firmware)
			}
		}
		if got := rec.paths[filepath.Join("class/infiniband", n.RDMA, "fw_ver")]; got != 1 {
			t.Errorf("%s: fw_ver read %d times, want 1", n.RDMA, got)
		}
		for _, vf := range n.VFs {
			if rec.paths[filepath.Join("class/infiniband", vf.RDMA, "fw_ver")] != 0 {
				t.Errorf("VF %s: fw_ver read; only PFs carry a version", vf.RDMA)
			}
		}
	}
	if cx7 != 8 {
		t.Fatalf("%d ConnectX-7 NICs, want dgx-h100's 8", cx7)
	}
	fwReads := 0
	for p, n := range rec.paths {
		if strings.HasSuffix(p, "/fw_ver") {
			fwReads += n
		}
	}
	if fwReads != len(topo.NICs) {
		t.Errorf("%d fw_ver reads for %d NICs", fwReads, len(topo.NICs))
	}

	// One card flashed with another release, one whose fw_ver is gone,
	// one whose fw_ver is larger than sysfs' 4 KiB bound.
	flashed, missing, huge := topo.NICs[0].RDMA, topo.NICs[1].RDMA, topo.NICs[2].RDMA
	if err := fakesysfs.SetFirmware(root, flashed, "28.42.1000"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "class/infiniband", missing, "fw_ver")); err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.SetFirmware(root, huge, strings.Repeat("9", 8<<10)); err != nil {
		t.Fatal(err)
	}
	again := discover(t, root)
	if len(again.NICs) != len(topo.NICs) {
		t.Fatalf("%d NICs after the fw_ver changes, want %d", len(again.NICs), len(topo.NICs))
	}
	want := map[string]string{flashed: "28.42.1000", missing: "", huge: ""}
	for i, n := range again.NICs {
		w, ok := want[n.RDMA]
		if !ok {
			w = topo.NICs[i].Firmware
		}
		if n.Firmware != w {
			t.Errorf("%s: firmware %q, want %q", n.RDMA, n.Firmware, w)
		}
	}
}
