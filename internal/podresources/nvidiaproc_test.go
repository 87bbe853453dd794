package podresources

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The layout of /proc/driver/nvidia/gpus/<pci>/information as driver 535
// prints it (tabs and spaces as in the file).
const h100Information = "Model: \t\t NVIDIA H100 80GB HBM3\n" +
	"IRQ:   \t\t 17\n" +
	"GPU UUID: \t GPU-3b4b7a64-7b5e-6c1e-8d39-5b0e2a1c9f11\n" +
	"Video BIOS: \t 96.00.74.00.01\n" +
	"Bus Type: \t PCIe\n" +
	"DMA Size: \t 52 bits\n" +
	"DMA Mask: \t 0xfffffffffffff\n" +
	"Bus Location: \t 0000:1b:00.0\n" +
	"Device Minor: \t 0\n" +
	"GPU Excluded:\t No\n"

func writeInfo(t *testing.T, root, dir, content string) {
	t.Helper()
	p := filepath.Join(root, "driver/nvidia/gpus", dir, "information")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o444); err != nil {
		t.Fatal(err)
	}
}

func TestReadNVIDIAProc(t *testing.T) {
	root := t.TempDir()
	writeInfo(t, root, "0000:1b:00.0", h100Information)
	writeInfo(t, root, "0000:43:00.0", strings.NewReplacer("3b4b7a64", "aaaaaaaa", "0000:1b:00.0", "0000:43:00.0").Replace(h100Information))
	writeInfo(t, root, "0000:52:00.0", "Model: something\n") // no UUID: reported, skipped
	m, err := ReadNVIDIAProc(root)
	if err == nil || !strings.Contains(err.Error(), "0000:52:00.0") {
		t.Fatalf("err = %v, want the bad file named", err)
	}
	if len(m) != 2 || m["GPU-3b4b7a64-7b5e-6c1e-8d39-5b0e2a1c9f11"] != "0000:1b:00.0" || m["GPU-aaaaaaaa-7b5e-6c1e-8d39-5b0e2a1c9f11"] != "0000:43:00.0" {
		t.Fatalf("map = %v", m)
	}
	if pci, ok := m.PCIAddress("GPU-3b4b7a64-7b5e-6c1e-8d39-5b0e2a1c9f11"); !ok || pci != "0000:1b:00.0" {
		t.Fatalf("resolve = %s %v", pci, ok)
	}
}

func TestReadNVIDIAProcWithoutDriver(t *testing.T) {
	m, err := ReadNVIDIAProc(t.TempDir())
	if err != nil || len(m) != 0 {
		t.Fatalf("%v, %v", m, err)
	}
}

func TestNewResolverGPUMapOverridesTheDriver(t *testing.T) {
	root := t.TempDir()
	writeInfo(t, root, "0000:1b:00.0", h100Information)
	mapFile := filepath.Join(t.TempDir(), "gpus.csv")
	if err := os.WriteFile(mapFile, []byte("GPU-3b4b7a64-7b5e-6c1e-8d39-5b0e2a1c9f11, 00000000:9A:00.0\nGPU-extra, 0000:9b:00.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := NewResolver(root, mapFile)
	if err != nil {
		t.Fatal(err)
	}
	if m["GPU-3b4b7a64-7b5e-6c1e-8d39-5b0e2a1c9f11"] != "0000:9a:00.0" || m["GPU-extra"] != "0000:9b:00.0" || len(m) != 2 {
		t.Fatalf("map = %v", m)
	}
	if _, err := NewResolver(root, filepath.Join(root, "missing")); err == nil {
		t.Fatal("a missing GPU map accepted")
	}
}

func FuzzParseNVIDIAInformation(f *testing.F) {
	f.Add([]byte(h100Information))
	f.Add([]byte("GPU UUID: GPU-x\nBus Location: zz\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		uuid, pci, err := ParseNVIDIAInformation(data)
		if err == nil && (!strings.HasPrefix(uuid, "GPU-") || (pci != "" && len(pci) != 12)) {
			t.Fatalf("accepted %q %q", uuid, pci)
		}
	})
}
