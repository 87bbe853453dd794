//go:build e2e

package multinode

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/helmchart"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// The firmware policy of every DRA release the tests install.
const draFirmwareModel, draFirmwareMinimum = "15b3:1021", "28.39.1002"

// installDRAChart applies the chart (release railyard-dra in draNS) with
// up.sh's rail pools, each delivered by DRA and changed by edit (nil
// drops the pool), through applyDRARelease.
func installDRAChart(ctx context.Context, t *testing.T, c *framework.MultiCluster, edit func(pool map[string]any) map[string]any) {
	t.Helper()
	ch, vals := clusterChart(t, c)
	cfg := vals["config"].(map[string]any)
	var pools []any
	for _, p := range cfg["pools"].([]any) {
		pool := p.(map[string]any)
		pool["delivery"] = "dra"
		if pool = edit(pool); pool != nil {
			pools = append(pools, pool)
		}
	}
	cfg["pools"] = pools
	// The generated trees' ConnectX-7 cards run 28.39.1002: accepted,
	// until testUnhealthyNIC rewrites one card's fw_ver to an older one.
	cfg["firmware"] = map[string]any{"minimum": map[string]any{draFirmwareModel: draFirmwareMinimum}}
	agent, _ := vals["agent"].(map[string]any)
	if agent == nil {
		agent = map[string]any{}
	}
	agent["logLevel"] = "debug" // what logAgent shows when a test fails
	vals["agent"] = agent
	applyDRARelease(ctx, t, c, ch, vals, "railyard-dra", draNS)
}

// applyDRARelease renders chart ch with vals as release in ns, every
// pool of vals delivered by DRA (CDI specs in the cluster's CDI
// directory), applies it, and deletes it when the test ends, with its
// driver's ResourceSlices: the agents are gone then, their slices are not
// (kubelet wipes a driver's slices only a while after it unregisters),
// and the next test would read this release's devices as its own. It
// returns once every GPU node's agent published a slice of every pool.
func applyDRARelease(ctx context.Context, t *testing.T, c *framework.MultiCluster, ch *chart.Chart, vals map[string]any, release, ns string) {
	t.Helper()
	cfg := vals["config"].(map[string]any)
	var names []string
	for _, p := range cfg["pools"].([]any) {
		pool := p.(map[string]any)
		pool["delivery"] = "dra"
		names = append(names, pool["name"].(string))
	}
	cfg["cdiSpecDir"] = c.Info.CDIDir
	ms, err := helmchart.Render(ch, helmchart.Options{Release: release, Namespace: ns, Values: vals})
	if err != nil {
		t.Fatal(err)
	}
	stream := helmchart.Stream(ms)
	if out, err := kubectl(ctx, c, stream, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		deleteRelease(ctx, t, c, stream, ns)
		if err := c.Client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + dra.DriverName}); err != nil {
			t.Errorf("deleting the release's ResourceSlices: %v", err)
		}
	})
	want := len(c.Info.GPUNodes()) * len(names)
	poll(ctx, t, fmt.Sprintf("a slice of pools %v from every GPU node", names), func(ctx context.Context) (bool, string) {
		list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + dra.DriverName})
		if err != nil {
			return false, err.Error()
		}
		seen := map[string]bool{}
		for _, s := range list.Items {
			seen[s.Spec.Pool.Name] = true
		}
		return len(seen) >= want, fmt.Sprintf("%d of %d pools: %v", len(seen), want, slices.Sorted(maps.Keys(seen)))
	})
}

// onlyPool is an installDRAChart edit keeping the pool named name as it is
// and dropping the others.
func onlyPool(name string) func(map[string]any) map[string]any {
	return func(p map[string]any) map[string]any {
		if p["name"] != name {
			return nil
		}
		return p
	}
}

// poolDevices lists the devices of DRA pool <node>/<name> in the slices.
func poolDevices(ctx context.Context, t *testing.T, c *framework.MultiCluster, pool string) []resourceapi.Device {
	t.Helper()
	list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + dra.DriverName})
	if err != nil {
		t.Fatal(err)
	}
	var out []resourceapi.Device
	for _, s := range list.Items {
		if s.Spec.Pool.Name == pool {
			out = append(out, s.Spec.Devices...)
		}
	}
	return out
}

// claimTemplate creates a ResourceClaimTemplate in default of one device
// of class, deleted when the test ends.
func claimTemplate(ctx context.Context, t *testing.T, c *framework.MultiCluster, name, class string) {
	t.Helper()
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "nic", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class}}}}}}}
	if _, err := c.Client.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.ResourceV1().ResourceClaimTemplates("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// podClaim is the allocated claim of a running claimPod.
func podClaim(ctx context.Context, t *testing.T, c *framework.MultiCluster, p *corev1.Pod) *resourceapi.ResourceClaim {
	t.Helper()
	if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("pod %s: claim statuses %+v", p.Name, p.Status.ResourceClaimStatuses)
	}
	claim, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 {
		t.Fatalf("pod %s: claim %s allocation %+v", p.Name, claim.Name, claim.Status.Allocation)
	}
	return claim
}

