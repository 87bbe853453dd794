//go:build e2e

package multinode

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/nodefabric"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

const draNS = "railyard-dra"

// TestDRAJobOnOneRailSetAcrossNodesStandInGPUDRA: the chart with a DRA pool of every
// rail's PF runs its agent on every GPU node through the real DaemonSet
// controller; each agent's DRA plugin, reaching the apiserver through the
// `kubernetes` Service with its pod's own token, publishes its node's NICs
// with their rails. A STAND-IN GPU DRA driver (up.sh --gpu-dra: a
// process of its own on each GPU node) publishes the GPUs. `railyard rails template`
// reads the slices and writes the job's ResourceClaimTemplate; the real
// resourceclaim controller makes each pod's claim from it, the real
// scheduler allocates GPU and NIC on one PCIe root on each node, both
// nodes' kubelets have both drivers prepare, and each container gets its
// NIC (NCCL_IB_HCA) and GPU. Both pods are on the same rail: the leaf
// their peers are cabled to.
func TestDRAJobOnOneRailSetAcrossNodesStandInGPUDRA(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 8*time.Minute)
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 {
		t.Skip("needs two GPU nodes")
	}
	bin := railyardBin(t)

	// The chart: up.sh's values, each rail's pool delivered by DRA.
	start := time.Now()
	installDRAChart(ctx, t, c, func(p map[string]any) map[string]any { return p })

	// The stand-in GPU driver: up.sh --gpu-dra runs one per GPU node.
	if !c.Info.GPUDRA {
		t.Fatal("the cluster runs no stand-in GPU DRA driver (up.sh --gpu-dra)")
	}
	nics := map[string]int{}
	topos := map[string]*topology.Topology{}
	for _, n := range gpus {
		topo, err := discovery.Discover(ctx, filepath.Join(n.Dir, "machine", "sysfs"))
		if err != nil {
			t.Fatal(err)
		}
		topos[n.Name] = topo
		nics[n.Name] = len(n.Rails)
	}

	// Every GPU node's NICs published by its own agent, with their rails.
	poll(ctx, t, "every GPU node's NICs in rdma.railyard.io slices", func(ctx context.Context) (bool, string) {
		list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + dra.DriverName})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]int{}
		for _, s := range list.Items {
			if s.Spec.NodeName == nil {
				continue
			}
			for _, d := range s.Spec.Devices {
				if _, ok := d.Attributes[dra.AttrRail]; ok {
					got[*s.Spec.NodeName]++
				}
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(nics), fmt.Sprintf("NICs with a rail by node %v, want %v", got, nics)
	})
	t.Logf("chart applied to every GPU node's NICs in ResourceSlices: %v", time.Since(start).Round(time.Millisecond))

	// Each NIC's leaf switch, from its Node's railyard.io/fabric-ports:
	// written here by `railyard fabric publish`'s own publisher with the
	// leaves as cabled (what LLDP gives it is proven with real lldpd in
	// TestFabricLLDPFindsASwappedCable), watched by each agent
	// through the apiserver with its own token and the chart's RBAC, and
	// published as railyard.io/leaf on the NIC.
	start = time.Now()
	publishFabricPorts(ctx, t, c, topos)
	poll(ctx, t, "every NIC's leaf in its slice", func(ctx context.Context) (bool, string) {
		list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + dra.DriverName})
		if err != nil {
			return false, err.Error()
		}
		got, wrong := map[string]int{}, []string{}
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				rail, ok := d.Attributes[dra.AttrRail]
				if !ok || s.Spec.NodeName == nil {
					continue
				}
				r := *rail.IntValue
				if r < 0 || r >= int64(len(c.Info.Rails)) {
					wrong = append(wrong, fmt.Sprintf("%s/%s: rail %d, the fabric has %d", *s.Spec.NodeName, d.Name, r, len(c.Info.Rails)))
					continue
				}
				want := c.Info.Rails[r].Leaf
				switch leaf, ok := d.Attributes[dra.AttrLeaf]; {
				case !ok:
				case *leaf.StringValue == want:
					got[*s.Spec.NodeName]++
				default:
					wrong = append(wrong, fmt.Sprintf("%s/%s on rail %d: leaf %s, want %s", *s.Spec.NodeName, d.Name, *rail.IntValue, *leaf.StringValue, want))
				}
			}
		}
		return len(wrong) == 0 && fmt.Sprint(got) == fmt.Sprint(nics), fmt.Sprintf("NICs with their rail's leaf by node %v, want %v; wrong: %v", got, nics, wrong)
	})
	t.Logf("every NIC's leaf published %v after its Node's fabric ports were", time.Since(start).Round(time.Millisecond))

	// The job's template, from the cluster's slices.
	cmd := exec.CommandContext(ctx, bin, "rails", "template", "job", "--pods", "2", "--gpus", "1", "--kubeconfig", c.Kubeconfig)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	tmpl, err := cmd.Output()
	if err != nil {
		t.Fatalf("railyard rails template: %v\n%s", err, stderr.String())
	}
	t.Logf("railyard rails template: %s", strings.TrimSpace(stderr.String()))
	if out, err := kubectl(ctx, c, string(tmpl), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply the template: %v\n%s\n%s", err, out, tmpl)
	}
	t.Cleanup(func() {
		_ = c.Client.ResourceV1().ResourceClaimTemplates("default").Delete(context.Background(), "job", metav1.DeleteOptions{})
	})

	// Every rail's network on every GPU node: railyard-cni attaches the
	// NIC a pod's claim holds, from the agent's view.
	all := make([]int, len(c.Info.Rails))
	for r := range all {
		all[r] = r
	}
	addRailNetworks(t, c, true, all...)

	// Two pods of the job, one per GPU node.
	for i, n := range gpus[:2] {
		name := "job-" + strconv.Itoa(i)
		if _, err := c.CreatePod(ctx, claimPod(name, n.Name, "job")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", name) })
	}
	rails := map[string]int64{}
	for i, n := range gpus[:2] {
		name := "job-" + strconv.Itoa(i)
		p, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			t.Fatalf("pod %s: claim statuses %+v", name, p.Status.ResourceClaimStatuses)
		}
		claim, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if owner := metav1.GetControllerOf(claim); owner == nil || owner.UID != p.UID {
			t.Errorf("claim %s is not controlled by pod %s (the resourceclaim controller's): %+v", claim.Name, name, claim.OwnerReferences)
		}
		gpu, nic := allocatedOn(ctx, t, c, claim, n.Name)
		if gpu.root != nic.root {
			t.Errorf("pod %s: GPU %s on %s, NIC %s on %s: not one PCIe root", name, gpu.name, gpu.root, nic.name, nic.root)
		}
		rails[name] = nic.rail
		env, err := c.Exec(ctx, "default", name, "main", "env")
		if err != nil {
			t.Fatal(err)
		}
		// "=mlx5_0": NCCL matches the name exactly, not as a prefix.
		for _, want := range []string{"NCCL_IB_HCA==" + nic.rdma, "STANDIN_GPUS=" + gpu.pci} {
			if !strings.Contains(env, want+"\n") {
				t.Errorf("pod %s: the container's environment lacks %s:\n%s", name, want, env)
			}
		}
		t.Logf("pod %s on %s: GPU %s and NIC %s (%s, rail %d) under %s", name, n.Name, gpu.pci, nic.name, nic.rdma, nic.rail, gpu.root)
	}
	if rails["job-0"] != rails["job-1"] {
		t.Fatalf("the job's pods are on rails %v: not one rail set", rails)
	}

	// The two pods reach each other over their rail's leaf.
	r := int(rails["job-0"])
	ips := map[string]string{}
	for _, name := range []string{"job-0", "job-1"} {
		ips[name] = railAddress(ctx, t, c, name, r)
	}
	before := fabricCounter(ctx, t, c, fabricPort(gpus[1], r))
	if out, err := c.Exec(ctx, "default", "job-0", "main", "ping", "-c", "3", "-W", "2", ips["job-1"]); err != nil {
		t.Fatalf("job-0 (%s) pinging job-1 (%s) over rail %d: %v\n%s", ips["job-0"], ips["job-1"], r, err, out)
	}
	if after := fabricCounter(ctx, t, c, fabricPort(gpus[1], r)); after < before+3 {
		t.Errorf("leaf %d's port to %s counted %d packets during the ping, want at least 3", r, gpus[1].Name, after-before)
	}
	t.Logf("job-0 %s and job-1 %s reach each other through leaf %d", ips["job-0"], ips["job-1"], r)
	verifyDRAJob(ctx, t, c, bin, int64(r), "job-0", "job-1")

	// Their addresses are whereabouts' two allocations of the rail's pool,
	// one record for both nodes; they come back when the pods go.
	subnet := c.Info.Rails[r].Subnet
	held, err := railAllocations(ctx, c, subnet)
	if err != nil {
		t.Fatal(err)
	}
	if pods := slices.Sorted(maps.Values(held)); fmt.Sprint(pods) != "[default/job-0 default/job-1]" {
		t.Errorf("whereabouts' pool of %s holds %v, want one address for each of default/job-0 and default/job-1", subnet, held)
	}

	// A third pod of the job, on no node in particular: each node's NIC
	// of the rail is held, so the scheduler places it nowhere; once job-1 goes,
	// it takes gpu-2's.
	if _, err := c.CreatePod(ctx, claimPod("job-2", "", "job")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", "job-2") })
	ev, err := c.WaitForEvent(ctx, "default", "job-2", "FailedScheduling")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.Client.CoreV1().Pods("default").Get(ctx, "job-2", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("job-2 placed on %q (%v) with every rail %d NIC held", p.Spec.NodeName, err, r)
	}
	t.Logf("job-2 not placed: %s", ev.Message)
	if err := c.DeletePod(ctx, "default", "job-1"); err != nil {
		t.Fatal(err)
	}
	p, err := c.WaitForPodPhase(ctx, "default", "job-2", corev1.PodRunning)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != gpus[1].Name {
		t.Errorf("job-2 runs on %s, want %s (the node whose rail %d NIC job-1 freed)", p.Spec.NodeName, gpus[1].Name, r)
	}

	if err := c.DeletePods(ctx, "default", "job-0", "job-2"); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "whereabouts' pool of "+subnet+" empty after the pods went", func(ctx context.Context) (bool, string) {
		held, err := railAllocations(ctx, c, subnet)
		return err == nil && len(held) == 0, fmt.Sprintf("%v, %v", held, err)
	})

	t.Run("half a node per pod: per-pod claims split the rails, the job template does not", func(t *testing.T) {
		testHalfNodeJob(ctx, t, c, bin)
	})
	t.Run("an unhealthy NIC (port DOWN, firmware refused): tainted where the API server keeps taints, left out where it drops them", func(t *testing.T) {
		testUnhealthyNIC(ctx, t, c, gpus[0], topos[gpus[0].Name])
	})
	t.Run("a pod asking for a pool's extended resource is served by DRA", func(t *testing.T) {
		needRelease(t, "1.37", "serving an extended resource through DRA (KEP-5004; the 1.35 API server drops the DeviceClass's extendedResourceName)")
		testExtendedResource(ctx, t, c, gpus[1].Name)
	})
	t.Run("a claimed NIC's health in its pod's status", func(t *testing.T) {
		needRelease(t, "1.37", "device health in pod status (KEP-4680: beta and on since 1.36; the 1.35 kubelet does not watch it)")
		testDeviceHealthInPodStatus(ctx, t, c, gpus[1])
	})
}

