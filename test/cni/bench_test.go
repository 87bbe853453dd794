package cni

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/cni/sysfstest"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// benchPlugin is one plugin under benchmark with its own veth and pod.
type benchPlugin struct {
	name     string
	binary   string
	conf     []byte
	netns    string
	add, del []time.Duration // one per iteration
}

func (p *benchPlugin) exec(b *testing.B, command, containerID string) time.Duration {
	cmd := exec.Command(p.binary)
	cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + containerID, "CNI_NETNS=" + p.netns,
		"CNI_IFNAME=net1", "CNI_PATH=" + env.cniPath, "PATH=" + os.Getenv("PATH"), testRootEnv}
	cmd.Stdin = bytes.NewReader(p.conf)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s %s: %v: %s", p.name, command, err, out.String())
	}
	return d
}

// BenchmarkAddDelVsHostDevice execs railyard-cni and the reference
// host-device plugin directly, with the same environment, alternating them
// in every iteration, each moving its own veth into its own netns (with
// host-local IPAM, or none). It reports the median ADD and DEL latency of
// each and the ratios of the medians, railyard/host-device (goal: < 0.5):
// on a shared machine a median is what a few slow runs do not move.
func BenchmarkAddDelVsHostDevice(b *testing.B) {
	for _, withIPAM := range []bool{true, false} {
		b.Run(fmt.Sprintf("ipam=%v", withIPAM), func(b *testing.B) { benchAddDel(b, withIPAM) })
	}
}

func benchAddDel(b *testing.B, withIPAM bool) {
	require(b)
	dir := b.TempDir()
	tree, err := sysfstest.New(filepath.Join(dir, "sys"))
	if err != nil {
		b.Fatal(err)
	}
	peer := netnstest.NewNetns(b, "peer")
	ipam := func(subnet string) string {
		if !withIPAM {
			return ""
		}
		return fmt.Sprintf(`,"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":%q}]]}`, filepath.Join(dir, "ipam"), subnet)
	}
	ryDev, hdDev := netnstest.Name("ry"), netnstest.Name("hd")
	for _, d := range []string{ryDev, hdDev} {
		netnstest.NewVeth(b, d, peer)
		netnstest.IP(b, "link", "set", d, "up")
	}
	const pci = "0000:7e:00.1"
	if err := tree.AddNetdev(pci, ryDev); err != nil {
		b.Fatal(err)
	}
	plugins := []*benchPlugin{
		{name: "railyard-cni", binary: filepath.Join(env.cniPath, "railyard-cni"), netns: netnstest.NewNetns(b, "ry"),
			conf: []byte(fmt.Sprintf(`{"cniVersion":"1.1.0","name":"bench-ry","type":"railyard-cni","deviceID":%q,"stateDir":%q,"sysfsRoot":%q%s}`,
				pci, filepath.Join(dir, "state"), tree.Root, ipam("192.168.220.0/24")))},
		{name: "host-device", binary: filepath.Join(env.cniPath, "host-device"), netns: netnstest.NewNetns(b, "hd"),
			conf: []byte(fmt.Sprintf(`{"cniVersion":"1.1.0","name":"bench-hd","type":"host-device","device":%q%s}`,
				hdDev, ipam("192.168.221.0/24")))},
	}
	// Warm up page cache and binaries once each.
	for _, p := range plugins {
		p.exec(b, "ADD", "warm")
		p.exec(b, "DEL", "warm")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cid := fmt.Sprintf("bench-%d", i)
		order := plugins
		if i%2 == 1 {
			order = []*benchPlugin{plugins[1], plugins[0]}
		}
		for _, p := range order {
			p.add = append(p.add, p.exec(b, "ADD", cid))
			p.del = append(p.del, p.exec(b, "DEL", cid))
		}
	}
	b.StopTimer()
	ry, hd := plugins[0], plugins[1]
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(median(ry.add)), "railyard-add-ms")
	b.ReportMetric(ms(median(hd.add)), "hostdevice-add-ms")
	b.ReportMetric(ms(median(ry.del)), "railyard-del-ms")
	b.ReportMetric(ms(median(hd.del)), "hostdevice-del-ms")
	b.ReportMetric(float64(median(ry.add))/float64(median(hd.add)), "add-ratio")
	b.ReportMetric(float64(median(ry.del))/float64(median(hd.del)), "del-ratio")
}

// median is the middle of ds (the mean of the two middle ones for an even
// count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
