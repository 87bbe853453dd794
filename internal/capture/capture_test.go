package capture

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/doctor"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/netops"
)

// node writes a generated sysfs tree (SmallNode with VFs, one NIC at x8)
// and a host root with the files doctor reads and secrets it must not
// carry.
func node(t *testing.T) (sys, host string) {
	t.Helper()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	sys, host = t.TempDir(), t.TempDir()
	if err := fakesysfs.Generate(sys, d, fakesysfs.Options{VFsPerPF: 2}); err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.SetPCIeLink(sys, "0000:2a:00.0", fakesysfs.Link{Speed: 16, MaxSpeed: 16, Width: 8, MaxWidth: 16}); err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.WriteConfig(sys, "0000:17:01.0", fakesysfs.ConfigSpace{ACS: true, ACSControl: 0x1d}); err != nil {
		t.Fatal(err)
	}
	for p, content := range map[string]string{
		"proc/cmdline":       "BOOT_IMAGE=/vmlinuz root=/dev/sda1 luks.key=hunter2 intel_iommu=on iommu=pt\n",
		"proc/modules":       "mlx5_ib 462848 0 - Live 0x0\n",
		"proc/812/comm":      "containerd\n",
		"proc/812/limits":    "Limit  Soft Limit  Hard Limit  Units\nMax locked memory         65536                65536                bytes\n",
		"proc/812/environ":   "AWS_SECRET_ACCESS_KEY=hunter2\x00",
		"proc/812/cmdline":   "containerd\x00--token=hunter2\x00",
		"proc/913/comm":      "sshd\n",
		"proc/913/environ":   "PASSWORD=hunter2\x00",
		"usr/lib/os-release": "ID=test\n",
	} {
		full := filepath.Join(host, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// /proc/self as the kernel has it: a relative link to a pid.
	if err := os.Symlink("913", filepath.Join(host, "proc/self")); err != nil {
		t.Fatal(err)
	}
	return sys, host
}

// anyDCB answers every netdev with PFC on priority 3.
type anyDCB struct{}

func (anyDCB) DCB(context.Context, string) (netops.DCB, error) {
	return netops.DCB{PFCCap: 8, PFC: 1 << 3}, nil
}

// replayed captures the node and extracts the tarball as a user would
// (tar xzf), returning the extracted sys and host roots and the tarball.
func replayed(t *testing.T, sys, host string) (string, string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Node(context.Background(), &buf, Options{SysfsRoot: sys, HostRoot: host, Root: true, DCB: anyDCB{}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files == 0 || st.Symlinks == 0 || st.Dirs == 0 {
		t.Fatalf("stats %+v", st)
	}
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar to extract with")
	}
	dir := t.TempDir()
	cmd := exec.Command(tarBin, "-xzf", "-", "-C", dir)
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	return filepath.Join(dir, SysDir), filepath.Join(dir, HostDir), buf.Bytes()
}

func topoJSON(t *testing.T, root string) string {
	t.Helper()
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(topo, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), root, "ROOT")
}

func doctorJSON(t *testing.T, sys, host string) string {
	t.Helper()
	r, err := doctor.Run(context.Background(), doctor.Options{SysfsRoot: sys, Host: doctor.HostFiles{Root: host}, Root: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(sys, "SYS", host, "HOST").Replace(buf.String())
}

// A capture of a generated tree replays to the same topology and the same
// doctor report.
func TestCaptureReplaysToTheSameTopologyAndDoctorReport(t *testing.T) {
	t.Parallel()
	sys, host := node(t)
	rsys, rhost, _ := replayed(t, sys, host)
	if diff := cmp.Diff(topoJSON(t, sys), topoJSON(t, rsys)); diff != "" {
		t.Errorf("topology (-live +replayed):\n%s", diff)
	}
	want, got := doctorJSON(t, sys, host), doctorJSON(t, rsys, rhost)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("doctor (-live +replayed):\n%s", diff)
	}
	// With a DCB reader, doctor read the RoCE NICs' ecn/ files: captured.
	if b, err := os.ReadFile(filepath.Join(rsys, "class/net/ens42np0/ecn/roce_rp/enable/3")); err != nil || string(b) != "1\n" {
		t.Errorf("ecn/ of ens42np0 not captured: %q, %v", b, err)
	}
	// The report is not trivially equal: it has the broken link, the ACS
	// redirect and the limited memlock the live tree has.
	for _, s := range []string{"16 GT/s x8 (of 16 GT/s x16)", "ACS redirects", "limit of 65536"} {
		if !strings.Contains(got, s) {
			t.Errorf("replayed doctor report lacks %q", s)
		}
	}
}

// No environment, no process command line, no kernel parameter but the
// IOMMU ones; symlinks stay symlinks.
func TestCaptureCarriesNoSecrets(t *testing.T) {
	t.Parallel()
	sys, host := node(t)
	var buf bytes.Buffer
	if _, err := Node(context.Background(), &buf, Options{SysfsRoot: sys, HostRoot: host}); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	links := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if bytes.Contains(b, []byte("hunter2")) || strings.HasSuffix(h.Name, "environ") || strings.HasSuffix(h.Name, "/cmdline") && h.Name != "host/proc/cmdline" {
			t.Errorf("%s stored: %q", h.Name, b)
		}
		if h.Name == "host/proc/cmdline" && string(b) != "intel_iommu=on iommu=pt\n" {
			t.Errorf("kernel command line stored as %q", b)
		}
		if h.Typeflag == tar.TypeSymlink {
			links++
			if filepath.IsAbs(h.Linkname) || strings.Contains(h.Name, "..") {
				t.Errorf("symlink %s -> %s leaves its tree", h.Name, h.Linkname)
			}
		}
		if h.Name == "host/proc/self" && h.Linkname != "913" {
			t.Errorf("host/proc/self -> %q, want 913", h.Linkname)
		}
	}
	if links == 0 {
		t.Error("no symlink stored: sysfs's are")
	}
}

// An absolute symlink of a host root (/lib -> /usr/lib) is stored
// relative, so a replay stays in its tree.
func TestAbsoluteSymlinkStoredRelative(t *testing.T) {
	t.Parallel()
	host := t.TempDir()
	if err := os.MkdirAll(filepath.Join(host, "usr/lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "usr/lib/os-release"), []byte("ID=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/lib", filepath.Join(host, "lib")); err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{}
	rec.Record("/lib/os-release")
	var buf bytes.Buffer
	if _, err := Write(&buf, []Tree{{Dir: HostDir, Root: host, Rec: rec}}); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(zr)
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		b, _ := io.ReadAll(tr)
		got[h.Name] = h.Linkname + string(b)
	}
	want := map[string]string{"host/lib": "usr/lib", "host/usr/": "", "host/usr/lib/": "", "host/usr/lib/os-release": "ID=x\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// A capture past its bounds fails with ErrTooLarge; a FIFO or a file
// larger than its reader's bound is not stored, and nothing blocks.
func TestCaptureIsBounded(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rec := &Recorder{}
	for i := range 10 {
		p := filepath.Join(root, "class/net", fmt.Sprint("eth", i), "mtu")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("1500\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rec.Record(fmt.Sprintf("class/net/eth%d/mtu", i))
	}
	tree := []Tree{{Dir: SysDir, Root: root, Rec: rec, ListDirs: true}}
	if _, err := write(io.Discard, tree, limits{entries: 12, bytes: 1 << 20}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("13+ entries under a bound of 12: %v", err)
	}
	if _, err := write(io.Discard, tree, limits{entries: 100, bytes: 20}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("50 bytes under a bound of 20: %v", err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "big"), make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.Record("fifo")
	rec.Record("big")
	done := make(chan error, 1)
	var st Stats
	go func() {
		var err error
		st, err = Write(io.Discard, tree)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || st.Files != 10 || st.Unreadable != 1 {
			t.Errorf("stats %+v, %v: want the 10 mtu files, the 5000-byte file unreadable and the FIFO skipped", st, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a FIFO blocked the capture")
	}
}

// A symlink that leads out of its tree is neither stored nor followed,
// whether a reader's path goes through it or a listed directory holds
// it: relative with too many "..", climbing back through a name
// ("in/../../.."), or absolute in the sysfs tree (which sysfs.FS reads
// beneath its root). Links within the tree are stored.
func TestSymlinksOutOfTheTreeAreNotStored(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	sys, host := filepath.Join(base, "sys"), filepath.Join(base, "host")
	for p, content := range map[string]string{
		"outside/secret":      "PRETTY_NAME=outside\n",
		"sys/devices/a/attr":  "inside\n",
		"host/usr/lib/x.conf": "inside\n",
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
		"sys/class/rel":    "../../outside/secret",
		"sys/class/abs":    filepath.Join(base, "outside/secret"),
		"sys/class/dir":    "../../outside",
		"sys/class/climb":  "in/../../../outside/secret",
		"sys/class/in":     "../devices/a",
		"host/etc/release": "../../outside/secret",
		"host/etc/conf":    "/usr/lib/x.conf",
	} {
		p := filepath.Join(base, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	sysRec, hostRec := &Recorder{}, &Recorder{}
	for _, p := range []string{"class", "class/rel", "class/abs", "class/dir/secret", "class/climb", "class/in/attr"} {
		sysRec.Record(p)
	}
	for _, p := range []string{"/etc/release", "/etc/conf"} {
		hostRec.Record(p)
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, []Tree{{Dir: SysDir, Root: sys, Rec: sysRec, ListDirs: true, Beneath: true}, {Dir: HostDir, Root: host, Rec: hostRec}}); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(zr)
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		b, _ := io.ReadAll(tr)
		got[h.Name] = h.Linkname + string(b)
	}
	want := map[string]string{
		"sys/class/": "", "sys/class/in": "../devices/a", "sys/devices/": "", "sys/devices/a/": "", "sys/devices/a/attr": "inside\n",
		"host/etc/": "", "host/etc/conf": "../usr/lib/x.conf", "host/usr/": "", "host/usr/lib/": "", "host/usr/lib/x.conf": "inside\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
}