// testExtendedResource: a plain pod asking for "railyard.io/rail5: 1" in
// its limits, as it would of a device plugin, on a node whose rail pools
// are delivered by DRA only (no device plugin advertises them). The
// chart's DeviceClass of the pool names it as its extendedResourceName;
// the 1.37 scheduler makes the pod's claim from it, the node's agent
// prepares it, and the container gets the rail's NIC (NCCL_IB_HCA from
// the claim's CDI spec).
func testExtendedResource(ctx context.Context, t *testing.T, c *framework.MultiCluster, node string) {
	res := railPool(5)
	pod := framework.BusyboxPod("default", "ext-res", "sleep", "3600")
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{res: *resource.NewQuantity(1, resource.DecimalSI)}
	if n, err := allocatable(ctx, c, node, res); err != nil || n != 0 {
		t.Fatalf("%s allocatable on %s: %d (%v); want none (the pool is DRA's)", res, node, n, err)
	}
	start := time.Now()
	p := runPod(ctx, t, c, pod)
	running := time.Since(start)
	st := p.Status.ExtendedResourceClaimStatus
	if st == nil || st.ResourceClaimName == "" || len(st.RequestMappings) != 1 || st.RequestMappings[0].ResourceName != string(res) {
		t.Fatalf("pod %s: extended resource claim status %+v", pod.Name, st)
	}
	claim, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, st.ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := claim.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Driver != dra.DriverName ||
		a.Devices.Results[0].Pool != node+"/rail5" {
		t.Fatalf("claim %s allocation %+v: want one device of %s/rail5", claim.Name, claim.Status.Allocation, node)
	}
	env, err := c.Exec(ctx, "default", pod.Name, "main", "env")
	if err != nil || !strings.Contains(env, "NCCL_IB_HCA=") {
		t.Errorf("the container's env has no NCCL_IB_HCA from the claim's CDI spec: %v\n%s", err, env)
	}
	t.Logf("pod asking for %s: 1 Running in %v with claim %s (device %s)", res, running.Round(10*time.Millisecond), claim.Name, claim.Status.Allocation.Devices.Results[0].Device)

}

