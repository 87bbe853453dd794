package benchverify

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/fabric"
)

// twoNodeDRAJob is the job of roce_2host_gdrdma_nccl2.21.txt (hosts
// node-a and node-b, each NCCL using mlx5_0 and mlx5_1): one pod per
// node, each with a claim of its node's two NICs on the rails given and
// two GPUs, each NIC of the class given to its GPU.
func twoNodeDRAJob(t *testing.T, railsB [2]int64, class string) *fakeCluster {
	t.Helper()
	logs := byHost(ncclLog(t, "roce_2host_gdrdma_nccl2.21.txt"), "node-a")
	var objs []runtime.Object
	for _, node := range []string{"node-a", "node-b"} {
		rails := [2]int64{0, 1}
		if node == "node-b" {
			rails = railsB
		}
		gpus := []gpu{{"gpu-0", "0000:1b:00.0"}, {"gpu-1", "0000:43:00.0"}}
		nics := []nic{
			{"0000:18:00.0", "mlx5_0", rails[0], map[string]string{"0000:1b:00.0": class, "0000:43:00.0": "SYS"}},
			{"0000:40:00.0", "mlx5_1", rails[1], map[string]string{"0000:1b:00.0": "SYS", "0000:43:00.0": class}},
		}
		objs = append(objs, nodeSlices(t, node, nics, gpus)...)
		objs = append(objs, allocatedClaim(t, node+"-rails", node, nics, gpus), jobPod(node, node, node+"-rails"))
	}
	return newFakeCluster(t, logs, objs...)
}

// A clean RoCE job on DRA rails: RDMA on both hosts, GDRDMA on every
// inter-node channel, each NIC PIX to a GPU of its pod, both pods on
// rails 0,1, NCCL on exactly the pod's HCAs: every check passes.
func TestCleanDRAJobPassesEveryCheck(t *testing.T) {
	t.Parallel()
	c := twoNodeDRAJob(t, [2]int64{0, 1}, "PIX")
	rep, err := Verify(context.Background(), c, Options{Namespace: ns, Selector: selector})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bench.Status{
		CheckLogs: bench.StatusPass, bench.CheckNCCLNetwork: bench.StatusPass, bench.CheckNCCLGDR: bench.StatusPass,
		bench.CheckNCCLHosts: bench.StatusPass, CheckDevices: bench.StatusPass, CheckNear: bench.StatusPass,
		CheckRails: bench.StatusPass, CheckHCAs: bench.StatusPass,
	}
	if diff := cmp.Diff(want, statuses(rep)); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s\n%+v", diff, rep.Verdicts)
	}
	if rep.Status() != 0 {
		t.Errorf("status %d, want 0", rep.Status())
	}
	p := rep.Pods[1]
	if p.Name != "node-b" || len(p.NICs) != 2 || p.NICs[0].RDMA != "mlx5_0" || p.NICs[0].Class != "PIX" || p.NICs[0].NearGPU != "0000:1b:00.0" ||
		p.NICs[1].Interface != "net2" || *p.NICs[1].Rail != 1 || p.NICs[1].Leaf != "leaf-1" || len(p.GPUs) != 2 || !cmp.Equal(p.Hosts, []string{"node-b"}) {
		t.Errorf("pod node-b: %+v", p)
	}
	if !strings.Contains(reason(rep, CheckRails), "2 pods on rails 0,1") {
		t.Errorf("rails: %s", reason(rep, CheckRails))
	}
}

