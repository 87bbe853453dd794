package cni

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cni/multustest"
)

// victim is a file outside the device-info directory that no CNIDeviceInfoFile
// may write or remove.
type victim struct {
	t    *testing.T
	path string
}

const victimContent = "root-owned file\n"

func newVictim(t *testing.T) victim {
	t.Helper()
	v := victim{t: t, path: filepath.Join(t.TempDir(), "outside", "victim")}
	must(t, os.MkdirAll(filepath.Dir(v.path), 0o755))
	must(t, os.WriteFile(v.path, []byte(victimContent), 0o600))
	return v
}

func (v victim) intact(what string) {
	v.t.Helper()
	b, err := os.Lstat(v.path)
	if err != nil || !b.Mode().IsRegular() {
		v.t.Fatalf("%s: the file outside the device-info directory is gone or replaced (%v, %v)", what, b, err)
	}
	got, err := os.ReadFile(v.path)
	must(v.t, err)
	if diff := cmp.Diff(victimContent, string(got)); diff != "" {
		v.t.Fatalf("%s: the file outside the device-info directory changed (-want +got):\n%s", what, diff)
	}
}

// escapes are CNIDeviceInfoFile values that are not the file Multus names
// for container c1's net1 on network rdma-net under w's device-info
// directory; each would reach v or another attachment's file.
func escapes(w *world, v victim) map[string]string {
	cni := filepath.Join(w.infoDir, "cni")
	fd, err := os.Open(v.path)
	must(w.t, err)
	w.t.Cleanup(func() { fd.Close() })
	return map[string]string{
		"absolute elsewhere":         v.path,
		"dot-dot out of the dir":     cni + "/../../" + strings.TrimPrefix(v.path, "/"),
		"dot-dot back into the dir":  cni + "/../cni/rdma-net-c1_net1",
		"proc self fd":               fmt.Sprintf("/proc/self/fd/%d", fd.Fd()),
		"another attachment's file":  filepath.Join(cni, "rdma-net-c2_net1"),
		"the device plugins' subdir": filepath.Join(w.infoDir, "dp", "rdma-net-c1_net1"),
		"the directory itself":       cni,
		"relative":                   "cni/rdma-net-c1_net1",
		"another interface's file":   filepath.Join(cni, "rdma-net-c1_net2"),
		"no network part":            filepath.Join(cni, "-c1_net1"),
		"a hidden name":              filepath.Join(cni, ".x-c1_net1"),
		"a subdirectory":             filepath.Join(cni, "sub", "rdma-net-c1_net1"),
		"a doubled separator":        cni + "//rdma-net-c1_net1",
		"a trailing separator":       filepath.Join(cni, "rdma-net-c1_net1") + "/",
	}
}

// TestDeviceInfoEscapesRefusedByAddFakeVF: ADD refuses (invalid network
// configuration) every CNIDeviceInfoFile but the one Multus names for the
// attachment, before any change: it overwrote any absolute path.
func TestDeviceInfoEscapesRefusedByAddFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	v := newVictim(t)
	for name, path := range escapes(w, v) {
		_, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": path})))
		if code := ToCNIError(err).Code; code != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), "CNIDeviceInfoFile") {
			t.Errorf("%s (%s): ADD code %d, %v; want %d naming CNIDeviceInfoFile", name, path, code, err, types.ErrInvalidNetworkConfig)
		}
		v.intact(name)
		w.assertPristine()
	}
}

// TestDeviceInfoEscapesIgnoredByDelFakeVF: DEL (of a container never added,
// and of one added with a good file) succeeds, leaves every other path alone
// and says so in the plugin's log: it deleted any absolute path.
func TestDeviceInfoEscapesIgnoredByDelFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	v := newVictim(t)
	for name, path := range escapes(w, v) {
		var log bytes.Buffer
		p := w.plugin()
		p.Log = slog.New(slog.NewTextHandler(&log, nil))
		if err := p.Del(ctx, args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": path}))); err != nil {
			t.Errorf("%s: DEL: %v", name, err)
		}
		v.intact(name)
		if filepath.IsAbs(path) && !strings.Contains(log.String(), "device-info file left alone") {
			t.Errorf("%s: DEL logged %q, want a warning about the device-info file", name, log.String())
		}
	}
	// DEL with no record never removes another attachment's file either.
	other := infoFile(w.infoDir, "rdma-net", "c2", "net1")
	must(t, os.MkdirAll(filepath.Dir(other), 0o755))
	must(t, os.WriteFile(other, []byte("{}"), 0o644))
	must(t, w.plugin().Del(ctx, args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": other}))))
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("DEL of c1 removed c2's device-info file: %v", err)
	}
}

