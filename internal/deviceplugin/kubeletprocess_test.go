package deviceplugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Environment of the kubelet-side helper process.
const (
	envBenchSocket = "RAILYARD_BENCH_PLUGIN_SOCKET"
	envBenchIDs    = "RAILYARD_BENCH_IDS"
	envBenchN      = "RAILYARD_BENCH_N"
)

// TestKubeletClientProcess is not a test of its own: it is the kubelet side
// of BenchmarkGetPreferredAllocation2048OtherProcess, which runs this test
// binary again with the plugin's socket in the environment. It sends N
// GetPreferredAllocation requests (2048 offered IDs, size 8) and prints
// the latencies' p50 and p99 in nanoseconds.
func TestKubeletClientProcess(t *testing.T) {
	sock := os.Getenv(envBenchSocket)
	if sock == "" {
		t.Skip("helper process of BenchmarkGetPreferredAllocation2048OtherProcess")
	}
	n, err := strconv.Atoi(os.Getenv(envBenchN))
	if err != nil || n < 1 {
		t.Fatalf("%s=%q", envBenchN, os.Getenv(envBenchN))
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := pluginapi.NewDevicePluginClient(conn)
	req := &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: strings.Split(os.Getenv(envBenchIDs), ","), AllocationSize: 8}}}
	ctx := context.Background()
	for i := 0; i < 50; i++ { // warm up the connection
		if _, err := c.GetPreferredAllocation(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	samples := make([]time.Duration, n)
	for i := range samples {
		start := time.Now()
		resp, err := c.GetPreferredAllocation(ctx, req)
		samples[i] = time.Since(start)
		if err != nil || len(resp.ContainerResponses[0].DeviceIDs) != 8 {
			t.Fatalf("%v %v", resp, err)
		}
	}
	slices.Sort(samples)
	fmt.Printf("LATENCIES %d %d\n", samples[n/2].Nanoseconds(), samples[min(n-1, n*99/100)].Nanoseconds())
	fmt.Printf("DIST p90=%v p95=%v p98=%v p99.5=%v max=%v\n", samples[n*90/100], samples[n*95/100], samples[n*98/100], samples[n*995/1000], samples[n-1])
}

// BenchmarkGetPreferredAllocation2048OtherProcess measures
// GetPreferredAllocation as kubelet sees it: the client runs in a process
// of its own (this test binary again, as TestKubeletClientProcess), so its
// request encoding and garbage do not share the plugin's CPU and heap, as
// on a node. 2048 offered VFs, 8 wanted. Goal: p99 < 1 ms.
func BenchmarkGetPreferredAllocation2048OtherProcess(b *testing.B) {
	gpus := []string{"0000:12:00.0", "0000:22:00.0", "0000:32:00.0", "0000:42:00.0", "0000:92:00.0", "0000:a2:00.0", "0000:b2:00.0", "0000:c2:00.0"}
	for _, tc := range []struct {
		name, policy string
		finder       GPUFinder
	}{{"spread", "spread", nil}, {"gpu-aware-known-gpus", "gpu-aware", fakeGPUs(gpus)}} {
		b.Run(tc.name, func(b *testing.B) {
			p, _, ids := servedBigPool(b, tc.policy, tc.finder, "")
			n := max(b.N, 2000) // run with -benchtime 1x: the helper takes its own 2000 samples
			cmd := exec.Command(os.Args[0], "-test.run=^TestKubeletClientProcess$", "-test.v")
			// The client plays kubelet, which runs with Go's default GC
			// (GOGC=100) whatever this process (the plugin) was given.
			cmd.Env = append(os.Environ(), envBenchSocket+"="+p.SocketPath(), envBenchIDs+"="+strings.Join(ids, ","), envBenchN+"="+strconv.Itoa(n), "GOGC=100")
			b.ResetTimer()
			out, err := cmd.CombinedOutput()
			b.StopTimer()
			if err != nil {
				b.Fatalf("kubelet-side process: %v\n%s", err, out)
			}
			var p50, p99 int64
			for _, line := range strings.Split(string(out), "\n") {
				if _, err := fmt.Sscanf(line, "LATENCIES %d %d", &p50, &p99); err == nil {
					break
				}
			}
			if p99 == 0 {
				b.Fatalf("no latencies in the helper's output:\n%s", out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "DIST ") {
					b.Log(line)
				}
			}
			b.ReportMetric(float64(p50)/1e3, "p50-us")
			b.ReportMetric(float64(p99)/1e3, "p99-us")
		})
	}
}