// testUnhealthyNIC takes the port of one of a node's rail NICs DOWN in its
// generated tree. The agent's port poll sees it; its DRA driver, which
// probed the real API server at start with a dry-run slice, publishes the
// NIC with the rdma.railyard.io/unhealthy NoSchedule taint on 1.37 (device
// taints GA) and leaves it out on 1.35 (the gate off: the server would drop
// the taint). The port back up, the NIC is published untainted again.
// Then the card's fw_ver reads a release older than the chart's firmware
// policy accepts (as a card flashed with it shows it): the same taint,
// naming the firmware, until it reads an accepted release again.
func testUnhealthyNIC(ctx context.Context, t *testing.T, c *framework.MultiCluster, n framework.NodeInfo, topo *topology.Topology) {
	var nic topology.NIC
	for _, x := range topo.NICs {
		if x.RDMA != "" && slices.Contains(n.Rails, x.Netdev) {
			nic = x
			break
		}
	}
	if nic.RDMA == "" {
		t.Fatalf("node %s: no rail NIC with an RDMA device in %v", n.Name, n.Rails)
	}
	name, err := dra.DeviceName(nic.PCI)
	if err != nil {
		t.Fatal(err)
	}
	sysfs := filepath.Join(n.Dir, "machine", "sysfs")
	keeps := minorOf(release) >= 37
	device := func(ctx context.Context) (found bool, taints []resourceapi.DeviceTaint, err error) {
		list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + dra.DriverName + "," + resourceapi.ResourceSliceSelectorNodeName + "=" + n.Name})
		if err != nil {
			return false, nil, err
		}
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				if d.Name == name {
					return true, d.Taints, nil
				}
			}
		}
		return false, nil, nil
	}
	if model := fmt.Sprintf("%04x:%04x", nic.Vendor, nic.Device); model != draFirmwareModel || nic.Firmware != draFirmwareMinimum {
		t.Fatalf("%s is a %s on %q; the chart's firmware policy is written for %s on %s", nic.RDMA, model, nic.Firmware, draFirmwareModel, draFirmwareMinimum)
	}
	const old = "28.38.1900"
	for _, fault := range []struct {
		what          string
		taint         string // the taint value's start
		cause, repair func() error
	}{
		{"port DOWN", "port-1-is-down",
			func() error { return fakesysfs.SetPortState(sysfs, nic.RDMA, 1, fakesysfs.PortDown) },
			func() error { return fakesysfs.SetPortState(sysfs, nic.RDMA, 1, fakesysfs.PortActive) }},
		{"firmware " + old + " (minimum " + draFirmwareMinimum + ")", "firmware-28-38-1900-below-the-minimum-28-39-1002",
			func() error { return fakesysfs.SetFirmware(sysfs, nic.RDMA, old) },
			func() error { return fakesysfs.SetFirmware(sysfs, nic.RDMA, nic.Firmware) }},
	} {
		if err := fault.cause(); err != nil {
			t.Fatal(err)
		}
		repaired := false
		t.Cleanup(func() {
			if !repaired {
				_ = fault.repair()
			}
		})
		start := time.Now()
		poll(ctx, t, fmt.Sprintf("%s (%s) on %s unhealthy in its slice after %s", name, nic.RDMA, n.Name, fault.what), func(ctx context.Context) (bool, string) {
			found, taints, err := device(ctx)
			if err != nil {
				return false, err.Error()
			}
			if keeps {
				ok := found && len(taints) == 1 && taints[0].Key == dra.TaintKey && taints[0].Effect == resourceapi.DeviceTaintEffectNoSchedule &&
					strings.HasPrefix(taints[0].Value, fault.taint)
				return ok, fmt.Sprintf("Kubernetes %s keeps taints: published %v, taints %+v; want one %s=%s... NoSchedule", release, found, taints, dra.TaintKey, fault.taint)
			}
			return !found, fmt.Sprintf("Kubernetes %s drops taints: published %v (taints %+v); want it left out", release, found, taints)
		})
		t.Logf("Kubernetes %s: %s -> %s %s in %v", release, fault.what, name, map[bool]string{true: "tainted NoSchedule", false: "left out of the slice"}[keeps],
			time.Since(start).Round(10*time.Millisecond))
		if err := fault.repair(); err != nil {
			t.Fatal(err)
		}
		repaired = true
		poll(ctx, t, fmt.Sprintf("%s published untainted again after %s was repaired", name, fault.what), func(ctx context.Context) (bool, string) {
			found, taints, err := device(ctx)
			if err != nil {
				return false, err.Error()
			}
			return found && len(taints) == 0, fmt.Sprintf("published %v, taints %+v", found, taints)
		})
	}
}

