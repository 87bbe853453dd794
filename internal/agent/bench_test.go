package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"

	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

// BenchmarkVFAdvertise measures the time from creating one VF in the fake
// tree (fakesysfs.AddVFs, as writing sriov_numvfs does; its own file writes
// are included) to the VF appearing on a ListAndWatch stream, on a node
// with 16 PFs x 120 VFs (1920 VFs, growing by one per iteration; at most
// 128 iterations). The periodic resync is 1h: only file watches act.
// Goal: under 2 s.
func BenchmarkVFAdvertise(b *testing.B) {
	d, err := fakesysfs.DualRailNode()
	if err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, "roce-8gpu-4nic", 0) // directories only; the tree is replaced below
	if err := fakesysfs.Cleanup(e.sysfs); err != nil {
		b.Fatal(err)
	}
	if err := fakesysfs.Generate(e.sysfs, d, fakesysfs.Options{VFsPerPF: 120, TotalVFs: 248}); err != nil {
		b.Fatal(err)
	}
	e.makeDevNodes(b)
	reg := kubelettest.StartRegistrar(b, e.pluginDir)
	podrestest.Start(b, e.podSock)
	start(b, e.args(e.writeConfig(b, `apiVersion: railyard.io/v1alpha1
kind: AgentConfig
resyncInterval: 1h
pools: [{name: railyard.io/rdma_vf, deviceKind: vf, policy: spread, selectors: {}}]
`)), nil)
	reg.WaitAll(b, vfRes)
	st := watch(b, dial(b, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes))))
	count := 1920
	st.next(b, "1920 VFs", 30*time.Second, func(h map[string]string) bool { return len(h) == count })
	pfs, err := fakesysfs.PFs(e.sysfs)
	if err != nil || len(pfs) != 16 {
		b.Fatalf("PFs %v %v", pfs, err)
	}
	var samples []time.Duration
	i := 0
	for b.Loop() {
		if i == 128 {
			b.Fatal("at most 128 iterations: use -benchtime=Nx with N <= 128")
		}
		began := time.Now()
		if err := fakesysfs.AddVFs(e.sysfs, pfs[i%len(pfs)], 1); err != nil {
			b.Fatal(err)
		}
		count++
		st.next(b, fmt.Sprintf("%d VFs", count), 10*time.Second, func(h map[string]string) bool { return len(h) == count })
		samples = append(samples, time.Since(began))
		i++
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1e3, "p50-ms")
	b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1e3, "max-ms")
}
