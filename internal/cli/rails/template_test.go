package rails

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/machines"
)

// refusedCluster is two roce-8gpu-4nic nodes whose agents taint unhealthy
// devices (device taints on), node-b's rail-2 NIC refused by the firmware
// policy: its two VFs carry rdma.railyard.io/unhealthy:NoSchedule.
func refusedCluster(t *testing.T) []*resourceapi.ResourceSlice {
	t.Helper()
	var rs []*resourceapi.ResourceSlice
	for _, n := range []string{"node-a", "node-b"} {
		topo, err := machines.Topology(context.Background(), "roce-8gpu-4nic", 2)
		if err != nil {
			t.Fatal(err)
		}
		if n == "node-b" {
			for pci, rail := range topo.NICRails() {
				for i := range topo.NICs {
					if rail == 2 && topo.NICs[i].PCI == pci {
						topo.NICs[i].Refused = "firmware 28.38.1900 below the minimum 28.39.1002 for 15b3:1021"
					}
				}
			}
		}
		pools, err := dra.Build(n, topo, []v1alpha1.Pool{{Name: "railyard.io/rdma", DeviceKind: "vf"}}, dra.Options{TaintUnhealthy: true})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, dra.ResourceSlices(n, pools, 1)...)
		rs = append(rs, gpustandin.ResourceSlices(n, topo)...)
	}
	return rs
}