// testHalfNodeJob: a job of two pods of half a node's GPUs each, on a
// cluster whose gpu-2 already runs a pod on rails 0-3. Placed the way a
// per-pod claim places it (today's dranet-style pattern: each GPU with a
// NIC on its PCIe root, nothing about rails), its pod on gpu-1 gets rails
// 0-3 and its pod on gpu-2 rails 4-7, and the two reach each other on
// none of them (isolated rails). Placed by `railyard rails template`, both
// pods get rails 4-7 and reach each other through those leaves.
func testHalfNodeJob(ctx context.Context, t *testing.T, c *framework.MultiCluster, bin string) {
	gpus := c.Info.GPUNodes()
	half := len(gpus[0].Rails) / 2
	if len(gpus[1].Rails) != 2*half || half == 0 {
		t.Skipf("needs two GPU nodes with the same even number of rails (have %d, %d)", len(gpus[0].Rails), len(gpus[1].Rails))
	}
	first := make([]string, half)
	for i := range first {
		first[i] = strconv.Itoa(i)
	}
	applyTemplate(ctx, t, c, bin, "filler", "--pods", "1", "--gpus", strconv.Itoa(half), "--rails", strings.Join(first, ","))
	runJobPod(ctx, t, c, "filler-0", gpus[1].Name, "filler")

	// The per-pod claim.
	root := resourceapi.FullyQualifiedName(dra.AttrPCIeRoot)
	spec := resourceapi.ResourceClaimSpec{}
	for i := range half {
		g, nic := "gpu"+strconv.Itoa(i), "nic"+strconv.Itoa(i)
		for _, req := range []struct{ name, class string }{{g, gpustandin.DeviceClassName}, {nic, dra.DeviceClassName}} {
			spec.Devices.Requests = append(spec.Devices.Requests, resourceapi.DeviceRequest{Name: req.name, Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: req.class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}})
		}
		spec.Devices.Constraints = append(spec.Devices.Constraints, resourceapi.DeviceConstraint{Requests: []string{g, nic}, MatchAttribute: &root})
	}
	perPod := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "per-pod", Namespace: "default"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: spec}}
	if _, err := c.Client.ResourceV1().ResourceClaimTemplates("default").Create(ctx, perPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.ResourceV1().ResourceClaimTemplates("default").Delete(context.Background(), "per-pod", metav1.DeleteOptions{})
	})
	split := map[string][]int64{}
	for i, n := range gpus[:2] {
		name := "per-pod-" + strconv.Itoa(i)
		split[name] = runJobPod(ctx, t, c, name, n.Name, "per-pod")
	}
	if slices.Equal(split["per-pod-0"], split["per-pod-1"]) {
		t.Fatalf("per-pod claims gave both pods rails %v: the baseline should split them", split["per-pod-0"])
	}
	for _, r := range split["per-pod-1"] {
		ip := railAddress(ctx, t, c, "per-pod-1", int(r))
		if out, err := c.Exec(ctx, "default", "per-pod-0", "main", "ping", "-c", "1", "-W", "1", ip); err == nil {
			t.Errorf("per-pod-0 (rails %v) reached per-pod-1's rail %d address %s with the rails isolated:\n%s", split["per-pod-0"], r, ip, out)
		}
	}
	t.Logf("per-pod claims: per-pod-0 on %s rails %v, per-pod-1 on %s rails %v: no common rail, no traffic",
		gpus[0].Name, split["per-pod-0"], gpus[1].Name, split["per-pod-1"])
	if err := c.DeletePods(ctx, "default", "per-pod-0", "per-pod-1"); err != nil {
		t.Fatal(err)
	}

	// The job template: the rail set with room on both nodes.
	applyTemplate(ctx, t, c, bin, "job-half", "--pods", "2", "--gpus", strconv.Itoa(half))
	same := map[string][]int64{}
	for i, n := range gpus[:2] {
		name := "job-half-" + strconv.Itoa(i)
		same[name] = runJobPod(ctx, t, c, name, n.Name, "job-half")
	}
	if !slices.Equal(same["job-half-0"], same["job-half-1"]) {
		t.Fatalf("the job template gave the pods rails %v and %v", same["job-half-0"], same["job-half-1"])
	}
	for _, r := range same["job-half-1"] {
		ip := railAddress(ctx, t, c, "job-half-1", int(r))
		if out, err := c.Exec(ctx, "default", "job-half-0", "main", "ping", "-c", "1", "-W", "2", ip); err != nil {
			t.Errorf("job-half-0 could not reach job-half-1 on rail %d (%s): %v\n%s", r, ip, err, out)
		}
	}
	t.Logf("job template: both pods on rails %v, reaching each other on every one", same["job-half-0"])
}

