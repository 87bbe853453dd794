package draplugin_test

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/internal/draview"
)

// sharedPool is a DRA pool of the node's NICs, 2 shares each.
var sharedPool = v1alpha1.Pool{Name: "railyard.io/rdma_shared", DeviceKind: v1alpha1.KindShared, SharedLimit: ptr.To(2),
	Delivery: v1alpha1.DeliveryDRA, Selectors: v1alpha1.Selectors{LinkLayers: []string{"InfiniBand"}}}

// sharedDriver is a driver of a DGX H100's shared pool on a server that
// keeps consumable capacity (1.37).
func sharedDriver(t *testing.T) (*fakeNode, *draplugin.Driver) {
	t.Helper()
	n := newNode(t, "dgx-h100", 0, sharedPool)
	d := n.driver(t)
	if err := d.SetServerFeatures(context.Background(), draplugin.ServerFeatures{ConsumableCapacity: true}); err != nil {
		t.Fatal(err)
	}
	return n, d
}

// shareClaim is a claim of shares of the shared pool, as the 1.37
// scheduler allocates them: each result with its own share ID.
func shareClaim(t *testing.T, uid string, pcis ...string) *resourceapi.ResourceClaim {
	t.Helper()
	var rs []result
	for i, pci := range pcis {
		rs = append(rs, result{driver: dra.DriverName, pool: node + "/rdma-shared", pci: pci, request: "nic" + string(rune('0'+i))})
	}
	c := claim(t, uid, rs...)
	for i := range c.Status.Allocation.Devices.Results {
		c.Status.Allocation.Devices.Results[i].ShareID = ptr.To(types.UID(uid[:len(uid)-1] + string(rune('a'+i))))
	}
	return c
}

func prepare(t *testing.T, d *draplugin.Driver, c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	t.Helper()
	res, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatal(err)
	}
	return res[c.UID]
}

// viewShares is, per claim UID, the share IDs its devices have in the
// DRA view railyard-cni reads.
func viewShares(t *testing.T, n *fakeNode) map[string][]string {
	t.Helper()
	v, err := draview.Read(n.view)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, c := range v.Claims {
		for _, d := range c.Devices {
			out[c.UID] = append(out[c.UID], d.ShareID())
		}
	}
	return out
}

const (
	uidS1 = "0f1e2d3c-aaaa-4bbb-8ccc-000000000011"
	uidS2 = "0f1e2d3c-aaaa-4bbb-8ccc-000000000012"
	uidS3 = "0f1e2d3c-aaaa-4bbb-8ccc-000000000013"
)

