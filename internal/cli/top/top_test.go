package top

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// smallNode is the small node with one VF per PF, every RDMA device with
// mlx5's counters.
func smallNode(t *testing.T) (string, []rdmacounter.Device) {
	t.Helper()
	return countingNode(t, map[string]rdmacounter.Owner{
		"0000:18:00.1": {Namespace: "ml", Pod: "w0", Container: "c"},
		"0000:2a:00.1": {Namespace: "ml", Pod: "w0", Container: "c"},
	})
}

// countingNode generates the small node with one VF per PF, gives every
// RDMA device mlx5's counter files, and returns its devices held as owners
// says.
func countingNode(t *testing.T, owners map[string]rdmacounter.Owner) (string, []rdmacounter.Device) {
	t.Helper()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{VFsPerPF: 1}); err != nil {
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	devs := rdmacounter.Devices(topo, owners)
	for _, dev := range devs {
		if err := fakesysfs.WriteCounters(root, dev.RDMA, fakesysfs.MLX5); err != nil {
			t.Fatal(err)
		}
	}
	return root, devs
}

// Two readings a second apart around traffic on two VFs of one pod and
// errors on a PF: rates per port in bytes, sorted by traffic or errors,
// and per pod with --by-pod.
func TestFrame(t *testing.T) {
	t.Parallel()
	root, devs := smallNode(t)
	fs := sysfs.New(root)
	t0 := time.Unix(1000, 0)
	prev, cur := map[portKey]rdmacounter.Sample{}, map[portKey]rdmacounter.Sample{}
	read(fs, devs, prev, t0)
	for rdma, by := range map[string]map[string]uint64{
		"mlx5_3": {"counters/port_xmit_data": 1 << 20, "counters/port_rcv_data": 1 << 18},
		"mlx5_4": {"counters/port_xmit_data": 1 << 18},
		"mlx5_1": {"counters/symbol_error": 7, "hw_counters/out_of_buffer": 3},
		"mlx5_2": {"hw_counters/np_cnp_sent": 9},
	} {
		if err := fakesysfs.AdvanceCounters(root, rdma, 1, fakesysfs.MLX5, by); err != nil {
			t.Fatal(err)
		}
	}
	read(fs, devs, cur, t0.Add(time.Second))

	first := func(rows []row) []string {
		var out []string
		for _, r := range rows[:2] {
			out = append(out, r.dev)
		}
		return out
	}
	byTraffic := frame(devs, prev, cur, options{sortBy: "traffic"})
	if len(byTraffic) != 6 {
		t.Fatalf("%d rows for 6 ports", len(byTraffic))
	}
	if diff := cmp.Diff([]string{"mlx5_3", "mlx5_4"}, first(byTraffic)); diff != "" {
		t.Errorf("by traffic (-want +got):\n%s", diff)
	}
	if got := byTraffic[0].sum; got.TxBytes != 4<<20 || got.RxBytes != 4<<18 {
		t.Errorf("mlx5_3: %v B/s out, %v B/s in; want %d and %d (words x 4)", got.TxBytes, got.RxBytes, 4<<20, 4<<18)
	}
	if got := frame(devs, prev, cur, options{sortBy: "errors"}); got[0].dev != "mlx5_1" || got[0].sum.Errors != 10 {
		t.Errorf("by errors: first %s with %v/s, want mlx5_1 with 10/s", got[0].dev, got[0].sum.Errors)
	}
	if got := frame(devs, prev, cur, options{sortBy: "congestion"}); got[0].dev != "mlx5_2" {
		t.Errorf("by congestion: first %s, want mlx5_2", got[0].dev)
	}
	pods := frame(devs, prev, cur, options{sortBy: "traffic", byPod: true})
	if len(pods) != 5 || pods[0].pod != "ml/w0/c" || pods[0].dev != "mlx5_3,mlx5_4" || pods[0].sum.TxBytes != 4<<20+4<<18 {
		t.Errorf("by pod: %+v", pods[0])
	}

	var out bytes.Buffer
	if err := render(&out, byTraffic, "", nil, options{sortBy: "traffic", interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], "railyard top: 6 rows, every 1s, sorted by traffic") || !strings.Contains(lines[1], "DEVICE") {
		t.Errorf("header:\n%s", out.String())
	}
	if f := strings.Fields(lines[2]); len(f) < 12 || f[0] != "mlx5_3" || f[5] != "4.0MiB" || f[6] != "1.0MiB" || f[11] != "ml/w0/c" {
		t.Errorf("first row %q", lines[2])
	}
}