// TestDeviceInfoSymlinkedDirIsNotFollowedFakeVF: a symlink in place of the
// "cni" directory fails the write (the ADD rolls back) and DEL removes
// nothing through it.
func TestDeviceInfoSymlinkedDirIsNotFollowedFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	v := newVictim(t)
	must(t, os.MkdirAll(w.infoDir, 0o755))
	must(t, os.Symlink(filepath.Dir(v.path), filepath.Join(w.infoDir, "cni")))
	good := infoFile(w.infoDir, "rdma-net", "c1", "net1")
	planted := filepath.Join(filepath.Dir(v.path), filepath.Base(good))
	must(t, os.WriteFile(planted, []byte(victimContent), 0o600))
	_, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": good})))
	if err == nil {
		t.Fatal("ADD wrote its device-info file through a symlinked directory")
	}
	must(t, os.Remove(filepath.Join(w.infoDir, "cni"))) // for assertPristine's look into cni/
	w.assertPristine()
	must(t, os.Symlink(filepath.Dir(v.path), filepath.Join(w.infoDir, "cni")))
	must(t, w.plugin().Del(ctx, args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": good}))))
	for _, f := range []string{v.path, planted} {
		b, err := os.ReadFile(f)
		if err != nil || string(b) != victimContent {
			t.Errorf("%s behind the symlinked directory: %q, %v", f, b, err)
		}
	}
	v.intact("symlinked dir")
}

// TestDeviceInfoSymlinkedFileIsReplacedNotFollowedFakeVF: a symlink planted
// under the attachment's own name is replaced by ADD (its target untouched)
// and DEL removes the name, never the target.
func TestDeviceInfoSymlinkedFileIsReplacedNotFollowedFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	v := newVictim(t)
	good := infoFile(w.infoDir, "rdma-net", "c1", "net1")
	must(t, os.MkdirAll(filepath.Dir(good), 0o755))
	must(t, os.Symlink(v.path, good))
	a := args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": good}))
	if _, err := w.plugin().Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	v.intact("ADD over a symlink")
	if st, err := os.Lstat(good); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("device-info file after ADD: %v, %v; want a regular file", st, err)
	}
	// Planted again while attached: DEL removes the link only.
	must(t, os.Remove(good))
	must(t, os.Symlink(v.path, good))
	must(t, w.plugin().Del(ctx, a))
	v.intact("DEL of a symlink")
	if _, err := os.Lstat(good); !os.IsNotExist(err) {
		t.Fatalf("device-info name after DEL: %v", err)
	}
	w.assertPristine()
}

// TestDeviceInfoUnderEveryNameMultusGivesFakeVF: ADD writes and DEL
// removes the device-info file under every name Multus gives the
// attachment, built by the Multus stand-in from Multus's own rules
// (multustest: parsePodNetworkAnnotation, LoadDelegateNetConf,
// GetCNIDeviceInfoPath) for a pod in namespace team-a, while the config's
// own name is "rdma-net": a NAD in the pod's namespace or in another one,
// named like the config or not, referenced plainly, as namespace/name or in
// JSON. The check that compared the name with the config's refused all but
// the first.
func TestDeviceInfoUnderEveryNameMultusGivesFakeVF(t *testing.T) {
	t.Parallel()
	for _, annotation := range []string{
		"rdma-net",
		"railyard-system/railyard-rdma-pf",
		"team-a/roce",
		"roce@net1",
		`[{"name":"railyard-rdma-pf","namespace":"railyard-system"}]`,
	} {
		t.Run(annotation, func(t *testing.T) {
			w := newWorld(t)
			sels, err := multustest.ParseNetworks(annotation, "team-a")
			must(t, err)
			a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
			delegate, err := multustest.DelegateName(a.Config, &sels[0])
			must(t, err)
			file := multustest.DeviceInfoPath(filepath.Join(w.infoDir, "cni"), delegate, "c1", "net1")
			a = args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": file}))
			if _, err := w.plugin().Add(ctx, a); err != nil {
				t.Fatalf("ADD with %s: %v", file, err)
			}
			if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), vfPCI) {
				t.Fatalf("device-info file %s: %q, %v", file, b, err)
			}
			must(t, w.plugin().Del(ctx, a))
			w.assertPristine()
		})
	}
}

// TestDeviceInfoWrittenAndRemovedUnderMultusNameFakeVF: the file Multus
// names is written and removed, its directories created as needed.
func TestDeviceInfoWrittenAndRemovedUnderMultusNameFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	good := infoFile(w.infoDir, "rdma-net", "c1", "net1")
	a := args("c1", pod1, "net1", w.conf(vfPCI, map[string]any{"CNIDeviceInfoFile": good}))
	if _, err := w.plugin().Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(good); err != nil {
		t.Fatalf("device-info file: %v", err)
	}
	must(t, w.plugin().Del(ctx, a))
	w.assertPristine()
}