// applyTemplate writes a job's ResourceClaimTemplate with `railyard rails
// template NAME args...` from the cluster's slices and applies it.
func applyTemplate(ctx context.Context, t *testing.T, c *framework.MultiCluster, bin, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append([]string{"rails", "template", name, "--kubeconfig", c.Kubeconfig}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	tmpl, err := cmd.Output()
	if err != nil {
		t.Fatalf("railyard rails template %s: %v\n%s", name, err, stderr.String())
	}
	t.Logf("railyard rails template %s: %s", name, strings.TrimSpace(stderr.String()))
	if out, err := kubectl(ctx, c, string(tmpl), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply the template: %v\n%s\n%s", err, out, tmpl)
	}
	t.Cleanup(func() {
		_ = c.Client.ResourceV1().ResourceClaimTemplates("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// claimPod is a pod of a job: its container takes the claim "rails" made
// from template; on node, or wherever the scheduler puts it (node "").
func claimPod(name, node, template string) *corev1.Pod {
	pod := framework.BusyboxPod("default", name, "sleep", "3600")
	if node != "" {
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "rails", ResourceClaimTemplateName: ptr.To(template)}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "rails"}}
	return pod
}

// runPod creates pod, deleted when the test ends, and waits until it runs.
func runPod(ctx context.Context, t *testing.T, c *framework.MultiCluster, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(context.Background(), pod.Namespace, pod.Name) })
	p, err := c.WaitForPodPhase(ctx, pod.Namespace, pod.Name, corev1.PodRunning)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runJobPod runs a pod on node with a claim from template and returns the
// rails of the NICs its claim got, sorted.
func runJobPod(ctx context.Context, t *testing.T, c *framework.MultiCluster, name, node, template string) []int64 {
	t.Helper()
	p := runPod(ctx, t, c, claimPod(name, node, template))
	if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("pod %s: claim statuses %+v", name, p.Status.ResourceClaimStatuses)
	}
	claim, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rails, err := nicRails(ctx, c, claim, node)
	if err != nil {
		t.Fatal(err)
	}
	return rails
}

// nicRails returns the railyard.io/rail of every NIC allocated to claim
// on node, sorted.
func nicRails(ctx context.Context, c *framework.MultiCluster, claim *resourceapi.ResourceClaim, node string) ([]int64, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s is not allocated", claim.Name)
	}
	list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + dra.DriverName})
	if err != nil {
		return nil, err
	}
	rail := map[string]int64{} // pool/device
	for _, s := range list.Items {
		if s.Spec.NodeName == nil || *s.Spec.NodeName != node {
			continue
		}
		for _, d := range s.Spec.Devices {
			if v, ok := d.Attributes[dra.AttrRail]; ok && v.IntValue != nil {
				rail[s.Spec.Pool.Name+"/"+d.Name] = *v.IntValue
			}
		}
	}
	var out []int64
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != dra.DriverName {
			continue
		}
		v, ok := rail[r.Pool+"/"+r.Device]
		if !ok {
			return nil, fmt.Errorf("claim %s: NIC %s/%s has no rail on %s", claim.Name, r.Pool, r.Device, node)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil
}

