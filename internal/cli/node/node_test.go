package node

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/nodesetup"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// fakeApplier drives a fake tree through fakesysfs.Kernel; the policies
// here keep MACs, so no VF address operation is needed.
type fakeApplier struct{ root string }

func (f fakeApplier) build(*v1alpha1.NodePolicy) (*nodesetup.Applier, func(), error) {
	fs := sysfs.New(f.root)
	return &nodesetup.Applier{FS: fs, SRIOV: fakesysfs.NewKernel(f.root), Usage: []nodesetup.UsageSource{nodesetup.SysfsUsage{FS: fs}}}, func() {}, nil
}

func setup(t *testing.T) (root, policy string) {
	t.Helper()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{}); err != nil {
		t.Fatal(err)
	}
	policy = filepath.Join(t.TempDir(), "policy.yaml")
	write(t, policy, 3)
	return root, policy
}

func write(t *testing.T, path string, vfs int) {
	t.Helper()
	doc := "apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\npfs:\n- netdev: ens42np0\n  numVFs: " + string(rune('0'+vfs)) + "\n  macs: keep\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

func cmdWith(f fakeApplier) func(iostreams.Streams) *cobra.Command {
	return func(s iostreams.Streams) *cobra.Command { return newApplyCommand(s, f.build) }
}

func TestApplyPrintsChangesThenNothing(t *testing.T) {
	t.Parallel()
	root, policy := setup(t)
	out, _, err := clitest.Run(t, cmdWith(fakeApplier{root}), "", "--policy", policy)
	if err != nil || !strings.Contains(out, "changed: 0000:2a:00.0: numVFs 0 -> 3") {
		t.Fatalf("%v\n%s", err, out)
	}
	out, _, err = clitest.Run(t, cmdWith(fakeApplier{root}), "", "--policy", policy)
	if err != nil || out != "no changes\n" {
		t.Fatalf("second run: %v\n%q", err, out)
	}
	out, _, _ = clitest.Run(t, cmdWith(fakeApplier{root}), "", "--policy", policy, "--json")
	if !strings.Contains(out, `"changes": []`) && !strings.Contains(out, `"changes": null`) {
		t.Fatalf("json: %s", out)
	}
}

func TestWatchAppliesWhenThePolicyChanges(t *testing.T) {
	t.Parallel()
	root, policy := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- watchLoop(ctx, iostreams.Streams{Out: io.Discard, ErrOut: io.Discard}, policy, 10*time.Millisecond, fakeApplier{root}.build, false)
	}()
	waitVFs(t, root, 3)
	write(t, policy, 0)
	waitVFs(t, root, 0)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func waitVFs(t *testing.T, root string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := sysfs.New(root).SRIOV("0000:2a:00.0"); err == nil && st.NumVFs == n && len(st.VFs) == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("PF never reached %d VFs", n)
}

func TestApplyRequiresPolicy(t *testing.T) {
	t.Parallel()
	if _, _, err := clitest.Run(t, NewCommand, "", "apply"); err == nil || !strings.Contains(err.Error(), "--policy") {
		t.Fatalf("err = %v", err)
	}
}

// node apply with the real sysfs writer on a fake tree whose VF's
// driver_override is a symlink out of the sysfs root: the run fails
// naming the escape, and the outside file is untouched.
func TestApplyNeverWritesOutsideTheSysfsRoot(t *testing.T) {
	t.Parallel()
	root, _ := setup(t)
	if err := fakesysfs.NewKernel(root).SetNumVFs(context.Background(), "0000:2a:00.0", 2); err != nil {
		t.Fatal(err)
	}
	st, err := sysfs.New(root).SRIOV("0000:2a:00.0")
	if err != nil || len(st.VFs) != 2 {
		t.Fatalf("VFs %+v, %v", st, err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	attr := filepath.Join(root, "bus/pci/devices", st.VFs[0].PCI, "driver_override")
	_ = os.Remove(attr)
	if err := os.Symlink(victim, attr); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	doc := "apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\nsysfsRoot: " + root +
		"\npfs:\n- netdev: ens42np0\n  numVFs: 2\n  vfDriver: vfio-pci\n  macs: keep\n"
	if err := os.WriteFile(policy, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = clitest.Run(t, NewCommand, "", "apply", "--policy", policy)
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the file outside the sysfs root was written: %q", b)
	}
	if err == nil || !strings.Contains(err.Error(), "escapes") || !strings.Contains(err.Error(), "driver_override") {
		t.Fatalf("err = %v, want the write refused for leaving the sysfs root", err)
	}
}
