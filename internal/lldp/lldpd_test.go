package lldp

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// leaf is a real lldpd acting as a leaf switch on one end of a veth pair
// inside its own network namespace (Linux bridges do not forward LLDP, so
// in the test cluster's fabric each leaf speaks LLDP itself).
type leaf struct {
	netns, port string
}

// startLeaf runs lldpd in a new network namespace on the peer of a new
// veth whose host end (returned) stands in for a NIC port. It configures
// the system name, interface-name port IDs and a 1 s transmit interval,
// as docs/e2e.md's fabric does.
func startLeaf(t *testing.T, sysName string) (hostPort string, l leaf) {
	t.Helper()
	netnstest.Require(t)
	for _, bin := range []string{"lldpd", "lldpcli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs Debian's lldpd (%s; hack/install-deps.sh installs it)", bin)
		}
	}
	ns := netnstest.NewNetns(t, "lf")
	nsName := filepath.Base(ns)
	hostPort = netnstest.Name("h")
	netnstest.IP(t, "link", "add", hostPort, "type", "veth", "peer", "name", "swp1", "netns", nsName)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostPort).Run() })
	netnstest.IP(t, "link", "set", hostPort, "up")
	netnstest.IP(t, "-n", nsName, "link", "set", "swp1", "up")

	// lldpd creates its control socket after dropping to its own user,
	// which cannot enter t.TempDir's 0700 directories.
	dir, err := os.MkdirTemp("", "railyard-lldpd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock, pid := filepath.Join(dir, "lldpd.sock"), filepath.Join(dir, "lldpd.pid")
	cmd := exec.Command("ip", "netns", "exec", nsName, "lldpd", "-d", "-u", sock, "-p", pid, "-I", "swp1", "-S", "test leaf")
	log := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting lldpd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("lldpd log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for _, args := range [][]string{
		{"configure", "system", "hostname", sysName},
		{"configure", "lldp", "portidsubtype", "ifname"},
		{"configure", "lldp", "tx-interval", "1"},
	} {
		for {
			out, err := exec.Command("ip", append([]string{"netns", "exec", nsName, "lldpcli", "-u", sock}, args...)...).CombinedOutput()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("lldpcli %s: %v: %s", strings.Join(args, " "), err, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return hostPort, leaf{netns: nsName, port: "swp1"}
}

func TestReceiveRealLLDPFromLldpd(t *testing.T) {
	hostPort, l := startLeaf(t, "leaf-rail3")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// lldpd's first frames can go out before lldpcli renamed the system
	// and the port ID subtype: wait for the configured ones.
	var nb Neighbor
	for {
		var err error
		nb, err = Receive(ctx, hostPort)
		if err != nil {
			t.Fatalf("Receive(%s): %v", hostPort, err)
		}
		if nb.SystemName == "leaf-rail3" && nb.PortID == l.port {
			break
		}
	}
	if nb.PortIDType != "Interface Name" {
		t.Errorf("PortIDType = %q, want Interface Name", nb.PortIDType)
	}
	if nb.ChassisIDType != "MAC Address" || len(nb.ChassisID) != len("aa:bb:cc:dd:ee:ff") {
		t.Errorf("chassis = %q (%s), want lldpd's MAC chassis ID", nb.ChassisID, nb.ChassisIDType)
	}
	if nb.TTL <= 0 || nb.TTL > 10*time.Minute {
		t.Errorf("TTL = %s, want lldpd's few seconds", nb.TTL)
	}
	if nb.Switch() != "leaf-rail3" {
		t.Errorf("Switch() = %q", nb.Switch())
	}
	if nb.SystemDescription != "test leaf" {
		t.Errorf("SystemDescription = %q, want lldpd's -S", nb.SystemDescription)
	}
}

func TestReceiveAllSaysWhyAPortHasNoNeighbor(t *testing.T) {
	hostPort, _ := startLeaf(t, "leaf-rail0")
	silent := netnstest.Name("s")
	ns := netnstest.NewNetns(t, "sl")
	netnstest.NewVeth(t, silent, ns)
	netnstest.IP(t, "link", "set", silent, "up")
	down := netnstest.Name("d")
	netnstest.NewVeth(t, down, ns)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	res := ReceiveAll(ctx, []string{hostPort, silent, down, "nosuchport0"})
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("ReceiveAll took %s past its 3 s wait", took)
	}
	if res[0].Err != nil || res[0].Neighbor == nil {
		t.Errorf("port with lldpd: %v", res[0].Err)
	}
	if !errors.Is(res[1].Err, ErrNoFrame) {
		t.Errorf("silent port: err = %v, want ErrNoFrame", res[1].Err)
	}
	if res[2].Err == nil || !strings.Contains(res[2].Err.Error(), "is down") {
		t.Errorf("down port: err = %v, want it to say the port is down", res[2].Err)
	}
	if res[3].Err == nil || !strings.Contains(res[3].Err.Error(), "nosuchport0") {
		t.Errorf("missing port: err = %v", res[3].Err)
	}
	for i, r := range res {
		if r.Port == "" {
			t.Errorf("result %d names no port", i)
		}
	}
}