// railAddress is a pod's address on rail r's subnet (its claimed NIC's
// netdev, moved into the pod by railyard-cni).
func railAddress(ctx context.Context, t *testing.T, c *framework.MultiCluster, pod string, r int) string {
	t.Helper()
	out, err := c.Exec(ctx, "default", pod, "main", "ip", "-o", "-4", "addr", "show")
	if err != nil {
		t.Fatal(err)
	}
	_, subnet, _ := net.ParseCIDR(c.Info.Rails[r].Subnet)
	for _, m := range regexp.MustCompile(`inet (\S+)/`).FindAllStringSubmatch(out, -1) {
		if ip := net.ParseIP(m[1]); ip != nil && subnet.Contains(ip) {
			return m[1]
		}
	}
	t.Fatalf("pod %s has no address on rail %d (%s):\n%s", pod, r, subnet, out)
	return ""
}

type allocated struct {
	name, root, pci, rdma string
	rail                  int64
}

// allocatedOn returns the GPU and the NIC allocated to claim, checking
// that both are devices of node's pools, with their slices' attributes.
func allocatedOn(ctx context.Context, t *testing.T, c *framework.MultiCluster, claim *resourceapi.ResourceClaim, node string) (gpu, nic allocated) {
	t.Helper()
	if claim.Status.Allocation == nil {
		t.Fatalf("claim %s is not allocated", claim.Name)
	}
	list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	devices := map[string]resourceapi.Device{} // driver/pool/device
	for _, s := range list.Items {
		if s.Spec.NodeName != nil && *s.Spec.NodeName == node {
			for _, d := range s.Spec.Devices {
				devices[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+d.Name] = d
			}
		}
	}
	str := func(d resourceapi.Device, a resourceapi.QualifiedName) string {
		if v, ok := d.Attributes[a]; ok && v.StringValue != nil {
			return *v.StringValue
		}
		return ""
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		d, ok := devices[r.Driver+"/"+r.Pool+"/"+r.Device]
		if !ok {
			t.Fatalf("claim %s: %s/%s/%s is no device of node %s", claim.Name, r.Driver, r.Pool, r.Device, node)
		}
		a := allocated{name: r.Device, root: str(d, dra.AttrPCIeRoot), pci: str(d, dra.AttrPCIBusID), rdma: str(d, dra.AttrRDMADevice)}
		switch r.Driver {
		case gpustandin.DriverName:
			gpu = a
		case dra.DriverName:
			if v, ok := d.Attributes[dra.AttrRail]; ok && v.IntValue != nil {
				a.rail = *v.IntValue
			}
			nic = a
		}
	}
	if gpu.name == "" || nic.name == "" {
		t.Fatalf("claim %s: results %+v, want one GPU and one NIC", claim.Name, claim.Status.Allocation.Devices.Results)
	}
	return gpu, nic
}