// Two pods of one job on different rails (the dynamo#13596 case) fail
// job-rails, naming each pod's rails.
func TestPodsOnDifferentRailsFail(t *testing.T) {
	t.Parallel()
	c := twoNodeDRAJob(t, [2]int64{2, 3}, "PIX")
	rep, err := Verify(context.Background(), c, Options{Namespace: ns, Selector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(rep)[CheckRails]; got != bench.StatusFail {
		t.Errorf("job-rails %s, want fail", got)
	}
	if r := reason(rep, CheckRails); !strings.Contains(r, "rails 0,1: node-a") || !strings.Contains(r, "rails 2,3: node-b") {
		t.Errorf("reason: %s", r)
	}
	if rep.Status() != 2 {
		t.Errorf("status %d, want 2", rep.Status())
	}
}

// A pod whose NICs are across the host bridge from its GPUs fails
// job-near, even though NCCL's lines look clean.
func TestFarNICsFail(t *testing.T) {
	t.Parallel()
	c := twoNodeDRAJob(t, [2]int64{0, 1}, "PHB")
	rep, err := Verify(context.Background(), c, Options{Namespace: ns, Selector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(rep)[CheckNear]; got != bench.StatusFail {
		t.Errorf("job-near %s, want fail: %s", got, reason(rep, CheckNear))
	}
	if r := reason(rep, CheckNear); !strings.Contains(r, "node-a mlx5_0 is PHB from its nearest GPU 0000:1b:00.0") ||
		!strings.Contains(r, "GPU 0000:43:00.0 has no NIC nearer than PHB") {
		t.Errorf("reason: %s", r)
	}
}

// NCCL says GPUDirect RDMA is off for mlx5_5; the pods' claims put a GPU
// PIX to it: nccl-gdr fails (from the log alone it is only a warning,
// nothing saying a GPU is near).
func TestGDRDisabledOnANearHCAFails(t *testing.T) {
	t.Parallel()
	logs := byHost(ncclLog(t, "gdr_disabled_hca5_nccl2.18.txt"), "gdr-a")
	var objs []runtime.Object
	for _, node := range []string{"gdr-a", "gdr-b"} {
		var nics []nic
		for i := range int64(6) {
			nics = append(nics, nic{"0000:1" + itoa(i) + ":00.0", "mlx5_" + itoa(i), i, map[string]string{"0000:2" + itoa(i) + ":00.0": "PIX"}})
		}
		gpus := []gpu{{"gpu-5", "0000:25:00.0"}}
		objs = append(objs, nodeSlices(t, node, nics, gpus)...)
		objs = append(objs, allocatedClaim(t, node+"-c", node, nics, gpus), jobPod(node, node, node+"-c"))
	}
	rep, err := Verify(context.Background(), newFakeCluster(t, logs, objs...), Options{Namespace: ns, Selector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(rep)[bench.CheckNCCLGDR]; got != bench.StatusFail {
		t.Errorf("nccl-gdr %s, want fail: %s", got, reason(rep, bench.CheckNCCLGDR))
	}
	// Without the devices the same log is a warning (bench parse's
	// verdict): the nearness came from the claims.
	r := bench.ParseNCCLDebug(ncclLog(t, "gdr_disabled_hca5_nccl2.18.txt"))
	for _, v := range bench.NCCLTransportVerdicts(bench.JudgeInput{}, bench.Labelled{Result: r}) {
		if v.Check == bench.CheckNCCLGDR && v.Status == bench.StatusFail {
			t.Errorf("the log alone already fails nccl-gdr: the test proves nothing: %s", v.Reason)
		}
	}
}

// Pods with Railyard devices through Multus (device-info in the
// network-status annotation; rails from the nodes' fabric ports) whose
// NCCL fell back to TCP sockets fail nccl-network: they hold RDMA
// devices, so RDMA is expected without a profile.
func TestSocketFallbackOfPodsWithMultusDevicesFails(t *testing.T) {
	t.Parallel()
	logs := byHost(ncclLog(t, "socket_fallback_no_ib_device_nccl2.19.txt"), "pod-0")
	status := `[{"name":"cbr0","interface":"eth0","ips":["10.244.1.5"],"default":true},
	 {"name":"ml/rail2","interface":"net1","ips":["192.168.2.10"],"device-info":{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:a0:00.0","rdma-device":"mlx5_2"}}}]`
	var objs []runtime.Object
	for i, name := range []string{"pod-0", "pod-1"} {
		node := "n" + itoa(int64(i))
		p := jobPod(name, node)
		p.Annotations = map[string]string{NetworkStatusAnnotation: status}
		objs = append(objs, p, fabricNode(t, node, []fabric.Port{{Rail: 2, NIC: "mlx5_2"}, {Rail: 3, NIC: "mlx5_3"}}))
	}
	rep, err := Verify(context.Background(), newFakeCluster(t, logs, objs...), Options{Namespace: ns, Selector: selector})
	if err != nil {
		t.Fatal(err)
	}
	st := statuses(rep)
	if st[bench.CheckNCCLNetwork] != bench.StatusFail || st[CheckDevices] != bench.StatusPass || st[CheckRails] != bench.StatusPass {
		t.Errorf("verdicts %v, want nccl-network fail, job-devices and job-rails pass:\n%+v", st, rep.Verdicts)
	}
	if r := reason(rep, bench.CheckNCCLNetwork); !strings.Contains(r, "No device found") && !strings.Contains(r, "no usable IB device") {
		t.Errorf("nccl-network does not say what to check first: %s", r)
	}
	if n := rep.Pods[0].NICs; len(n) != 1 || n[0].RDMA != "mlx5_2" || n[0].Rail == nil || *n[0].Rail != 2 || n[0].Interface != "net1" {
		t.Errorf("pod-0's NICs: %+v", n)
	}
	if rep.Status() != 2 {
		t.Errorf("status %d, want 2", rep.Status())
	}
}

// One pod without any device beside pods with some fails job-devices;
// NCCL on a pod using an HCA it was not given is a job-hcas warning.
func TestPodWithoutDevicesAndOddHCAs(t *testing.T) {
	t.Parallel()
	c := twoNodeDRAJob(t, [2]int64{0, 1}, "PIX")
	p := jobPod("node-c", "node-c")
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metavOpts()); err != nil {
		t.Fatal(err)
	}
	// node-a's claim gives only mlx5_0: NCCL's mlx5_1 is not the pod's.
	cl, err := c.ResourceV1().ResourceClaims(ns).Get(context.Background(), "node-a-rails", metavGet())
	if err != nil {
		t.Fatal(err)
	}
	cl.Status.Allocation.Devices.Results = cl.Status.Allocation.Devices.Results[:1]
	if _, err := c.ResourceV1().ResourceClaims(ns).Update(context.Background(), cl, metavUpdate()); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), c, Options{Namespace: ns, Selector: selector})
	if err != nil {
		t.Fatal(err)
	}
	st := statuses(rep)
	if st[CheckDevices] != bench.StatusFail || !strings.Contains(reason(rep, CheckDevices), "node-c") {
		t.Errorf("job-devices %s: %s", st[CheckDevices], reason(rep, CheckDevices))
	}
	if st[CheckHCAs] != bench.StatusWarn || !strings.Contains(reason(rep, CheckHCAs), "node-a: NCCL used mlx5_1, not given to the pod") {
		t.Errorf("job-hcas %s: %s", st[CheckHCAs], reason(rep, CheckHCAs))
	}
}

// Logs without NCCL INFO lines prove nothing: job-logs warns (exit 1),
// and no NCCL verdict is made up.
func TestNoNCCLLinesWarns(t *testing.T) {
	t.Parallel()
	c := twoNodeDRAJob(t, [2]int64{0, 1}, "PIX")
	c.logs = map[string][]byte{"node-a": []byte("epoch 1 loss 0.3\n"), "node-b": []byte("epoch 1 loss 0.3\n")}
	rep, err := Verify(context.Background(), c, Options{Namespace: ns, Selector: selector})
	if err != nil {
		t.Fatal(err)
	}
	st := statuses(rep)
	if st[CheckLogs] != bench.StatusWarn || st[bench.CheckNCCLNetwork] != "" || rep.NCCL != nil {
		t.Errorf("verdicts %v, NCCL %+v", st, rep.NCCL)
	}
	if rep.Status() != 1 {
		t.Errorf("status %d, want 1", rep.Status())
	}
}

// Each log is read from its start, at most LogBytes: the request asks the
// API server for LogBytes+1 (to tell a cut log), the line cut in two is
// dropped, and a server that ignores the limit still gives no more.
func TestLogReadsAreBounded(t *testing.T) {
	t.Parallel()
	for _, ignore := range []bool{false, true} {
		c := twoNodeDRAJob(t, [2]int64{0, 1}, "PIX")
		c.ignoreLimit = ignore
		long := append([]byte(nil), c.logs["node-a"]...)
		for len(long) < 1<<20 {
			long = append(long, "node-a:2101:2101 [0] NCCL INFO Connected all rings\n"...)
		}
		c.logs["node-a"] = long
		const limit = 4096
		rep, err := Verify(context.Background(), c, Options{Namespace: ns, Selector: selector, LogBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		l := rep.Pods[0].Logs[0]
		if !l.Truncated || l.Bytes != limit {
			t.Errorf("ignoreLimit %v: node-a's log %+v, want %d bytes, truncated", ignore, l, limit)
		}
		for _, got := range c.limits {
			if got != limit+1 {
				t.Errorf("a log request asked for %d bytes, want %d", got, limit+1)
			}
		}
		if !strings.Contains(reason(rep, CheckLogs), "only their head judged: node-a/worker") {
			t.Errorf("job-logs: %s", reason(rep, CheckLogs))
		}
		if rep.NCCL == nil || len(rep.NCCL.Hosts) != 2 {
			t.Errorf("the head of the log lost its NCCL lines: %+v", rep.NCCL)
		}
	}
}

// Errors: no pod matched, a bad selector or profile, a log that cannot be
// read (the pod is reported, not dropped), a claim that is gone.
func TestErrorsAreClear(t *testing.T) {
	t.Parallel()
	c := twoNodeDRAJob(t, [2]int64{0, 1}, "PIX")
	if _, err := Verify(context.Background(), c, Options{Namespace: "other", Selector: selector}); !errors.Is(err, ErrNoPods) ||
		!strings.Contains(err.Error(), "namespace other, selector job-name=train") {
		t.Errorf("no pods: %v", err)
	}
	for _, o := range []Options{{Selector: ""}, {Selector: "a b c"}, {Selector: selector, Profile: "nope"}, {Selector: selector, LogBytes: MaxLogBytes + 1}} {
		if _, err := Verify(context.Background(), c, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	c.logErr["node-b"] = errors.New("container \"worker\" in pod \"node-b\" is waiting to start")
	if err := c.ResourceV1().ResourceClaims(ns).Delete(context.Background(), "node-a-rails", metavDelete()); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), c, Options{Namespace: ns, Selector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Pods) != 2 || !strings.Contains(rep.Pods[1].Logs[0].Error, "waiting to start") {
		t.Errorf("pods %+v", rep.Pods)
	}
	if st := statuses(rep)[CheckLogs]; st != bench.StatusWarn || !strings.Contains(reason(rep, CheckLogs), "node-b/worker") {
		t.Errorf("job-logs %s: %s", st, reason(rep, CheckLogs))
	}
	if n := strings.Join(rep.Pods[0].Notes, ";"); !strings.Contains(n, "claim node-a-rails") || !strings.Contains(n, "not found") {
		t.Errorf("node-a's notes: %q", n)
	}
	var cancelled context.Context
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Verify(cancelled, c, Options{Namespace: ns, Selector: selector}); err == nil {
		t.Error("cancelled: no error")
	}
}

// MaxPods cuts a large job, and says so.
func TestMaxPods(t *testing.T) {
	t.Parallel()
	c := twoNodeDRAJob(t, [2]int64{0, 1}, "PIX")
	rep, err := Verify(context.Background(), c, Options{Namespace: ns, Selector: selector, MaxPods: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Pods) != 1 || rep.MorePods != 1 || !strings.Contains(reason(rep, CheckLogs), "1 more pods match and were not read") {
		t.Errorf("pods %d, more %d: %s", len(rep.Pods), rep.MorePods, reason(rep, CheckLogs))
	}
}