// Two claims share one NIC of 2 shares: each is prepared with the NIC's
// verbs device and its share ID, and gets its own share index in the DRA
// view (0, then 1); a third claim finds no share index left (the
// scheduler would not allocate it: the capacity is the same limit). The
// index stays its claim's across an agent restart, and an unprepared
// claim's index goes to the next claim.
func TestPrepareSharesOfOneNIC(t *testing.T) {
	n, d := sharedDriver(t)
	const pci = "0000:18:00.0"
	for _, uid := range []string{uidS1, uidS2} {
		r := prepare(t, d, shareClaim(t, uid, pci))
		if r.Err != nil {
			t.Fatalf("claim %s: %v", uid, r.Err)
		}
		if len(r.Devices) != 1 || r.Devices[0].ShareID == nil || !strings.HasPrefix(string(*r.Devices[0].ShareID), uid[:len(uid)-1]) {
			t.Fatalf("claim %s: devices %+v, want its share ID", uid, r.Devices)
		}
		if s := n.spec(t, types.UID(uid)); len(s.Devices) != 1 || len(s.Devices[0].ContainerEdits.DeviceNodes) == 0 ||
			!strings.Contains(s.Devices[0].ContainerEdits.DeviceNodes[0].Path, "uverbs") {
			t.Errorf("claim %s: CDI spec %+v, want the NIC's verbs device", uid, s.Devices)
		}
	}
	want := map[string][]string{uidS1: {pci + "-s0"}, uidS2: {pci + "-s1"}}
	if got := viewShares(t, n); !equalShares(got, want) {
		t.Errorf("view shares %v, want %v", got, want)
	}
	if r := prepare(t, d, shareClaim(t, uidS3, pci)); r.Err == nil || !strings.Contains(r.Err.Error(), "all 2 shares are held") {
		t.Errorf("a third claim on a NIC of 2 shares: %v", r.Err)
	}

	// A restart keeps each claim's share index; preparing again gives the
	// same answer.
	d2 := n.driver(t)
	if err := d2.SetServerFeatures(context.Background(), draplugin.ServerFeatures{ConsumableCapacity: true}); err != nil {
		t.Fatal(err)
	}
	if r := prepare(t, d2, shareClaim(t, uidS2, pci)); r.Err != nil {
		t.Fatalf("claim 2 again after a restart: %v", r.Err)
	}
	if got := viewShares(t, n); !equalShares(got, want) {
		t.Errorf("after a restart: view shares %v, want %v", got, want)
	}
	// Claim 1 goes: its index 0 is the next claim's.
	if res, err := d2.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: uidS1}}); err != nil || res[uidS1] != nil {
		t.Fatalf("unprepare: %v %v", res, err)
	}
	if r := prepare(t, d2, shareClaim(t, uidS3, pci)); r.Err != nil {
		t.Fatalf("claim 3 after claim 1 went: %v", r.Err)
	}
	want = map[string][]string{uidS2: {pci + "-s1"}, uidS3: {pci + "-s0"}}
	if got := viewShares(t, n); !equalShares(got, want) {
		t.Errorf("view shares %v, want %v", got, want)
	}
}

// A claim whose two requests got shares of one NIC (no distinctAttribute)
// is refused with the constraint that prevents it; the same claim on two
// NICs is prepared.
func TestPrepareRefusesTwoSharesOfOneNICInAClaim(t *testing.T) {
	_, d := sharedDriver(t)
	r := prepare(t, d, shareClaim(t, uidS1, "0000:18:00.0", "0000:18:00.0"))
	if r.Err == nil || !strings.Contains(r.Err.Error(), "distinctAttribute: resource.kubernetes.io/pciBusID") {
		t.Fatalf("two shares of one NIC in a claim: %v, want the distinctAttribute hint", r.Err)
	}
	if r := prepare(t, d, shareClaim(t, uidS1, "0000:18:00.0", "0000:29:00.0")); r.Err != nil || len(r.Devices) != 2 {
		t.Errorf("two NICs: %+v", r)
	}
}

// A shared pool on a server that drops consumable capacity publishes no
// NIC, and a claim naming one says why.
func TestSharedPoolWithoutConsumableCapacity(t *testing.T) {
	n := newNode(t, "dgx-h100", 0, sharedPool)
	d := n.driver(t)
	rec := record(t, d)
	res, _ := rec.last()
	if got := published(res, node+"/rdma-shared"); len(got) != 0 {
		t.Errorf("published %v without consumable capacity", got)
	}
	if r := prepare(t, d, shareClaim(t, uidS1, "0000:18:00.0")); r.Err == nil || !strings.Contains(r.Err.Error(), dra.NoConsumableCapacity) {
		t.Errorf("claim of an unpublished shared NIC: %v", r.Err)
	}
	if err := d.SetServerFeatures(context.Background(), draplugin.ServerFeatures{ConsumableCapacity: true}); err != nil {
		t.Fatal(err)
	}
	res, _ = rec.last()
	if got := published(res, node+"/rdma-shared"); len(got) != 10 {
		t.Errorf("with consumable capacity: %d NICs published, want the 10 InfiniBand NICs", len(got))
	}
}

func equalShares(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, ",") != strings.Join(b[k], ",") {
			return false
		}
	}
	return true
}