func TestBytesRateAndNum(t *testing.T) {
	t.Parallel()
	got := []string{bytesRate(0), bytesRate(1023), bytesRate(1536), bytesRate(5 << 30), num(3), num(2.25), num(1e18)}
	if diff := cmp.Diff([]string{"0B", "1023B", "1.5KiB", "5.0GiB", "3", "2.2", "1e+18"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The command on a generated tree, with the pods from a PodResources
// stand-in: one refresh, every port, the holder of the VF.
func TestCommandOnce(t *testing.T) {
	root, _ := smallNode(t)
	sock := filepath.Join(t.TempDir(), "kubelet.sock")
	srv := podrestest.Start(t, sock)
	srv.Set(podrestest.Pod("trainer-0", map[string][]string{"railyard.io/rdma": {"0000:18:00.1"}}))
	out, _, err := clitest.Run(t, NewCommand, "", "--sysfs", root, "--podresources", sock, "-n", "1", "--interval", "100ms")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "railyard top: 6 rows") || !strings.Contains(out, "default/trainer-0/main") || strings.Count(out, "\n") != 8 {
		t.Errorf("output:\n%s", out)
	}
	out, _, err = clitest.Run(t, NewCommand, "", "--sysfs", root, "--podresources", filepath.Join(t.TempDir(), "none.sock"), "-n", "1", "--interval", "100ms")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "pods unknown: PodResources:") {
		t.Errorf("without PodResources:\n%s", out)
	}
}

func TestCommandRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--interval", "1ms"}, {"-n", "-1"}, {"--sort", "speed"}} {
		if _, _, err := clitest.Run(t, NewCommand, "", args...); err == nil {
			t.Errorf("railyard top %v: no error", args)
		}
	}
}

// A rate top has no value for shows as "-", never as 0: a device without
// counter files (all its rates), a counter file that cannot be read (its
// rate; the port's others still count), and each unreadable file is said
// once under the header, though both readings failed on it.
func TestFrameShowsUnknownAsDash(t *testing.T) {
	t.Parallel()
	root, devs := smallNode(t)
	for _, dir := range []string{"counters", "hw_counters"} {
		if err := os.RemoveAll(filepath.Join(root, "class/infiniband/mlx5_2/ports/1", dir)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "class/infiniband/mlx5_1/ports/1/counters/port_rcv_data"), []byte("N/A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := sysfs.New(root)
	t0 := time.Unix(1000, 0)
	prev, cur := map[portKey]rdmacounter.Sample{}, map[portKey]rdmacounter.Sample{}
	before := read(fs, devs, prev, t0)
	if err := fakesysfs.AdvanceCounters(root, "mlx5_1", 1, fakesysfs.MLX5, map[string]uint64{"counters/port_xmit_data": 1 << 10}); err != nil {
		t.Fatal(err)
	}
	now := read(fs, devs, cur, t0.Add(time.Second))
	rows := frame(devs, prev, cur, options{sortBy: "traffic"})
	got := map[string]rowCells{}
	for _, r := range rows {
		got[r.dev] = cells(r.sum)
	}
	want := map[string]rowCells{
		"mlx5_1": {tx: "4.0KiB", rx: "-", txp: "0", rxp: "0", errs: "0", cong: "0"},
		"mlx5_2": {tx: "-", rx: "-", txp: "-", rxp: "-", errs: "-", cong: "-"},
	}
	for dev := range got {
		if _, ok := want[dev]; !ok {
			delete(got, dev)
		}
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(rowCells{})); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	if err := render(&out, rows, "", unreadableNotes(before, now), options{sortBy: "traffic", interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if n := strings.Count(out.String(), "unreadable (shown as -): mlx5_1 port 1: "); n != 1 || !strings.Contains(out.String(), "port_rcv_data") {
		t.Errorf("the unreadable counter said %d times, want once:\n%s", n, out.String())
	}
}
