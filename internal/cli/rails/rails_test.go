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
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/machines"
)

// cluster is two roce-8gpu-4nic nodes' slices (Railyard's VF pool and the
// stand-in GPU driver) and a claim holding node-b's GPUs of rails 0 and 2.
func cluster(t *testing.T) ([]*resourceapi.ResourceSlice, *resourceapi.ResourceClaim) {
	t.Helper()
	topo, err := machines.Topology(context.Background(), "roce-8gpu-4nic", 2)
	if err != nil {
		t.Fatal(err)
	}
	var rs []*resourceapi.ResourceSlice
	for _, n := range []string{"node-a", "node-b"} {
		pools, err := dra.Build(n, topo, []v1alpha1.Pool{{Name: "railyard.io/rdma", DeviceKind: "vf"}}, dra.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, dra.ResourceSlices(n, pools, 1)...)
		rs = append(rs, gpustandin.ResourceSlices(n, topo)...)
	}
	claim := &resourceapi.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}},
	}
	for _, s := range rs {
		if *s.Spec.NodeName != "node-b" || s.Spec.Driver != gpustandin.DriverName {
			continue
		}
		for _, d := range s.Spec.Devices[:4] { // gpu-0..3: rails 0 and 2
			claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results,
				resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name})
		}
	}
	return rs, claim
}

func writeList(t *testing.T, rs []*resourceapi.ResourceSlice, claim *resourceapi.ResourceClaim) string {
	t.Helper()
	var items []any
	for _, s := range rs {
		s.TypeMeta = metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"}
		items = append(items, s)
	}
	items = append(items, claim)
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

func decode(t *testing.T, out string) *resourceapi.ResourceClaimTemplate {
	t.Helper()
	var tmpl resourceapi.ResourceClaimTemplate
	if err := yaml.UnmarshalStrict([]byte(out), &tmpl); err != nil {
		t.Fatalf("output is no ResourceClaimTemplate: %v\n%s", err, out)
	}
	return &tmpl
}

// nicRails are the rails the template's NIC requests pin, in order.
func nicRails(tmpl *resourceapi.ResourceClaimTemplate) []string {
	var out []string
	for _, r := range tmpl.Spec.Spec.Devices.Requests {
		if strings.HasPrefix(r.Name, "nic") {
			e := r.Exactly.Selectors[0].CEL.Expression
			out = append(out, e[strings.LastIndex(e, " ")+1:])
		}
	}
	return out
}

func TestTemplateFromAFileChoosesTheRailSetWithRoomOnBothNodes(t *testing.T) {
	t.Parallel()
	rs, claim := cluster(t)
	from := writeList(t, rs, claim)
	out, errOut, err := clitest.Run(t, NewCommand, "", "template", "job-a", "--pods", "2", "--gpus", "4", "--from", from,
		"-n", "training", "--gpu-driver", gpustandin.DriverName, "--gpu-class", gpustandin.DeviceClassName)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "rails 4,6 (NIC order 2,3): room for a pod on 2 of 2 nodes (node-a, node-b)") {
		t.Errorf("stderr %q", errOut)
	}
	tmpl := decode(t, out)
	if tmpl.Name != "job-a" || tmpl.Namespace != "training" || tmpl.Annotations["railyard.io/rails"] != "4,6" ||
		tmpl.Annotations["railyard.io/nic-rails"] != "2,3" || tmpl.Kind != "ResourceClaimTemplate" {
		t.Errorf("template meta %+v %+v", tmpl.ObjectMeta, tmpl.TypeMeta)
	}
	if diff := cmp.Diff([]string{"4", "4", "6", "6"}, nicRails(tmpl)); diff != "" {
		t.Errorf("NIC rails (-want +got)\n%s", diff)
	}
	if n := len(tmpl.Spec.Spec.Devices.Constraints); n != 4 {
		t.Errorf("%d constraints, want one per GPU", n)
	}

	// --rails 0,2 has room on node-a only: refused for a job of 2 pods.
	_, _, err = clitest.Run(t, NewCommand, "", "template", "job-a", "--pods", "2", "--gpus", "4", "--rails", "0,2", "--from", from, "--gpu-driver", gpustandin.DriverName)
	if err == nil || !strings.Contains(err.Error(), "rails 0,2 have room for a pod on 1 nodes") {
		t.Errorf("--rails 0,2: %v", err)
	}
	out, _, err = clitest.Run(t, NewCommand, "", "template", "job-b", "--pods", "1", "--gpus", "4", "--rails", "2,0", "--from", from, "--gpu-driver", gpustandin.DriverName)
	if err != nil || decode(t, out).Annotations["railyard.io/rails"] != "0,2" {
		t.Errorf("--rails 2,0 for one pod: %v\n%s", err, out)
	}
}

func TestTemplateReadsTheClusterThroughTheAPI(t *testing.T) {
	t.Parallel()
	rs, claim := cluster(t)
	var objs []runtime.Object
	for _, s := range rs {
		objs = append(objs, s)
	}
	objs = append(objs, claim)
	cs := fake.NewClientset(objs...)
	connect := func(string, time.Duration) (kubernetes.Interface, error) { return cs, nil }
	newCmd := func(s iostreams.Streams) *cobra.Command { return newTemplateCommand(s, connect) }
	out, _, err := clitest.Run(t, newCmd, "", "job-a", "--pods", "2", "--gpus", "4", "--gpu-driver", gpustandin.DriverName)
	if err != nil {
		t.Fatal(err)
	}
	if got := decode(t, out).Annotations["railyard.io/rails"]; got != "4,6" {
		t.Errorf("rails %s, want 4,6", got)
	}
}

func TestTemplateRefusesBadInput(t *testing.T) {
	t.Parallel()
	rs, claim := cluster(t)
	from := writeList(t, rs, claim)
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"items": 5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"template", "Job_A", "--pods", "1", "--gpus", "4", "--from", from}, "template name"},
		{[]string{"template", "j", "--pods", "0", "--gpus", "4", "--from", from}, "--pods and --gpus are required"},
		{[]string{"template", "j", "--pods", "1", "--gpus", "4", "-n", "Bad NS", "--from", from}, "--namespace"},
		{[]string{"template", "j", "--pods", "1", "--gpus", "4", "--rails", "4,x", "--from", from}, "want rail numbers"},
		{[]string{"template", "j", "--pods", "1", "--gpus", "4", "--rails", "4,4", "--from", from}, "names a rail twice"},
		{[]string{"template", "j", "--pods", "1", "--gpus", "3", "--from", from, "--gpu-driver", gpustandin.DriverName}, "exactly 3 GPUs"},
		{[]string{"template", "j", "--pods", "1", "--gpus", "4", "--from", from, "--gpu-driver", "gpu.example.com"}, "no node publishes"},
		{[]string{"template", "j", "--pods", "1", "--gpus", "4", "--from", bad}, "want a List"},
		{[]string{"template", "j", "--pods", "1", "--gpus", "4", "--from", "/nonexistent/x.json"}, "x.json"},
	} {
		_, _, err := clitest.Run(t, NewCommand, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}
