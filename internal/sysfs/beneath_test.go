package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// escapingTree is a tree whose symlinks lead out of it, beside the files
// they lead to: a replayed capture or a hand-made --sysfs tree. Each
// outside file says "outside"; the tree's own files say "inside".
func escapingTree(t *testing.T) (root string) {
	t.Helper()
	base := t.TempDir()
	root, out := filepath.Join(base, "sys"), filepath.Join(base, "outside")
	for p, content := range map[string]string{
		"outside/secret": "PRETTY_NAME=outside\n",
		"outside/mlx5_9/ports/1/counters/symbol_error":              "7\n",
		"outside/module/mlx5_core/parameters/x":                     "outside\n",
		"outside/net/eth9/mtu":                                      "9000\n",
		"outside/pci/0000:99:00.0/vendor":                           "0x15b3\n",
		"sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error": "3\n",
		"sys/devices/pci0000:00/0000:18:00.0/vendor":                "0x15b3\n",
		"sys/class/net/eth0/mtu":                                    "1500\n",
	} {
		p = filepath.Join(base, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"abs":                                    filepath.Join(out, "secret"), // absolute, to a file
		"rel":                                    "../outside/secret",          // relative, one .. too many
		"deep/er/rel":                            "../../../outside/secret",    // the same from deeper
		"class/infiniband/mlx5_9":                filepath.Join(out, "mlx5_9"), // a directory on the way, absolute
		"class/infiniband/mlx5_8":                "../../../outside/mlx5_9",    // and relative
		"module":                                 "../outside/module",          // ModuleLoaded's directory
		"class/net/eth9":                         "../../../outside/net/eth9",  // a netdev out of the tree
		"bus/pci/devices/0000:99:00.0":           filepath.Join(out, "pci/0000:99:00.0"),
		"bus/pci/devices/0000:18:00.0":           "../../../devices/pci0000:00/0000:18:00.0", // inside
		"devices/pci0000:00/0000:18:00.0/driver": filepath.Join(out, "drivers/evil"),         // a link read, not followed
		"class/outnet":                           "../../outside/net",                        // LinkBase through it
		"ok":                                     "class/infiniband/mlx5_0/ports/1/counters/symbol_error",
		"class/infiniband/mlx5_1":                "../infiniband/mlx5_0", // .. within the tree
	} {
		p := filepath.Join(root, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../../../pci/0000:99:00.0", filepath.Join(out, "net/eth9/device")); err != nil {
		t.Fatal(err)
	}
	return root
}

// Every read of an FS stays below its root, whatever the tree's symlinks
// say: an absolute symlink, or a relative one with too many "..", on the
// way to an attribute, a directory listed, a counter, a link read or a
// directory checked, fails with ErrOutsideRoot and nothing outside is
// read; symlinks that stay inside (with ".." too) are followed. Both ways
// of resolving hold it: openat2 and os.Root, where openat2 is missing.
func TestReadsStayBelowTheRoot(t *testing.T) {
	t.Parallel()
	root := escapingTree(t)
	for _, w := range []struct {
		name string
		way  beneath
	}{{"openat2", byOpenat2}, {"os.Root", byOSRoot}} {
		way := w.name
		f := FS{Root: root, way: w.way}
		if w.way == byOpenat2 {
			if fd, err := f.openAt(".", unix.O_PATH|unix.O_DIRECTORY); errors.Is(err, unix.ENOSYS) {
				t.Logf("no openat2 here: %v", err)
				continue
			} else if err == nil {
				unix.Close(fd)
			}
		}
		outside := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, ErrOutsideRoot) {
				t.Errorf("%s: %s: %v, want ErrOutsideRoot", way, what, err)
			}
		}
		for _, p := range []string{"abs", "rel", "deep/er/rel", "class/infiniband/mlx5_9/ports/1/counters/symbol_error",
			"class/infiniband/mlx5_8/ports/1/counters/symbol_error", "module/mlx5_core/parameters/x", "class/net/eth9/mtu", "../outside/secret"} {
			s, err := f.ReadString(p)
			outside("ReadString("+p+")", err)
			if s != "" {
				t.Errorf("%s: ReadString(%s) read %q", way, p, s)
			}
		}
		_, err := f.PortCounter("mlx5_9", 1, PMACounters, "symbol_error")
		outside("PortCounter(mlx5_9)", err)
		_, err = f.PortCounterNames("mlx5_8", 1, PMACounters)
		outside("PortCounterNames(mlx5_8)", err)
		_, err = f.List("class/infiniband/mlx5_9")
		outside("List(mlx5_9)", err)
		_, err = f.LinkBase("class/outnet/eth9/device")
		outside("LinkBase through a directory out of the tree", err)
		_, err = f.PCIDeviceDir("0000:99:00.0")
		outside("PCIDeviceDir(0000:99:00.0)", err)
		if f.ModuleLoaded("mlx5_core") {
			t.Errorf("%s: a module found out of the tree", way)
		}
		if f.NetdevExists("eth9") != true {
			// The link itself is in the tree (class/net/eth9): it exists.
			t.Errorf("%s: class/net/eth9, a link in the tree, not found", way)
		}

		// Inside, with and without "..": read.
		got := map[string]any{}
		got["ok"], err = f.ReadString("ok")
		if err != nil {
			t.Errorf("%s: %v", way, err)
		}
		got["mlx5_1"], err = f.PortCounter("mlx5_1", 1, PMACounters, "symbol_error")
		if err != nil {
			t.Errorf("%s: %v", way, err)
		}
		got["dir"], err = f.PCIDeviceDir("0000:18:00.0")
		if err != nil {
			t.Errorf("%s: %v", way, err)
		}
		got["driver"], err = f.LinkBase("bus/pci/devices/0000:18:00.0/driver")
		if err != nil {
			t.Errorf("%s: %v", way, err)
		}
		got["mtu"], err = f.NetdevMTU("eth0")
		if err != nil {
			t.Errorf("%s: %v", way, err)
		}
		want := map[string]any{"ok": "3", "mlx5_1": uint64(3), "dir": "devices/pci0000:00/0000:18:00.0", "driver": "evil", "mtu": 1500}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: inside the tree (-want +got):\n%s", way, diff)
		}
		if _, err := f.ReadString("missing"); !errors.Is(err, os.ErrNotExist) && !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: a missing file: %v", way, err)
		}
		if err := f.CheckPCIBus(); err != nil {
			t.Errorf("%s: CheckPCIBus: %v", way, err)
		}
		if msg := func() string { _, err := f.ReadString("abs"); return err.Error() }(); strings.Contains(msg, "PRETTY") {
			t.Errorf("%s: the error quotes the outside file: %s", way, msg)
		}
	}
}

// New's FS keeps its root open once it has read it, and reads a root made
// after the FS was: a root that could not be opened is not remembered.
func TestRootOpenedOnceItExists(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "sys")
	f := New(root)
	if _, err := f.ReadString("numa_node"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before the root exists: %v, want ErrNotFound", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "numa_node"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if n, err := f.ReadInt("numa_node"); n != 1 || err != nil {
			t.Fatalf("once it exists: %d, %v", n, err)
		}
	}
	if f.dir.fd.Load() == 0 {
		t.Error("the root was not kept open")
	}
}