// TestDRASharedNICAcrossNodes: the chart with rail 0's pool made shared
// (sharedLimit 2) and delivered by DRA. On 1.37 (consumable capacity on)
// each GPU node's rail-0 NIC is one device allocatable to many claims
// with railyard.io/shares 2: two pods on gpu-1 hold shares of the same
// NIC (two share IDs), each with a macvlan on it from railyard-cni, and
// reach a third pod on gpu-2 over the rail's leaf, and each other; a
// third pod on gpu-1 waits for a share until one of the two goes. On 1.35
// the API server drops allowMultipleAllocations, and the agent publishes
// the pool without devices, as docs/dra.md says.
func TestDRASharedNICAcrossNodes(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 6*time.Minute)
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 {
		t.Skip("needs two GPU nodes")
	}
	const rail = 0
	name := string(railPool(rail))
	installDRAChart(ctx, t, c, func(p map[string]any) map[string]any {
		if p["name"] != name {
			return nil
		}
		p["deviceKind"], p["sharedLimit"] = "shared", 2
		return p
	})
	pool, err := dra.PoolName(gpus[0].Name, name)
	if err != nil {
		t.Fatal(err)
	}
	if minorOf(release) < minorOf("1.37") {
		poll(ctx, t, "pool "+pool+" published without devices (consumable capacity off)", func(ctx context.Context) (bool, string) {
			devs := poolDevices(ctx, t, c, pool)
			return len(devs) == 0, fmt.Sprintf("%d devices", len(devs))
		})
		t.Logf("Kubernetes %s: the shared pool %s is published without devices (the API server drops allowMultipleAllocations)", release, pool)
		return
	}
	poll(ctx, t, "pool "+pool+" with one NIC allocatable many times, 2 shares", func(ctx context.Context) (bool, string) {
		devs := poolDevices(ctx, t, c, pool)
		ok := len(devs) == 1 && devs[0].AllowMultipleAllocations != nil && *devs[0].AllowMultipleAllocations && sharesOf(devs[0]) == 2
		return ok, fmt.Sprintf("%d devices: %+v", len(devs), devs)
	})
	claimTemplate(ctx, t, c, "share", dra.PoolDeviceClass(name).Name)
	addRailNetworks(t, c, true, rail)
	// A shared NIC stays the host's, up as the host keeps it (a real
	// node's PF is; this cluster's rail veths are down until a pod
	// takes them): the pods' macvlans on it need it up.
	for _, n := range gpus {
		setLink(t, n, n.Rails[rail], "up")
		t.Cleanup(func() { setLink(t, n, n.Rails[rail], "down") })
	}

	type started struct {
		pod   *corev1.Pod
		claim *resourceapi.ResourceClaim
		ip    string
	}
	run := map[string]started{}
	for _, p := range []struct{ name, node string }{{"share-a", gpus[0].Name}, {"share-b", gpus[0].Name}, {"share-c", gpus[1].Name}} {
		start := time.Now()
		pod := runPod(ctx, t, c, claimPod(p.name, p.node, "share"))
		cl := podClaim(ctx, t, c, pod)
		run[p.name] = started{pod, cl, railAddress(ctx, t, c, p.name, rail)}
		r := cl.Status.Allocation.Devices.Results[0]
		t.Logf("pod %s on %s: %s/%s share %v, %v shares, rail address %s; Running %v after it was created",
			p.name, p.node, r.Pool, r.Device, ptrString(r.ShareID), consumed(r), run[p.name].ip, time.Since(start).Round(time.Millisecond))
	}
	a, b := run["share-a"].claim.Status.Allocation.Devices.Results[0], run["share-b"].claim.Status.Allocation.Devices.Results[0]
	if a.Pool != b.Pool || a.Device != b.Device || a.ShareID == nil || b.ShareID == nil || *a.ShareID == *b.ShareID {
		t.Errorf("share-a got %s/%s share %v, share-b %s/%s share %v: want two shares of one NIC", a.Pool, a.Device, ptrString(a.ShareID), b.Pool, b.Device, ptrString(b.ShareID))
	}
	for _, pair := range [][2]string{{"share-a", "share-c"}, {"share-a", "share-b"}} {
		from, to := pair[0], run[pair[1]].ip
		if out, err := c.Exec(ctx, "default", from, "main", "ping", "-c", "3", "-W", "2", to); err != nil {
			t.Errorf("%s pinging %s (%s) over rail %d: %v\n%s", from, pair[1], to, rail, err, out)
		}
	}
	// The claim's status: the macvlan railyard-cni gave the share.
	poll(ctx, t, "share-a's claim status with its macvlan", func(ctx context.Context) (bool, string) {
		cl, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, run["share-a"].claim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, s := range cl.Status.Devices {
			if s.ShareID != nil && a.ShareID != nil && *s.ShareID == string(*a.ShareID) && s.NetworkData != nil &&
				slices.ContainsFunc(s.NetworkData.IPs, func(ip string) bool { return strings.HasPrefix(ip, run["share-a"].ip+"/") }) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", cl.Status.Devices)
	})

	// A third pod on gpu-1: no share left there until share-b goes.
	if _, err := c.CreatePod(ctx, claimPod("share-d", gpus[0].Name, "share")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", "share-d") })
	ev, err := c.WaitForEvent(ctx, "default", "share-d", "FailedScheduling")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("share-d not placed while both shares are held: %s", ev.Message)
	if err := c.DeletePod(ctx, "default", "share-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForPodPhase(ctx, "default", "share-d", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	t.Logf("share-d runs once share-b went")
}

// consumed is the shares an allocation consumes.
func consumed(r resourceapi.DeviceRequestAllocationResult) string {
	q := r.ConsumedCapacity[dra.CapacityShares]
	return q.String()
}

// sharesOf is a shared NIC's railyard.io/shares capacity.
func sharesOf(d resourceapi.Device) int64 {
	q := d.Capacity[dra.CapacityShares].Value
	return q.Value()
}

func ptrString[T ~string](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return string(*p)
}

// startToRunning creates pod and returns how long it took to be Running,
// read every 20 ms.
func startToRunning(ctx context.Context, t *testing.T, c *framework.MultiCluster, pod *corev1.Pod) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), pod.Namespace, pod.Name) })
	for {
		p, err := c.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			t.Fatal(err)
		case p.Status.Phase == corev1.PodRunning:
			return time.Since(start)
		case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			t.Fatalf("pod %s: %s", pod.Name, p.Status.Phase)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s not Running: %v", pod.Name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// quantiles renders p50, p90 and max of ds.
func quantiles(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[int(math.Ceil(q*float64(len(s))))-1] }
	return fmt.Sprintf("p50 %v, p90 %v, max %v (n=%d)", at(0.5).Round(time.Millisecond), at(0.9).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}

// draBucket is a bucket line of prepare's histogram (labels sorted, le
// last, as client_golang writes them).
var draBucket = regexp.MustCompile(`railyard_dra_duration_seconds_bucket\{method="prepare",result="ok",le="([^"]+)"\} (\d+)`)

// prepareLatency reads the agent's railyard_dra_duration_seconds for
// prepare: the mean (sum/count) and the buckets p50 and p90 fall in.
func prepareLatency(text string) (string, error) {
	var sum, count float64
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case `railyard_dra_duration_seconds_sum{method="prepare",result="ok"}`:
			sum, _ = strconv.ParseFloat(f[1], 64)
		case `railyard_dra_duration_seconds_count{method="prepare",result="ok"}`:
			count, _ = strconv.ParseFloat(f[1], 64)
		}
	}
	if count == 0 {
		return "", fmt.Errorf("no prepare in the agent's railyard_dra_duration_seconds:\n%s", text)
	}
	bound := func(q float64) string {
		for _, m := range draBucket.FindAllStringSubmatch(text, -1) {
			if n, _ := strconv.ParseFloat(m[2], 64); n >= q*count {
				le, _ := strconv.ParseFloat(m[1], 64)
				return "≤ " + time.Duration(le*float64(time.Second)).String()
			}
		}
		return "?"
	}
	return fmt.Sprintf("mean %v, p50 %s, p90 %s (n=%d)", time.Duration(sum/count*float64(time.Second)).Round(10*time.Microsecond), bound(0.5), bound(0.9), int(count)), nil
}

