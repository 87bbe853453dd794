package binding

import (
	"context"
	"fmt"
	"testing"
)

// benchmarkBind binds and releases an 8-GPU pod (one token per GPU, on
// its GPU's NUMA node) on a DGX H100 with vfs VFs per NIC. With cold, every
// iteration uses a new Store, as railyard-cni does (one process per ADD):
// it parses the view and builds the topology and the policy's index again.
// The time includes the PodResources-free part of a bind: lock, read,
// policy, fsynced commit, 16 spec and device-info files.
func benchmarkBind(b *testing.B, vfs int, cold bool) {
	v, tp := testView(b, "dgx-h100", vfs)
	s := newTestStore(b, v, Options{})
	taken := map[string]bool{}
	req := Request{Pod: PodRef{Namespace: "ns", Name: "p"}, Sandbox: "sb", By: ByCNI}
	for _, g := range tp.GPUs {
		req.Containers = append(req.Containers, ContainerTokens{Name: fmt.Sprint("c", len(req.Containers)), Tokens: freeTokens(b, s, v, g.NUMA, 1, taken), GPUs: []string{g.PCI}})
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		st := s
		if cold {
			st = NewStore(s.Dir(), Options{})
		}
		res, err := st.Bind(ctx, req)
		if err != nil || res.Bound != len(tp.GPUs) {
			b.Fatalf("bound %d: %v", res.Bound, err)
		}
		b.StopTimer()
		if _, err := s.ReleaseSandbox(ctx, req.Pod, "sb"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func BenchmarkBind8GPUPodCold8VFs(b *testing.B)  { benchmarkBind(b, 8, true) }
func BenchmarkBind8GPUPodWarm8VFs(b *testing.B)  { benchmarkBind(b, 8, false) }
func BenchmarkBind8GPUPodCold64VFs(b *testing.B) { benchmarkBind(b, 64, true) }
func BenchmarkBind8GPUPodWarm64VFs(b *testing.B) { benchmarkBind(b, 64, false) }