// publishFabricPorts publishes each GPU node's fabric ports through
// nodefabric.Publisher, the code `railyard fabric publish` runs after
// hearing every rail's leaf on its NIC (fabric.PortsOf, each port's switch
// its rail's leaf): the same annotation and labels. At cleanup the labels
// go (a publish with no neighbor) and so does the annotation.
func publishFabricPorts(ctx context.Context, t *testing.T, c *framework.MultiCluster, topos map[string]*topology.Topology) {
	t.Helper()
	for node, topo := range topos {
		pub := nodefabric.Publisher{Client: c.Client, Node: node}
		ports := fabric.PortsOf(topo)
		t.Cleanup(func() {
			_, _ = pub.Publish(context.Background(), ports)
			off := []byte(`{"metadata":{"annotations":{"` + fabric.PortsAnnotation + `":null}}}`)
			_, _ = c.Client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, off, metav1.PatchOptions{})
		})
		cabled := slices.Clone(ports)
		for i, p := range cabled {
			if p.Rail >= 0 && p.Rail < len(c.Info.Rails) {
				cabled[i].Switch, cabled[i].SwitchPort = c.Info.Rails[p.Rail].Leaf, "port-"+node
			}
		}
		if _, err := pub.Publish(ctx, cabled); err != nil {
			t.Fatalf("publishing %s's fabric ports: %v", node, err)
		}
	}
}