// TestDRAPodStartWithAClaim measures, on this run's release, how long a
// pod with a claim of one NIC takes from creation to Running on gpu-1
// beside the same pod without a claim (alternating, one at a time, each
// deleted before the next), and the agent's Prepare latency
// (railyard_dra_duration_seconds). No network is attached: this is the
// DRA path (scheduling the claim, kubelet's Prepare, CDI), not the CNI's.
func TestDRAPodStartWithAClaim(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 6*time.Minute)
	gpus := c.Info.GPUNodes()
	name := string(railPool(0))
	installDRAChart(ctx, t, c, onlyPool(name))
	claimTemplate(ctx, t, c, "one-nic", dra.PoolDeviceClass(name).Name)
	const n = 10
	var with, without []time.Duration
	for i := range n {
		for _, claimed := range []bool{true, false} {
			pod := framework.BusyboxPod("default", fmt.Sprintf("plain-%d", i), "sleep", "3600")
			pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": gpus[0].Name}
			if claimed {
				pod = claimPod(fmt.Sprintf("claimed-%d", i), gpus[0].Name, "one-nic")
			}
			d := startToRunning(ctx, t, c, pod)
			if claimed {
				with = append(with, d)
			} else {
				without = append(without, d)
			}
			if err := c.DeletePod(ctx, "default", pod.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	text, err := agentMetrics(ctx, c, draNS, gpus[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	prep, err := prepareLatency(text)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("BENCH Kubernetes %s: pod create to Running with a claim of one NIC: %s; without a claim: %s; the agent's Prepare: %s",
		release, quantiles(with), quantiles(without), prep)
}
