//go:build e2e

package framework

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readTar returns the regular files and symlinks of a tar archive.
func readTar(t *testing.T, data []byte) (files map[string][]byte, links map[string]string) {
	t.Helper()
	files, links = map[string][]byte{}, map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, links
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		case tar.TypeSymlink:
			links[h.Name] = h.Linkname
		}
	}
}

func TestBuildImageArchiveIsAValidOCILayout(t *testing.T) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("no /bin/busybox (install busybox-static)")
	}
	archive, built, err := buildImageArchive("/bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := readTar(t, archive)
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range index.Manifests {
		names[m.Annotations["io.containerd.image.name"]] = true
		blob, ok := files["blobs/sha256/"+strings.TrimPrefix(m.Digest, "sha256:")]
		if !ok || int64(len(blob)) != m.Size {
			t.Fatalf("manifest %s missing or wrong size", m.Digest)
		}
		var man struct {
			Config descriptor   `json:"config"`
			Layers []descriptor `json:"layers"`
		}
		if err := json.Unmarshal(blob, &man); err != nil {
			t.Fatal(err)
		}
		for _, d := range append([]descriptor{man.Config}, man.Layers...) {
			b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
			if !ok || int64(len(b)) != d.Size || newBlob(d.MediaType, b).desc.Digest != d.Digest {
				t.Fatalf("blob %s missing or corrupt", d.Digest)
			}
		}
		layerFiles, layerLinks := readTar(t, files["blobs/sha256/"+strings.TrimPrefix(man.Layers[0].Digest, "sha256:")])
		if len(layerFiles["bin/busybox"]) == 0 {
			t.Error("layer has no bin/busybox")
		}
		for _, applet := range []string{"bin/sh", "bin/sleep", "bin/cat"} {
			if layerLinks[applet] != "/bin/busybox" {
				t.Errorf("layer: %s -> %q, want /bin/busybox", applet, layerLinks[applet])
			}
		}
	}
	want := 2
	if tools, err := toolPaths(benchTools); err == nil {
		want = 3 // and BenchToolsImage: checked below
		checkToolsImage(t, files, index.Manifests, tools)
	}
	if len(built) != len(index.Manifests) {
		t.Errorf("buildImageArchive names %v, the index %d images", built, len(index.Manifests))
	}
	for _, n := range built {
		if !names[n] {
			t.Errorf("buildImageArchive names %s, not in the index %v", n, names)
		}
	}
	if !names[BusyboxImage] || !names[PauseImage] || len(index.Manifests) != want {
		t.Errorf("index names %v, want %s and %s (and %s where the host has %v)", names, BusyboxImage, PauseImage, BenchToolsImage, benchTools)
	}
}

// checkToolsImage: BenchToolsImage is the busybox layer and a layer with
// every tool file (iperf3, its libraries, the loader) at its host path,
// with the host's content; a root shell can run iperf3 from it (chroot
// into the two layers unpacked).
func checkToolsImage(t *testing.T, files map[string][]byte, manifests []descriptor, tools []string) {
	t.Helper()
	for _, m := range manifests {
		if m.Annotations["io.containerd.image.name"] != BenchToolsImage {
			continue
		}
		var man struct {
			Layers []descriptor `json:"layers"`
		}
		if err := json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(m.Digest, "sha256:")], &man); err != nil || len(man.Layers) != 2 {
			t.Fatalf("%s: layers %v (%v), want busybox and tools", BenchToolsImage, man.Layers, err)
		}
		root := t.TempDir()
		for _, l := range man.Layers {
			layer := files["blobs/sha256/"+strings.TrimPrefix(l.Digest, "sha256:")]
			cmd := exec.Command("tar", "-x", "-C", root)
			cmd.Stdin = bytes.NewReader(layer)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("unpack %s: %v: %s", l.Digest, err, out)
			}
		}
		for _, p := range tools {
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(root, p)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %s differs from the host's (%v)", BenchToolsImage, p, err)
			}
		}
		if os.Geteuid() == 0 {
			out, err := exec.Command("chroot", root, "/bin/sh", "-c", "iperf3 --version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "iperf 3") {
				t.Errorf("iperf3 --version in %s: %v: %s", BenchToolsImage, err, out)
			}
		}
		return
	}
	t.Errorf("no %s in the archive", BenchToolsImage)
}

