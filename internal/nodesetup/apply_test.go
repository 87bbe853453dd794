package nodesetup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

const (
	ibPF    = "0000:18:00.0" // ibp24s0, mlx5_0
	rocePF  = "0000:2a:00.0" // ens42np0, mlx5_1
	otherPF = "0000:3b:00.0" // ens59np0, named by no policy
)

func policy(t *testing.T, doc string) *v1alpha1.NodePolicy {
	t.Helper()
	p, err := v1alpha1.Parse([]byte("apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\n" + doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const ibAndRoCE = `pfs:
- pciAddress: "0000:18:00.0"
  numVFs: 4
  linkLayer: InfiniBand
  pkey: "0x8001"
- netdev: ens42np0
  numVFs: 2
  vfDriver: vfio-pci
`

// snapshot is everything Apply may change, as the node shows it.
func (w *world) snapshot() string {
	ctx := context.Background()
	var b strings.Builder
	for _, pf := range []string{ibPF, rocePF, otherPF} {
		st, err := w.fs.SRIOV(pf)
		if err != nil {
			w.t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s numvfs=%d vfs=%d\n", pf, st.NumVFs, len(st.VFs))
		for _, v := range st.VFs {
			drv, _ := w.fs.Driver(v.PCI)
			a, _ := w.ops.VFAddresses(ctx, w.pfNetdev(pf), v.Index)
			fmt.Fprintf(&b, "  vf%d %s driver=%s mac=%s guid=%s/%s", v.Index, v.PCI, drv, a.MAC, a.NodeGUID, a.PortGUID)
			if r, _ := w.fs.RDMADevices(v.PCI); len(r) > 0 {
				g, _ := w.fs.NodeGUID(r[0])
				fmt.Fprintf(&b, " sysfs-guid=%x", g)
			}
			if n, _ := w.fs.Netdevs(v.PCI); len(n) > 0 {
				mac, _ := w.fs.NetdevAddress(n[0])
				fmt.Fprintf(&b, " sysfs-mac=%s", mac)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func changeStrings(r Result) []string {
	out := make([]string, len(r.Changes))
	for i, c := range r.Changes {
		out[i] = c.String()
	}
	return out
}

func TestApplyCreatesVFsWithDerivedAddressesAndDrivers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	res, err := w.applier().Apply(ctx, policy(t, ibAndRoCE))
	if err != nil {
		t.Fatal(err)
	}
	pfGUID, _ := w.fs.NodeGUID("mlx5_0")
	roceGUID, _ := w.fs.NodeGUID("mlx5_1")
	st, _ := w.fs.SRIOV(ibPF)
	want := []string{"0000:18:00.0: numVFs 0 -> 4"}
	for _, v := range st.VFs {
		g := DeriveGUID(pfGUID, v.Index)
		want = append(want,
			fmt.Sprintf("0000:18:00.0 VF %d (%s): guid 00:00:00:00:00:00:00:00 -> %s", v.Index, v.PCI, g),
			fmt.Sprintf("0000:18:00.0 VF %d (%s): rebind mlx5_core (to take %s)", v.Index, v.PCI, g))
	}
	want = append(want, "0000:2a:00.0: numVFs 0 -> 2")
	rst, _ := w.fs.SRIOV(rocePF)
	for _, v := range rst.VFs {
		want = append(want,
			fmt.Sprintf("0000:2a:00.0 VF %d (%s): mac 00:00:00:00:00:00 -> %s", v.Index, v.PCI, DeriveMAC(roceGUID, v.Index)),
			fmt.Sprintf("0000:2a:00.0 VF %d (%s): driver mlx5_core -> vfio-pci", v.Index, v.PCI))
	}
	if got := changeStrings(res); !slices.Equal(got, want) {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Each IB VF's own RDMA device shows its derived GUID (it was rebound).
	for _, v := range st.VFs {
		r, _ := w.fs.RDMADevices(v.PCI)
		if g, _ := w.fs.NodeGUID(r[0]); g != [8]byte(DeriveGUID(pfGUID, v.Index)) {
			t.Errorf("VF %d sysfs GUID %x", v.Index, g)
		}
	}
	for _, v := range rst.VFs {
		if d, _ := w.fs.Driver(v.PCI); d != "vfio-pci" {
			t.Errorf("RoCE VF %d driver %s", v.Index, d)
		}
	}
	if len(res.Partitions) != 1 || !strings.HasPrefix(res.Partitions[0], "railyard_8001=0x8001, ipoib, defmember=full : 0x") ||
		strings.Count(res.Partitions[0], "=full") != 5 {
		t.Fatalf("partitions = %q", res.Partitions)
	}
	// Idempotent: the second run changes nothing.
	before := w.snapshot()
	res, err = w.applier().Apply(ctx, policy(t, ibAndRoCE))
	if err != nil || len(res.Changes) != 0 {
		t.Fatalf("second run: %v, %v", changeStrings(res), err)
	}
	if after := w.snapshot(); after != before {
		t.Fatalf("second run changed the node:\n%s\n%s", before, after)
	}
}

func TestApplyNeverTouchesAPFNoPolicyNames(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := w.kernel.SetNumVFs(context.Background(), otherPF, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := w.applier().Apply(context.Background(), policy(t, ibAndRoCE)); err != nil {
		t.Fatal(err)
	}
	for _, c := range w.calls {
		if strings.Contains(c, otherPF) || strings.Contains(c, "ens59np0") {
			t.Errorf("call on the unnamed PF: %s", c)
		}
	}
	for _, c := range w.ops.Calls() {
		if strings.Contains(c, "ens59np0") {
			t.Errorf("netops call on the unnamed PF: %s", c)
		}
	}
	if st, _ := w.fs.SRIOV(otherPF); st.NumVFs != 3 {
		t.Fatalf("unnamed PF has %d VFs", st.NumVFs)
	}
}

func TestApplyChangesTheCountThroughZero(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	if _, err := w.applier().Apply(ctx, policy(t, ibAndRoCE)); err != nil {
		t.Fatal(err)
	}
	res, err := w.applier().Apply(ctx, policy(t, strings.Replace(ibAndRoCE, "numVFs: 4", "numVFs: 6", 1)))
	if err != nil {
		t.Fatal(err)
	}
	got := changeStrings(res)
	if len(got) != 2+6*2 || got[0] != "0000:18:00.0: numVFs 4 -> 0" || got[1] != "0000:18:00.0: numVFs 0 -> 6" {
		t.Fatalf("changes = %q", got)
	}
	if st, _ := w.fs.SRIOV(ibPF); st.NumVFs != 6 || len(st.VFs) != 6 {
		t.Fatalf("state %+v", st)
	}
}

func TestApplyResumesAfterAFailureAtEveryStep(t *testing.T) {
	t.Parallel()
	// The starting node has 2 VFs on the IB PF, so the run goes through
	// 0; the clean run's node is the reference.
	start := func(t *testing.T) *world {
		w := newWorld(t)
		if err := w.kernel.SetNumVFs(context.Background(), ibPF, 2); err != nil {
			t.Fatal(err)
		}
		w.ops.AddVF("ibp24s0", 0, netopsSettings())
		w.ops.AddVF("ibp24s0", 1, netopsSettings())
		return w
	}
	ctx := context.Background()
	clean := start(t)
	if _, err := clean.applier().Apply(ctx, policy(t, ibAndRoCE)); err != nil {
		t.Fatal(err)
	}
	want, steps := clean.snapshot(), clean.steps
	if steps != 2+4*2+1+2*2 {
		t.Fatalf("a clean run took %d steps: %q", steps, clean.calls)
	}
	for k := 1; k <= steps; k++ {
		t.Run(fmt.Sprint("fail-at-", k), func(t *testing.T) {
			t.Parallel()
			w := start(t)
			w.failAt = k
			if _, err := w.applier().Apply(ctx, policy(t, ibAndRoCE)); !errors.Is(err, errInjected) {
				t.Fatalf("failed run: %v", err)
			}
			w.failAt = 0
			res, err := w.applier().Apply(ctx, policy(t, ibAndRoCE))
			if err != nil {
				t.Fatalf("next run after failing at %s: %v", w.calls[k-1], err)
			}
			if len(res.Changes) == 0 {
				t.Fatalf("the next run after failing at %s changed nothing", w.calls[k-1])
			}
			if got := w.snapshot(); got != want {
				t.Fatalf("after failing at %s and a new run:\n%s\nwant:\n%s", w.calls[k-1], got, want)
			}
			if res, err := w.applier().Apply(ctx, policy(t, ibAndRoCE)); err != nil || len(res.Changes) != 0 {
				t.Fatalf("third run: %q, %v", changeStrings(res), err)
			}
		})
	}
}

func TestApplyRefusesToDestroyVFsInUseNamingThePods(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	pol := policy(t, "pfs:\n- pciAddress: \"0000:2a:00.0\"\n  numVFs: 3\n")
	if _, err := w.applier().Apply(ctx, pol); err != nil {
		t.Fatal(err)
	}
	st, _ := w.fs.SRIOV(rocePF)
	if err := fakesysfs.MoveNetdevOut(w.root, "ens42np0v1"); err != nil {
		t.Fatal(err)
	}
	lister := &fakeLister{pods: []fakePod{{"default", "trainer-0", "railyard.io/rdma_vf", []string{st.VFs[1].PCI}}}}
	a := w.applier(SysfsUsage{FS: w.fs}, PodResourcesUsage{Lister: lister, Socket: "kubelet.sock"})
	w.calls = nil
	_, err := a.Apply(ctx, policy(t, "pfs:\n- pciAddress: \"0000:2a:00.0\"\n  numVFs: 5\n"))
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("err = %v, want ErrInUse", err)
	}
	for _, want := range []string{"numVFs 3 -> 5", "VF 1 (" + st.VFs[1].PCI + ")", "pod default/trainer-0", "netdev is not in the host namespace", "nothing changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if len(w.calls) != 0 {
		t.Fatalf("a refused change made calls %q", w.calls)
	}
	if st, _ := w.fs.SRIOV(rocePF); st.NumVFs != 3 {
		t.Fatalf("numvfs = %d", st.NumVFs)
	}
}

func TestApplyLeavesVFsInUseAsTheyAre(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	if err := w.kernel.SetNumVFs(ctx, rocePF, 2); err != nil {
		t.Fatal(err)
	}
	w.ops.AddVF("ens42np0", 0, netopsSettings())
	w.ops.AddVF("ens42np0", 1, netopsSettings())
	st, _ := w.fs.SRIOV(rocePF)
	lister := &fakeLister{pods: []fakePod{{"ml", "job-1", "railyard.io/roce", []string{st.VFs[0].PCI}}}}
	res, err := w.applier(PodResourcesUsage{Lister: lister}).Apply(ctx, policy(t, "pfs:\n- netdev: ens42np0\n  numVFs: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Changes {
		if c.VF == 0 {
			t.Errorf("in-use VF changed: %s", c)
		}
	}
	if len(res.Changes) != 2 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "pod ml/job-1") || !strings.Contains(res.Notes[0], "left as it is") {
		t.Fatalf("changes %q notes %q", changeStrings(res), res.Notes)
	}
}

func TestApplyRefusals(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ doc, want string }{
		"link layer": {"pfs:\n- pciAddress: \"0000:18:00.0\"\n  numVFs: 2\n  linkLayer: Ethernet\n", "link layer is InfiniBand, the policy wants Ethernet"},
		"too many":   {"pfs:\n- pciAddress: \"0000:18:00.0\"\n  numVFs: 17\n", "exceeds sriov_totalvfs 16"},
		"no SR-IOV":  {"pfs:\n- pciAddress: \"0000:19:00.0\"\n  numVFs: 1\n", "no SR-IOV"},
		"no PF":      {"pfs:\n- netdev: nosuch0\n  numVFs: 1\n", "nosuch0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			_, err := w.applier().Apply(context.Background(), policy(t, tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if len(w.calls) != 0 {
				t.Fatalf("calls %q", w.calls)
			}
		})
	}
}

// One PF named once by PCI address and once by netdev: with 3 VFs in one
// entry and 0 in the other every run created and destroyed the VFs. The
// entries are resolved first and the policy is refused, naming both,
// before anything changes.
func TestApplyRefusesAPolicyNamingOnePFTwice(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"pciAddress then netdev": "pfs:\n- pciAddress: \"0000:2a:00.0\"\n  numVFs: 3\n- netdev: ens42np0\n  numVFs: 0\n",
		"netdev then pciAddress": "pfs:\n- netdev: ens42np0\n  numVFs: 0\n- pciAddress: \"0000:2a:00.0\"\n  numVFs: 3\n",
		"beside another PF":      "pfs:\n- pciAddress: \"0000:18:00.0\"\n  numVFs: 1\n- pciAddress: \"0000:2a:00.0\"\n  numVFs: 3\n- netdev: ens42np0\n  numVFs: 0\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			before := w.snapshot()
			p := policy(t, doc)
			_, err := w.applier().Apply(context.Background(), p)
			if !errors.Is(err, v1alpha1.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			first, second := len(p.PFs)-2, len(p.PFs)-1
			for _, want := range []string{fmt.Sprintf("pfs[%d]", first), fmt.Sprintf("pfs[%d]", second), "ens42np0", "0000:2a:00.0"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if len(w.calls) != 0 {
				t.Fatalf("a refused policy made calls %q", w.calls)
			}
			if diff := cmp.Diff(before, w.snapshot()); diff != "" {
				t.Fatalf("the node changed (-want +got):\n%s", diff)
			}
		})
	}
}
