//go:build e2e

package multinode

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// draGates are the DRA feature gates whose state the version matrix pins,
// by release: the cluster sets no DRA gate (its only --feature-gates are
// group scheduling's on 1.37, up.sh --group-scheduling), so each release
// runs with its own DRA defaults. On 1.35 the alpha gates stay
// off (the cluster turns nothing on); on 1.37 device taints, device status
// and extended resources are GA, and consumable capacity, partitionable
// devices and binding conditions beta and on by default: they must stay on.
var draGates = map[string]map[string]bool{
	"1.35": {
		"DynamicResourceAllocation":    true,
		"DRAResourceClaimDeviceStatus": true,
		"DRAPrioritizedList":           true,
		"DRAAdminAccess":               true,
		"DRADeviceTaints":              false,
		"DRAExtendedResource":          false,
		"DRAConsumableCapacity":        false,
		"DRAPartitionableDevices":      false,
		"DRADeviceBindingConditions":   false,
	},
	"1.37": {
		"DynamicResourceAllocation":    true,
		"DRAResourceClaimDeviceStatus": true,
		"DRAPrioritizedList":           true,
		"DRAAdminAccess":               true,
		"DRADeviceTaints":              true,
		"DRADeviceTaintRules":          true,
		"DRAExtendedResource":          true,
		"DRAConsumableCapacity":        true,
		"DRAPartitionableDevices":      true,
		"DRADeviceBindingConditions":   true,
	},
}

// TestDRAFeatureGatesOfTheRelease: the apiserver's
// kubernetes_feature_enabled metric says each DRA gate of draGates is as
// its release's defaults have it, and on 1.37 resource.k8s.io/v1 serves
// DeviceTaintRules (GA in 1.37; not served on 1.35, where the test skips).
func TestDRAFeatureGatesOfTheRelease(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, time.Minute)
	want, ok := draGates[release]
	if !ok {
		t.Fatalf("draGates has no entry for release %s", release)
	}
	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("the apiserver's /metrics: %v", err)
	}
	got := featureGates(raw)
	for gate, on := range want {
		state, ok := got[gate]
		if !ok {
			t.Errorf("%s: not among the apiserver's feature gates", gate)
			continue
		}
		if state != on {
			t.Errorf("%s: enabled=%v on Kubernetes %s, want %v (no component is given a DRA feature gate)", gate, state, release, on)
		}
	}
	t.Run("DeviceTaintRulesServed", func(t *testing.T) {
		needRelease(t, "1.37", "resource.k8s.io/v1 DeviceTaintRules (KEP-5055, GA in 1.37)")
		list, err := c.Client.Discovery().ServerResourcesForGroupVersion("resource.k8s.io/v1")
		if err != nil {
			t.Fatalf("discovery of resource.k8s.io/v1: %v", err)
		}
		var names []string
		for _, r := range list.APIResources {
			names = append(names, r.Name)
		}
		if !slices.Contains(names, "devicetaintrules") {
			t.Errorf("resource.k8s.io/v1 serves %v, no devicetaintrules", names)
		}
	})
}

// featureGates reads kubernetes_feature_enabled{name="G",stage="S"} 0|1
// lines of a Prometheus text page.
func featureGates(page []byte) map[string]bool {
	gates := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "kubernetes_feature_enabled{")
		if !ok {
			continue
		}
		_, rest, ok = strings.Cut(rest, `name="`)
		if !ok {
			continue
		}
		name, rest, ok := strings.Cut(rest, `"`)
		if !ok {
			continue
		}
		gates[name] = strings.HasSuffix(strings.TrimSpace(rest), " 1")
	}
	return gates
}
