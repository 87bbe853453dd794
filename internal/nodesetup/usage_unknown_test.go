package nodesetup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// downLister is kubelet's PodResources while kubelet restarts.
type downLister struct{}

func (downLister) List(context.Context) ([]podlist.Pod, error) {
	return nil, errors.New("dial unix kubelet.sock: connect: connection refused")
}

// corruptCNIState is a railyard-cni state directory with one good record
// (for a device of no PF here) and one that does not decode.
func corruptCNIState(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := (state.Store{Dir: dir}).Put(&state.Record{Key: "0000:99:00.1", PCI: "0000:99:00.1", ContainerID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "devices", "0000:2a:00.1.json"), []byte(`{"key":"0000:2a:0`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// When a usage source cannot tell which VFs are in use (a corrupt
// railyard-cni record, kubelet's PodResources down), no VF is destroyed:
// a count change that goes through 0 is refused, naming why, and nothing
// changes. Before, the errors were notes and sriov_numvfs 0 was written.
func TestApplyNeverDestroysVFsWhenUsageIsUnknown(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		numVFs  string
		sources func(w *world, cniDir string) []UsageSource
		reasons []string
	}{
		"lowered to 0, record corrupt and kubelet down": {"0", func(w *world, dir string) []UsageSource {
			return []UsageSource{SysfsUsage{FS: w.fs}, CNIStateUsage{Dir: dir}, PodResourcesUsage{Lister: downLister{}, Socket: "kubelet.sock"}}
		}, []string{"railyard-cni state records", "railyard-cni state in", "0000:2a:00.1", "kubelet PodResources kubelet.sock", "connection refused"}},
		"re-created 3 -> 5, record corrupt and kubelet down": {"5", func(w *world, dir string) []UsageSource {
			return []UsageSource{SysfsUsage{FS: w.fs}, CNIStateUsage{Dir: dir}, PodResourcesUsage{Lister: downLister{}, Socket: "kubelet.sock"}}
		}, []string{"railyard-cni state in", "0000:2a:00.1", "connection refused"}},
		"lowered to 1, only the record corrupt": {"1", func(w *world, dir string) []UsageSource {
			return []UsageSource{SysfsUsage{FS: w.fs}, CNIStateUsage{Dir: dir}, PodResourcesUsage{Lister: &fakeLister{}}}
		}, []string{"railyard-cni state in", "0000:2a:00.1"}},
		"lowered to 0, only kubelet down": {"0", func(w *world, _ string) []UsageSource {
			return []UsageSource{SysfsUsage{FS: w.fs}, PodResourcesUsage{Lister: downLister{}, Socket: "kubelet.sock"}}
		}, []string{"connection refused"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			ctx := context.Background()
			if _, err := w.applier().Apply(ctx, policy(t, "pfs:\n- netdev: ens42np0\n  numVFs: 3\n")); err != nil {
				t.Fatal(err)
			}
			before := w.snapshot()
			w.calls = nil
			_, err := w.applier(tc.sources(w, corruptCNIState(t))...).Apply(ctx, policy(t, "pfs:\n- netdev: ens42np0\n  numVFs: "+tc.numVFs+"\n"))
			if !errors.Is(err, ErrUsageUnknown) {
				t.Fatalf("err = %v, want ErrUsageUnknown", err)
			}
			for _, want := range append(tc.reasons, "numVFs 3 -> "+tc.numVFs, "nothing changed") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if len(w.calls) != 0 {
				t.Fatalf("calls %q", w.calls)
			}
			if diff := cmp.Diff(before, w.snapshot()); diff != "" {
				t.Fatalf("the node changed (-want +got):\n%s", diff)
			}
		})
	}
}

// Changes that destroy no VF go ahead while usage is unknown: VFs are
// created from 0 and configured (this run made them), and a run with
// nothing to change succeeds. Changes to VFs that existed before the run
// (a rebind takes a VF's devices from a pod) are held back, listed in the
// error.
func TestApplyWithUsageUnknownCreatesButHoldsBackChangesToExistingVFs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	sources := []UsageSource{SysfsUsage{FS: w.fs}, CNIStateUsage{Dir: corruptCNIState(t)}, PodResourcesUsage{Lister: downLister{}, Socket: "kubelet.sock"}}
	const kernel = "pfs:\n- netdev: ens42np0\n  numVFs: 2\n"
	res, err := w.applier(sources...).Apply(ctx, policy(t, kernel))
	if err != nil {
		t.Fatalf("creating VFs from 0: %v", err)
	}
	if got := changeStrings(res); len(got) != 1+2*2 || got[0] != "0000:2a:00.0: numVFs 0 -> 2" {
		t.Fatalf("changes %q", got)
	}
	res, err = w.applier(sources...).Apply(ctx, policy(t, kernel))
	if err != nil || len(res.Changes) != 0 {
		t.Fatalf("a run with nothing to change: %q, %v", changeStrings(res), err)
	}
	before := w.snapshot()
	w.calls = nil
	res, err = w.applier(sources...).Apply(ctx, policy(t, kernel+"  vfDriver: vfio-pci\n"))
	if !errors.Is(err, ErrUsageUnknown) {
		t.Fatalf("err = %v, want ErrUsageUnknown", err)
	}
	for _, want := range []string{"VF 0 (0000:2a:00.1): driver mlx5_core -> vfio-pci", "VF 1 (0000:2a:00.2): driver mlx5_core -> vfio-pci", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if len(res.Changes) != 0 || len(w.calls) != 0 {
		t.Fatalf("changes %q, calls %q", changeStrings(res), w.calls)
	}
	if diff := cmp.Diff(before, w.snapshot()); diff != "" {
		t.Fatalf("the node changed (-want +got):\n%s", diff)
	}
}