func writeItems(t *testing.T, items ...any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sliceItems(rs []*resourceapi.ResourceSlice) []any {
	var out []any
	for _, s := range rs {
		s.TypeMeta = metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"}
		out = append(out, s)
	}
	return out
}

// The defect as the user saw it: `--rails 0,2` for two pods answered
// "room on 2 of 2 nodes" while node-b's rail-2 NIC was tainted, and the
// second pod stayed Pending. Now it is refused, and stderr says why node-b
// has no room and how to accept the taint; with --toleration the set has
// room on both nodes and every request of the template tolerates it.
func TestTemplateCountsTaintsAndTakesTolerations(t *testing.T) {
	t.Parallel()
	from := writeItems(t, sliceItems(refusedCluster(t))...)
	args := []string{"template", "job-a", "--pods", "2", "--gpus", "4", "--rails", "0,2", "--from", from,
		"--gpu-driver", gpustandin.DriverName, "--gpu-class", gpustandin.DeviceClassName}
	_, errOut, err := clitest.Run(t, NewCommand, "", args...)
	if err == nil || !strings.Contains(err.Error(), "rails 0,2 have room for a pod on 1 nodes") {
		t.Errorf("tainted: error %v", err)
	}
	for _, want := range []string{
		"rails 0,2 (NIC order 0,1): room for a pod on 1 of 2 nodes (node-a)",
		"node-b: rail 2: devices with taints the job does not tolerate:",
		"pci-0000-0c-00-1 " + dra.TaintKey + "=pf-0000-0c-00-0-firmware-28-38-1900-below-the-minimum-28-39-100:NoSchedule",
		"--toleration KEY[=VALUE][:EFFECT]",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	out, errOut, err := clitest.Run(t, NewCommand, "", append(args, "--toleration", dra.TaintKey+":NoSchedule")...)
	if err != nil {
		t.Fatalf("tolerated: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "room for a pod on 2 of 2 nodes") {
		t.Errorf("tolerated: stderr %q", errOut)
	}
	want := []resourceapi.DeviceToleration{{Key: dra.TaintKey, Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	for _, r := range decode(t, out).Spec.Spec.Devices.Requests {
		if diff := cmp.Diff(want, r.Exactly.Tolerations); diff != "" {
			t.Errorf("request %s tolerations (-want +got):\n%s", r.Name, diff)
		}
	}
}

// --rails nic:0,1 names, in NIC order, the rails --rails 0,2 names on an
// 8-GPU/4-NIC node (its NICs are rails 0, 2, 4, 6): the same template.
func TestTemplateTakesRailsInNICOrder(t *testing.T) {
	t.Parallel()
	rs, claim := cluster(t)
	from := writeList(t, rs, claim)
	run := func(rails string) string {
		out, _, err := clitest.Run(t, NewCommand, "", "template", "job", "--pods", "1", "--gpus", "4", "--rails", rails, "--from", from, "--gpu-driver", gpustandin.DriverName)
		if err != nil {
			t.Fatalf("--rails %s: %v", rails, err)
		}
		return out
	}
	byRail, byNIC := run("0,2"), run("nic:1,0")
	if diff := cmp.Diff(byRail, byNIC); diff != "" {
		t.Errorf("--rails 0,2 and nic:1,0 (-rails +nic):\n%s", diff)
	}
	if tmpl := decode(t, byNIC); tmpl.Annotations["railyard.io/rails"] != "0,2" || tmpl.Annotations["railyard.io/nic-rails"] != "0,1" {
		t.Errorf("annotations %v", tmpl.Annotations)
	}
	_, _, err := clitest.Run(t, NewCommand, "", "template", "job", "--pods", "1", "--gpus", "2", "--rails", "nic:4", "--from", from, "--gpu-driver", gpustandin.DriverName)
	if err == nil || !strings.Contains(err.Error(), "no node has NIC rail 4 (NIC rails 0,1,2,3)") {
		t.Errorf("nic:4: %v", err)
	}
}

// DeviceTaintRules taint devices too, read from a file and from the
// cluster: a NoExecute rule on node-a's rail-4 VFs leaves rails 4,6 room
// on node-b only.
func TestTemplateReadsDeviceTaintRules(t *testing.T) {
	t.Parallel()
	rs, claim := cluster(t)
	var rules []*resourceapi.DeviceTaintRule
	for _, s := range rs {
		if *s.Spec.NodeName != "node-a" || s.Spec.Driver != dra.DriverName {
			continue
		}
		for _, d := range s.Spec.Devices {
			if *d.Attributes[dra.AttrRail].IntValue == 4 {
				driver, pool, name := s.Spec.Driver, s.Spec.Pool.Name, d.Name
				rules = append(rules, &resourceapi.DeviceTaintRule{
					TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "DeviceTaintRule"},
					ObjectMeta: metav1.ObjectMeta{Name: "drain-" + name},
					Spec: resourceapi.DeviceTaintRuleSpec{
						DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &name},
						Taint:          resourceapi.DeviceTaint{Key: "example.com/drain", Effect: resourceapi.DeviceTaintEffectNoExecute},
					}})
			}
		}
	}
	items := append(sliceItems(rs), claim)
	for _, r := range rules {
		items = append(items, r)
	}
	args := []string{"job", "--pods", "1", "--gpus", "4", "--rails", "4,6", "--gpu-driver", gpustandin.DriverName}
	_, errOut, err := clitest.Run(t, NewCommand, "", append([]string{"template", "--from", writeItems(t, items...)}, args...)...)
	if err != nil || !strings.Contains(errOut, "room for a pod on 1 of 2 nodes (node-b)") || !strings.Contains(errOut, "example.com/drain:NoExecute") {
		t.Errorf("from a file: %v\n%s", err, errOut)
	}

	objs := []runtime.Object{claim}
	for _, s := range rs {
		objs = append(objs, s)
	}
	for _, r := range rules {
		objs = append(objs, r)
	}
	cs := fake.NewClientset(objs...)
	connect := func(string, time.Duration) (kubernetes.Interface, error) { return cs, nil }
	newCmd := func(s iostreams.Streams) *cobra.Command { return newTemplateCommand(s, connect) }
	_, errOut, err = clitest.Run(t, newCmd, "", args...)
	if err != nil || !strings.Contains(errOut, "room for a pod on 1 of 2 nodes (node-b)") {
		t.Errorf("from the cluster: %v\n%s", err, errOut)
	}
}

func TestParseTolerations(t *testing.T) {
	t.Parallel()
	got, err := parseTolerations([]string{"a.io/k", "a.io/k=v", "a.io/k:NoExecute", "a.io/k=v:NoSchedule"})
	if err != nil {
		t.Fatal(err)
	}
	want := []resourceapi.DeviceToleration{
		{Key: "a.io/k", Operator: resourceapi.DeviceTolerationOpExists},
		{Key: "a.io/k", Operator: resourceapi.DeviceTolerationOpEqual, Value: "v"},
		{Key: "a.io/k", Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoExecute},
		{Key: "a.io/k", Operator: resourceapi.DeviceTolerationOpEqual, Value: "v", Effect: resourceapi.DeviceTaintEffectNoSchedule},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "a b", "a.io/k=v v", "a.io/k:None", "a.io/k:NoSchedule:x"} {
		if _, err := parseTolerations([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
