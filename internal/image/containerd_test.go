package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// scratchContainerd starts a containerd of its own (root, state, socket in
// a temporary directory, CRI disabled) and returns its socket; the process
// is stopped by PID and its directory removed at cleanup.
func scratchContainerd(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run containerd")
	}
	for _, tool := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (hack/cluster/install-packages.sh installs it)", tool)
		}
	}
	dir, err := os.MkdirTemp("", "railyard-image-containerd-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf("version = 2\nroot = %q\nstate = %q\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = %q\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("containerd log:\n%s", b)
		}
		_ = exec.Command("umount", "-R", "-l", dir).Run() // rootfs mounts of a failed run, if any
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove %s: %v", dir, err)
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatal("containerd did not create its socket within 20s")
		}
	}
}

// TestArchiveImportsAndRunsInContainerd imports an image with the real
// railyard-cni-install binary into a scratch containerd 1.6 with
// `ctr images import` (namespace railyard-image-test), checks its name and
// digest, runs it as a container, and removes it.
func TestArchiveImportsAndRunsInContainerd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containerd")
	}
	sock := scratchContainerd(t)
	layer := cniInstallLayer(t)
	m := testMeta()
	m.Cmd = []string{"/usr/local/bin/railyard-cni-install", "--help"}
	img, err := Assemble(layer, m)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	const ref = "railyard.local/test/railyard:0.1.0"
	archive := archiveFile(t, img, ref)

	ctr := func(args ...string) string {
		t.Helper()
		out, err := ctrIn(sock, args...)
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	ctr("images", "import", "--snapshotter", "native", archive)
	t.Cleanup(func() { ctr("images", "rm", ref) })
	ls := ctr("images", "ls")
	if !strings.Contains(ls, ref) || !strings.Contains(ls, digest.String()) || !strings.Contains(ls, "linux/amd64") {
		t.Fatalf("ctr images ls:\n%s\nwant %s %s", ls, ref, digest)
	}
	if check := ctr("images", "check"); !strings.Contains(check, "complete") {
		t.Fatalf("ctr images check:\n%s", check)
	}
	out := ctr("run", "--rm", "--snapshotter", "native", ref, "railyard-image-test-run")
	if !strings.Contains(out, "--cni-bin-dir string") {
		t.Fatalf("container output:\n%s", out)
	}
}

// cniInstallLayer is a layer of railyard-cni-install alone (amd64): the
// smallest real binary of the image, for tests that run an image.
func cniInstallLayer(t *testing.T) []byte {
	t.Helper()
	files, err := GoBuild(context.Background(), BuildOptions{
		Dir: repoRoot(t), Packages: []string{"./cmd/railyard-cni-install"}, Arch: "amd64",
		Version: "0.1.0", Revision: "test", OutDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	layer, err := Layer(files, testTime)
	if err != nil {
		t.Fatal(err)
	}
	return layer
}

// archiveFile writes img, tagged ref, as an archive file in a temporary
// directory and returns its path.
func archiveFile(t *testing.T, img v1.Image, ref string) string {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteArchive(f, img, ref, testTime); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return archive
}

// ctrIn runs ctr against the containerd at sock, in the tests' namespace
// railyard-image-test, and returns its output (stdout and stderr).
func ctrIn(sock string, args ...string) (string, error) {
	out, err := exec.Command("ctr", append([]string{"--address", sock, "--namespace", "railyard-image-test"}, args...)...).CombinedOutput()
	return string(out), err
}
