package draview

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/inputfile"
)

func sample() View {
	return View{
		Pools: []string{"railyard.io/rdma_vf", "railyard.io/rdma_pf"},
		Claims: []Claim{
			{Namespace: "ml", Name: "trainer-nics", UID: "u-2", Pods: []Pod{{Name: "trainer", UID: "p-1"}},
				Devices: []Device{
					{PCI: "0000:18:00.0", Resource: "railyard.io/rdma_pf", RDMA: "mlx5_0", PF: "0000:18:00.0", Rail: 0},
					{PCI: "0000:18:00.2", Resource: "railyard.io/rdma_vf", RDMA: "mlx5_4", PF: "0000:18:00.0", Rail: 0},
					{PCI: "0000:2a:00.0", Resource: "railyard.io/rdma_pf", RDMA: "mlx5_1", PF: "0000:2a:00.0", Rail: 1},
				}},
			{Namespace: "ml", Name: "extra", UID: "u-1", Pods: []Pod{{Name: "trainer"}},
				Devices: []Device{{PCI: "0000:9a:00.0", Resource: "railyard.io/rdma_pf", PF: "0000:9a:00.0", Rail: -1}}},
			{Namespace: "other", Name: "trainer-nics", UID: "u-3", Pods: []Pod{{Name: "trainer", UID: "p-9"}},
				Devices: []Device{{PCI: "0000:ab:00.0", Resource: "railyard.io/rdma_pf", PF: "0000:ab:00.0", Rail: 2}}},
		},
	}
}

// TestWriteReadRoundTrip: what Write writes, Read returns, normalized
// (version, sorted pools and claims), with no temporary file left.
func TestWriteReadRoundTrip(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "binding")
	if _, err := Read(dir); !errors.Is(err, ErrNoView) {
		t.Fatalf("Read before Write: %v, want ErrNoView", err)
	}
	if err := Write(dir, sample()); err != nil {
		t.Fatal(err)
	}
	v, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != 1 {
		t.Fatalf("version %d", v.Version)
	}
	if diff := cmp.Diff([]string{"railyard.io/rdma_pf", "railyard.io/rdma_vf"}, v.Pools); diff != "" {
		t.Fatalf("pools (-want +got):\n%s", diff)
	}
	var names []string
	for _, c := range v.Claims {
		names = append(names, c.Namespace+"/"+c.Name)
	}
	if strings.Join(names, " ") != "ml/extra ml/trainer-nics other/trainer-nics" {
		t.Fatalf("claims in order %v", names)
	}
	want := sample().Claims[0]
	if diff := cmp.Diff(want, v.Claims[1]); diff != "" {
		t.Fatalf("claim read back (-want +got):\n%s", diff)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != FileName {
		t.Fatalf("directory holds %v, want only %s", ents, FileName)
	}
	// Empty: both lists present, still a view.
	if err := Write(dir, View{}); err != nil {
		t.Fatal(err)
	}
	if v, err := Read(dir); err != nil || len(v.Claims) != 0 || v.HasPool("railyard.io/rdma_pf") {
		t.Fatalf("empty view read back %+v, %v", v, err)
	}
}

// TestPodDevices: devices of the pool in the pod's claims, claims in
// order, devices in the claim's order; UID first, names without one;
// another namespace's pod of the same name gets nothing.
func TestPodDevices(t *testing.T) {
	t.Parallel()
	b, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	v, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	pcis := func(hs []Held) string {
		var s []string
		for _, h := range hs {
			s = append(s, h.PCI+"@"+h.Claim.Name)
		}
		return strings.Join(s, " ")
	}
	cases := []struct {
		pod      PodRef
		resource string
		want     string
	}{
		{PodRef{"ml", "trainer", "p-1"}, "railyard.io/rdma_pf", "0000:9a:00.0@extra 0000:18:00.0@trainer-nics 0000:2a:00.0@trainer-nics"},
		{PodRef{"ml", "trainer", ""}, "railyard.io/rdma_vf", "0000:18:00.2@trainer-nics"},
		// A pod recreated under the name: another UID, not the claim's.
		{PodRef{"ml", "trainer", "p-2"}, "railyard.io/rdma_pf", "0000:9a:00.0@extra"},
		{PodRef{"other", "trainer", "p-9"}, "railyard.io/rdma_pf", "0000:ab:00.0@trainer-nics"},
		{PodRef{"ml", "nobody", ""}, "railyard.io/rdma_pf", ""},
		{PodRef{"ml", "trainer", "p-1"}, "railyard.io/rdma_shared", ""},
	}
	for _, c := range cases {
		if got := pcis(v.PodDevices(c.pod, c.resource)); got != c.want {
			t.Errorf("PodDevices(%+v, %s) = %q, want %q", c.pod, c.resource, got, c.want)
		}
	}
	if !v.HasPool("railyard.io/rdma_vf") || v.HasPool("railyard.io/rdma") {
		t.Error("HasPool")
	}
}