// testDeviceHealthInPodStatus: a pod whose claim (from a template asking
// for one device of the pool railyard.io/rail6 through its DeviceClass)
// holds a PF. Kubelet (KEP-4680, beta and on since 1.36) shows the health
// the agent's driver reports for it in the container's status: Healthy,
// Unhealthy once its port goes DOWN, Healthy again once it is back up.
// (Kubelet reports it only for a container's own claims, not for the
// claim it makes for an extended resource.)
func testDeviceHealthInPodStatus(ctx context.Context, t *testing.T, c *framework.MultiCluster, n framework.NodeInfo) {
	node := n.Name
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "one-rail6", Namespace: "default"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "nic", Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: dra.PoolDeviceClassName(string(railPool(6))), AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}},
		}}},
	}
	if _, err := c.Client.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.ResourceV1().ResourceClaimTemplates("default").Delete(context.Background(), tmpl.Name, metav1.DeleteOptions{})
	})
	pod := claimPod("nic-health", node, tmpl.Name)
	p := runPod(ctx, t, c, pod)
	if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("pod %s: claim statuses %+v", pod.Name, p.Status.ResourceClaimStatuses)
	}
	claim, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 {
		t.Fatalf("claim %s: allocation %+v", claim.Name, claim.Status.Allocation)
	}
	device := claim.Status.Allocation.Devices.Results[0].Device
	testAdminAccess(ctx, t, c, node, pod.Name, device)
	// KEP-4680 (beta and on since 1.36): kubelet shows the health the
	// agent's driver reports for the pod's device in the container's
	// status: Healthy, then Unhealthy with the reason once its port goes
	// DOWN, then Healthy again.
	health := func(ctx context.Context) (string, string) {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return "", err.Error()
		}
		var seen []string
		for _, cs := range p.Status.ContainerStatuses {
			for _, rs := range cs.AllocatedResourcesStatus {
				for _, rh := range rs.Resources {
					seen = append(seen, fmt.Sprintf("%s %s=%s", rs.Name, rh.ResourceID, rh.Health))
					// Kubelet names the device by its CDI device ID
					// ("rdma.railyard.io/claim=<claim UID>-<device>").
					if strings.HasSuffix(string(rh.ResourceID), "-"+device) {
						return string(rh.Health), strings.Join(seen, "; ")
					}
				}
			}
		}
		return "", "allocatedResourcesStatus: " + strings.Join(seen, "; ")
	}
	poll(ctx, t, "the pod's device Healthy in its container status", func(ctx context.Context) (bool, string) {
		h, all := health(ctx)
		return h == string(corev1.ResourceHealthStatusHealthy), all
	})
	pci, err := dra.PCIAddress(device)
	if err != nil {
		t.Fatal(err)
	}
	sysfs, rdma := filepath.Join(n.Dir, "machine", "sysfs"), ""
	topo, err := discovery.Discover(ctx, sysfs)
	if err != nil {
		t.Fatal(err)
	}
	if nic, ok := topo.NIC(pci); ok {
		rdma = nic.RDMA
	}
	if rdma == "" {
		t.Fatalf("no RDMA device for %s on %s", pci, node)
	}
	if err := fakesysfs.SetPortState(sysfs, rdma, 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fakesysfs.SetPortState(sysfs, rdma, 1, fakesysfs.PortActive) }()
	down := time.Now()
	poll(ctx, t, "the pod's device Unhealthy in its container status once its port is DOWN", func(ctx context.Context) (bool, string) {
		h, all := health(ctx)
		return h == string(corev1.ResourceHealthStatusUnhealthy), all
	})
	t.Logf("port DOWN -> the pod's device Unhealthy in its container status in %v", time.Since(down).Round(10*time.Millisecond))
	if err := fakesysfs.SetPortState(sysfs, rdma, 1, fakesysfs.PortActive); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the pod's device Healthy again", func(ctx context.Context) (bool, string) {
		h, all := health(ctx)
		return h == string(corev1.ResourceHealthStatusHealthy), all
	})
}

// testAdminAccess: while pod owner holds device, a pod in a namespace
// labelled for admin access (KEP-5018, GA in 1.36) claims the same device
// with adminAccess and runs on it, with the same verbs device in
// /dev/infiniband: how doctor or a counter reader looks at a NIC another
// pod holds. The owner keeps its device (its netdev stays in its pod).
func testAdminAccess(ctx context.Context, t *testing.T, c *framework.MultiCluster, node, owner, device string) {
	const ns = "railyard-admin"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{resourceapi.DRAAdminNamespaceLabelKey: "true"}}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	pci, err := dra.PCIAddress(device)
	if err != nil {
		t.Fatal(err)
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "look", Namespace: ns},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "nic",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: dra.DeviceClassName, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
				AdminAccess: ptr.To(true),
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `device.attributes["resource.kubernetes.io"].pciBusID == "` + pci + `"`}}}}}}}},
	}
	if _, err := c.Client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := framework.BusyboxPod(ns, "look", "sleep", "3600")
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "nic", ResourceClaimName: ptr.To(claim.Name)}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "nic"}}
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.DeletePod(context.Background(), ns, pod.Name) }()
	if _, err := c.WaitForPodPhase(ctx, ns, pod.Name, corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	looked, err := c.Exec(ctx, ns, pod.Name, "main", "ls", "/dev/infiniband")
	if err != nil {
		t.Fatal(err)
	}
	held, err := c.Exec(ctx, "default", owner, "main", "ls", "/dev/infiniband")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(looked, "uverbs") || strings.TrimSpace(looked) != strings.TrimSpace(held) {
		t.Errorf("admin pod's /dev/infiniband %q, owner's %q: want the same verbs device", looked, held)
	}
	if p, err := c.Client.CoreV1().Pods("default").Get(ctx, owner, metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("the owner pod after the admin pod started: %v", err)
	}
	t.Logf("admin-access pod runs beside %s's claim on %s, with %s", owner, device, strings.Join(strings.Fields(looked), " "))
}