func TestLddPaths(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibiperf.so.0 => /lib/x86_64-linux-gnu/libiperf.so.0 (0x00007f70)\n" +
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f70)\n\tlibgone.so.1 => not found\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f70)\n"
	got := lddPaths(out)
	want := []string{"/lib/x86_64-linux-gnu/libiperf.so.0", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("lddPaths = %q, want %q", got, want)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/a/b`:         "/a/b",
		`/a\040b`:      "/a b",
		`/x\011y\134z`: "/x\ty\\z",
		`/bad\09`:      `/bad\09`,
		`/end\`:        `/end\`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeObjects(t *testing.T) {
	objs, err := DecodeObjects([]byte("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"b\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "ConfigMap" || objs[1].GetName() != "b" {
		t.Fatalf("decoded %d objects: %v", len(objs), objs)
	}
	if _, err := DecodeObjects([]byte("a: [unclosed\n")); err == nil {
		t.Error("bad YAML decoded without error")
	}
}

func TestRunStateRoundTripAndRejectsForeignDir(t *testing.T) {
	dir := t.TempDir()
	s := &runState{RunDir: dir, OwnerPID: 42, CgroupName: "railyard-e2e-x", Processes: []trackedProcess{{PID: 7, Cmdline: []string{"etcd", "--x"}}}}
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.OwnerPID != 42 || got.Processes[0].Cmdline[1] != "--x" {
		t.Errorf("round trip: %+v", got)
	}
	other := t.TempDir()
	data, _ := os.ReadFile(dir + "/" + stateFile)
	if err := os.WriteFile(other+"/"+stateFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(other); err == nil {
		t.Error("state naming another run dir was accepted")
	}
}

func TestCgroupDirsRejectsPathNames(t *testing.T) {
	for _, name := range []string{"", "a/b", "../x", "..", ".", "kubepods", runDirPrefix, runDirPrefix + "a/b", runDirPrefix + ".."} {
		if _, err := cgroupDirs(name); err == nil {
			t.Errorf("cgroupDirs(%q) accepted", name)
		}
	}
}

// With a live run beside it, ReapStale tears nothing down: a stale run's
// teardown restores the host directories it snapshotted, which would
// delete what the live run's kubelet made there (it deleted a live
// kubelet's device-plugins socket once, when the reaper ran by hand during
// a proof run). The stale run is reaped once the live one is gone.
func TestReapStaleLeavesEverythingWhileARunIsLive(t *testing.T) {
	base := t.TempDir()
	self, err := procCmdline(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, pid int, cmdline []string) string {
		d := filepath.Join(base, runDirPrefix+name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		s := &runState{RunDir: d, OwnerPID: pid, OwnerCmdline: cmdline, CgroupName: runDirPrefix + "reaptest-" + name}
		if err := s.save(); err != nil {
			t.Fatal(err)
		}
		return d
	}
	live := mk("live", os.Getpid(), self)
	stale := mk("stale", 1<<22+7, []string{"gone"}) // no such process
	err = ReapStale(base, t.Logf)
	if err == nil || !strings.Contains(err.Error(), "of live process") {
		t.Fatalf("ReapStale with a live run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(stale, stateFile)); err != nil {
		t.Fatalf("the stale run was torn down beside a live one: %v", err)
	}
	if err := os.RemoveAll(live); err != nil {
		t.Fatal(err)
	}
	if err := ReapStale(base, t.Logf); err != nil {
		t.Fatalf("ReapStale with only the stale run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(stale, stateFile)); !os.IsNotExist(err) {
		t.Errorf("the stale run is still there once alone: %v", err)
	}
}