// TestParseRefuses: every inconsistency a reader relies on is an error,
// and Write refuses to write one.
// Two claims hold shares of one NIC, each its own share: valid, and each
// device's ShareID names it as the device plugin's shares are named.
func TestSharesOfOneNIC(t *testing.T) {
	t.Parallel()
	in := `{"version":1,"pools":["r"],"claims":[` +
		`{"namespace":"ml","name":"c","uid":"u","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"0000:18:00.0","rail":0,"share":0}]},` +
		`{"namespace":"ml","name":"d","uid":"v","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"0000:18:00.0","rail":0,"share":1}]}]}`
	v, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := v.Claims[0].Devices[0].ShareID(), v.Claims[1].Devices[0].ShareID(); a != "0000:18:00.0-s0" || b != "0000:18:00.0-s1" {
		t.Errorf("share IDs %q %q", a, b)
	}
	if id := sample().Claims[0].Devices[0].ShareID(); id != "" {
		t.Errorf("a device held whole has share ID %q", id)
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"version":          `{"version":2,"pools":[],"claims":[]}`,
		"unknown field":    `{"version":1,"pools":[],"claims":[],"extra":1}`,
		"trailing data":    `{"version":1,"pools":[],"claims":[]} {}`,
		"trailing brace":   `{"version":1,"pools":[],"claims":[]}}`,
		"duplicate key":    `{"version":1,"pools":[],"pools":["a"],"claims":[]}`,
		"miscased key":     `{"version":1,"Pools":[],"claims":[]}`,
		"unsorted pools":   `{"version":1,"pools":["b","a"],"claims":[]}`,
		"repeated pool":    `{"version":1,"pools":["a","a"],"claims":[]}`,
		"empty pool":       `{"version":1,"pools":[""],"claims":[]}`,
		"no UID":           `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"","pods":[],"devices":[]}]}`,
		"repeated UID":     `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"u","pods":[],"devices":[]},{"namespace":"ml","name":"d","uid":"u","pods":[],"devices":[]}]}`,
		"pod without name": `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"u","pods":[{"uid":"x"}],"devices":[]}]}`,
		"short PCI":        `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"u","pods":[],"devices":[{"pci":"18:00.0","resource":"r","pf":"","rail":0}]}]}`,
		"no resource":      `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"u","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"","pf":"","rail":0}]}]}`,
		"device twice":     `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"u","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0}]},{"namespace":"ml","name":"d","uid":"v","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0}]}]}`,
		"not JSON":         `{"version":1,`,
		"share twice":      `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"c","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0,"share":1}]},{"namespace":"ml","name":"d","uid":"d","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0,"share":1}]}]}`,
		"whole and share":  `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"c","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0}]},{"namespace":"ml","name":"d","uid":"d","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0,"share":0}]}]}`,
		"share and whole":  `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"c","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0,"share":0}]},{"namespace":"ml","name":"d","uid":"d","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0}]}]}`,
		"negative share":   `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"c","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0,"share":-1}]}]}`,
		"share past limit": `{"version":1,"pools":[],"claims":[{"namespace":"ml","name":"c","uid":"c","pods":[],"devices":[{"pci":"0000:18:00.0","resource":"r","pf":"","rail":0,"share":10000}]}]}`,
	}
	for name, in := range cases {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%s: Parse accepted %s", name, in)
		}
	}
	bad := sample()
	bad.Claims[1].Devices[0].PCI = bad.Claims[0].Devices[0].PCI
	dir := t.TempDir()
	if err := Write(dir, bad); err == nil || !strings.Contains(err.Error(), "is in claims") {
		t.Fatalf("Write of a device in two claims: %v", err)
	}
	if _, err := os.Stat(Path(dir)); !os.IsNotExist(err) {
		t.Fatalf("a refused view was written: %v", err)
	}
}

// TestReadRefusesOversizedFile: a view larger than the bound is refused
// before parsing.
func TestReadRefusesOversizedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := make([]byte, maxSize+2)
	for i := range big {
		big[i] = ' '
	}
	if err := os.WriteFile(Path(dir), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, inputfile.ErrTooLarge) {
		t.Fatalf("Read of an oversized view: %v, want inputfile.ErrTooLarge", err)
	}
}

// TestReadRefusesFIFO: a FIFO in the view's place fails at once (it blocked
// railyard-cni, and with it the pod's sandbox creation, until a writer came).
func TestReadRefusesFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(Path(dir), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Read(dir)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, inputfile.ErrNotRegular) {
			t.Fatalf("Read of a FIFO: %v, want inputfile.ErrNotRegular", err)
		}
	case <-time.After(5 * time.Second):
		// Unblock the reader so the test process can end.
		if f, err := os.OpenFile(Path(dir), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Read of a FIFO blocked")
	}
}

// FuzzParse: Parse never panics; what it accepts encodes again to a view
// that parses to the same value, and every device it lists is in one
// claim only.
func FuzzParse(f *testing.F) {
	b, _ := Encode(sample())
	f.Add(b)
	f.Add([]byte(`{"version":1,"pools":[],"claims":[]}`))
	f.Add([]byte(`{"version":1,"pools":["a"],"claims":[{"namespace":"n","name":"c","uid":"u","pods":[{"name":"p"}],"devices":[{"pci":"0000:00:00.0","resource":"a","pf":"","rail":-1}]}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := Parse(in)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range v.Claims {
			for _, d := range c.Devices {
				if seen[d.PCI] {
					t.Fatalf("device %s twice", d.PCI)
				}
				seen[d.PCI] = true
			}
		}
		out, err := Encode(*v)
		if err != nil {
			t.Fatalf("Encode of a parsed view: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, out)
		}
		if len(again.Claims) != len(v.Claims) || !slices.Equal(again.Pools, v.Pools) {
			t.Fatalf("round trip changed the view: %+v -> %+v", v, again)
		}
	})
}
