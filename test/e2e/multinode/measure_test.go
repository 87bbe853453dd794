//go:build e2e

package multinode

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// pathNumbers are one path's latency and throughput between two pods.
type pathNumbers struct {
	rttAvg time.Duration
	mbps   float64 // MiB/s
}

var (
	rttRe  = regexp.MustCompile(`min/avg/max = [0-9.]+/([0-9.]+)/`)
	realRe = regexp.MustCompile(`real\s+(\d+)m\s*([0-9.]+)s`)
)

// measurePath pings dst from src 20 times (average round trip) and sends
// it 256 MiB over TCP with nc (wall time of the send, busybox `time`),
// checking that every byte arrived.
func measurePath(ctx context.Context, t *testing.T, c *framework.MultiCluster, src, dst *railPod, ip string, port int) pathNumbers {
	t.Helper()
	var n pathNumbers
	out, err := src.exec(ctx, c, "ping -q -c 20 -i 0.2 "+ip)
	if err != nil {
		t.Fatalf("ping %s: %v\n%s", ip, err, out)
	}
	m := rttRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ping %s: no round trip in %q", ip, out)
	}
	ms, _ := strconv.ParseFloat(m[1], 64)
	n.rttAvg = time.Duration(ms * float64(time.Millisecond))

	const mib = 256
	got := fmt.Sprintf("/tmp/n%d", port)
	if out, err := dst.exec(ctx, c, fmt.Sprintf("(sleep 3600 | nc -l -p %d 2>/dev/null | wc -c > %s) </dev/null >/dev/null 2>&1 &", port, got)); err != nil {
		t.Fatalf("listener: %v %s", err, out)
	}
	time.Sleep(300 * time.Millisecond)
	out, err = src.exec(ctx, c, fmt.Sprintf("time sh -c 'dd if=/dev/zero bs=64k count=%d 2>/dev/null | nc %s %d' 2>&1", mib*16, ip, port))
	if err != nil {
		t.Fatalf("send to %s: %v\n%s", ip, err, out)
	}
	m = realRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("send to %s: no time in %q", ip, out)
	}
	minutes, _ := strconv.ParseFloat(m[1], 64)
	secs, _ := strconv.ParseFloat(m[2], 64)
	secs += 60 * minutes
	var count string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if count, _ = dst.exec(ctx, c, "cat "+got); strings.TrimSpace(count) != "" {
			break
		}
	}
	if strings.TrimSpace(count) != strconv.Itoa(mib<<20) {
		t.Fatalf("%s received %q bytes, want %d", dst.name, count, mib<<20)
	}
	if secs > 0 {
		n.mbps = mib / secs
	}
	return n
}

// testPaths compares, in one run, the same two pods on two nodes over rail
// 0 (their PFs, through the fabric's leaf) and over the pod network (cni0,
// the nodes' routes, the cluster bridge). Both are veths here, so the
// ratio measures the paths' hops, not an RDMA fabric.
func testPaths(ctx context.Context, t *testing.T, c *framework.MultiCluster, a, b *railPod) {
	rail := measurePath(ctx, t, c, a, b, b.railIP, 5002)
	pods := measurePath(ctx, t, c, a, b, b.podIP, 5003)
	ratio := func(x, y float64) float64 {
		if y == 0 {
			return 0
		}
		return x / y
	}
	t.Logf("%s (%s) to %s (%s): rail 0: rtt avg %v, %.0f MiB/s; pod network: rtt avg %v, %.0f MiB/s; rail/pod network: rtt %.2fx, throughput %.2fx",
		a.name, a.node, b.name, b.node, rail.rttAvg, rail.mbps, pods.rttAvg, pods.mbps,
		ratio(float64(rail.rttAvg), float64(pods.rttAvg)), ratio(rail.mbps, pods.mbps))
}
