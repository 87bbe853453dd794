package draplugin_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// BenchmarkPrepareUnprepare is one Prepare and one Unprepare of a claim
// of 1 or 8 VFs (one per rail) on a DGX H100's tree: CDI spec and
// checkpoint written durably (fsync) each time, as on a node. The goal of
// issue 12 is a Prepare p99 under 50 ms.
func BenchmarkPrepareUnprepare(b *testing.B) {
	rails := []string{"0000:18:00.1", "0000:40:00.1", "0000:4f:00.1", "0000:5e:00.1", "0000:9a:00.1", "0000:c0:00.1", "0000:ce:00.1", "0000:dc:00.1"}
	for _, k := range []int{1, 8} {
		b.Run(fmt.Sprintf("vfs=%d", k), func(b *testing.B) {
			n := newNode(b, "dgx-h100", 2)
			d := n.driver(b)
			ctx := context.Background()
			var rs []result
			for i, pci := range rails[:k] {
				rs = append(rs, nic(pci, fmt.Sprintf("nic%d", i)))
			}
			for i := 0; b.Loop(); i++ {
				c := claim(b, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), rs...)
				res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
				if res[c.UID].Err != nil {
					b.Fatal(res[c.UID].Err)
				}
				un, _ := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: types.UID(c.UID)}})
				if un[c.UID] != nil {
					b.Fatal(un[c.UID])
				}
			}
		})
	}
}

// BenchmarkPrepareLatency times Prepare alone (Unprepare between calls is
// not timed) and reports its p50 and p99 over the run: the number issue
// 12 sets a goal for (p99 under 50 ms).
func BenchmarkPrepareLatency(b *testing.B) {
	n := newNode(b, "dgx-h100", 2)
	d := n.driver(b)
	ctx := context.Background()
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		c := claim(b, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), nic("0000:18:00.1", "nic0"))
		start := time.Now()
		res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
		took = append(took, time.Since(start))
		if res[c.UID].Err != nil {
			b.Fatal(res[c.UID].Err)
		}
		b.StopTimer()
		if un, _ := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: c.UID}}); un[c.UID] != nil {
			b.Fatal(un[c.UID])
		}
		b.StartTimer()
	}
	slices.Sort(took)
	q := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
