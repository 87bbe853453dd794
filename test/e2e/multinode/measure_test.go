//go:build e2e

package multinode

import (
	"context"
	"encoding/json"
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
	gbps   float64
}

var rttRe = regexp.MustCompile(`min/avg/max = [0-9.]+/([0-9.]+)/`)

// measurePath pings dst from src 20 times (busybox ping, average round
// trip) and runs Railyard's TCP probe (4 streams, 3 s) from src's probe
// container to a server started in dst's.
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

	probe := []string{"/usr/local/bin/railyard", "bench", "probe", "tcp"}
	server := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, "default", dst.name, "probe", append(probe, "--listen", ":"+strconv.Itoa(port), "--wait", "1m")...)
		server <- err
	}()
	out, err = c.Exec(ctx, "default", src.name, "probe", append(probe, "--connect", ip, "--port", strconv.Itoa(port), "--duration", "3s", "--wait", "30s")...)
	if err != nil {
		t.Fatalf("probe to %s: %v\n%s", ip, err, out)
	}
	if err := <-server; err != nil {
		t.Fatalf("probe server in %s: %v", dst.name, err)
	}
	var rep struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rep); err != nil || rep.Error != "" || !(rep.End.SumReceived.BitsPerSecond > 0) {
		t.Fatalf("probe to %s: %v %q\n%s", ip, err, rep.Error, out)
	}
	n.gbps = rep.End.SumReceived.BitsPerSecond / 1e9
	return n
}

// testPaths compares, in one run, the same two pods on two nodes over rail
// 0 (their PFs, through the fabric's leaf) and over the pod network (cni0,
// the nodes' routes, the cluster bridge). Both are veths here, so the
// ratio measures the paths' hops, not an RDMA fabric.
func testPaths(ctx context.Context, t *testing.T, c *framework.MultiCluster, a, b *railPod) {
	rail := measurePath(ctx, t, c, a, b, b.railIP, 5301)
	pods := measurePath(ctx, t, c, a, b, b.podIP, 5302)
	ratio := func(x, y float64) float64 {
		if y == 0 {
			return 0
		}
		return x / y
	}
	t.Logf("%s (%s) to %s (%s): rail 0: rtt avg %v, %.2f Gb/s; pod network: rtt avg %v, %.2f Gb/s; rail/pod network: rtt %.2fx, throughput %.2fx",
		a.name, a.node, b.name, b.node, rail.rttAvg, rail.gbps, pods.rttAvg, pods.gbps,
		ratio(float64(rail.rttAvg), float64(pods.rttAvg)), ratio(rail.gbps, pods.gbps))
}

// railyardImage is the image up.sh imports into every node.
func railyardImage(t *testing.T) string {
	t.Helper()
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return "ghcr.io/railyard-io/railyard:" + imageTag(t, repo)
}
