package cni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/cni/sysfstest"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// env is what every test shares: a CNI_PATH holding the freshly built
// railyard-cni and the installed reference tools.
var env struct {
	skip    string
	cniPath string
	cnitool string
}

// testRootEnv lets the railyard-cni these tests run use their temporary
// state, sysfs and log paths (config.TestRootEnv), as a test cluster's
// containerd does.
var testRootEnv = config.TestRootEnv + "=" + os.TempDir()

func TestMain(m *testing.M) {
	// libcni runs railyard-cni with this process's environment.
	os.Setenv(config.TestRootEnv, os.TempDir())
	code := func() int {
		tools := os.Getenv("RAILYARD_CNI_TOOLS")
		if tools == "" {
			tools, _ = filepath.Abs("../../_output/tools/cni")
		}
		dir, err := os.MkdirTemp("", "railyard-cni-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		switch {
		case os.Geteuid() != 0:
			env.skip = "needs root for network namespaces"
		case !exists(filepath.Join(tools, "cnitool")) || !exists(filepath.Join(tools, "host-local")) || !exists(filepath.Join(tools, "host-device")):
			env.skip = "needs cnitool, host-local and host-device in " + tools + " (run hack/install-cni-tools.sh)"
		default:
			// Built as the image builds it (Dockerfile): static, no
			// symbols; the benchmark measures the binary that ships.
			build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, "railyard-cni"), "../../cmd/railyard-cni")
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			out, err := build.CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "building railyard-cni: %v\n%s", err, out)
				return 1
			}
			for _, t := range []string{"host-local", "host-device"} {
				if err := os.Symlink(filepath.Join(tools, t), filepath.Join(dir, t)); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
			}
			env.cniPath, env.cnitool = dir, filepath.Join(tools, "cnitool")
		}
		return m.Run()
	}()
	os.Exit(code)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func require(t testing.TB) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	netnstest.Require(t)
}

// node is one test's world: a veth end on the host standing in for a VF
// with a PCI address in a fake sysfs, pod namespaces, a state directory and
// a host-local data directory.
type node struct {
	t        *testing.T
	dir      string
	sysfs    *sysfstest.Tree
	stateDir string
	netDir   string
	devs     map[string]string // PCI address -> host netdev
	orig     map[string]netops.Link
	peer     string
}

func newNode(t *testing.T) *node {
	t.Helper()
	require(t)
	dir := t.TempDir()
	tree, err := sysfstest.New(filepath.Join(dir, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, dir: dir, sysfs: tree, stateDir: filepath.Join(dir, "state"), netDir: filepath.Join(dir, "net.d"),
		devs: map[string]string{}, orig: map[string]netops.Link{}}
	n.peer = netnstest.NewNetns(t, "peer")
	if err := os.MkdirAll(n.netDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return n
}

// addVF creates a veth standing in for the VF at pci.
func (n *node) addVF(pci string) string {
	n.t.Helper()
	name := netnstest.Name("vf")
	netnstest.NewVeth(n.t, name, n.peer)
	netnstest.IP(n.t, "link", "set", name, "mtu", "1400", "address", "02:42:ac:11:00:0"+pci[len(pci)-1:], "alias", "host vf "+pci)
	netnstest.IP(n.t, "link", "property", "add", "dev", name, "altname", netnstest.Name("alt"))
	netnstest.IP(n.t, "link", "set", name, "up")
	if err := n.sysfs.AddNetdev(pci, name); err != nil {
		n.t.Fatal(err)
	}
	l, err := netops.Linux{}.Link(ctx, netops.Host, name)
	if err != nil {
		n.t.Fatal(err)
	}
	n.devs[pci], n.orig[pci] = name, l
	return name
}

// network writes a conflist named name for railyard-cni with host-local on
// subnet; extra fields go into the plugin config.
func (n *node) network(name, subnet string, extra map[string]any) {
	n.t.Helper()
	plugin := map[string]any{
		"type": "railyard-cni", "mtu": 9000, "stateDir": n.stateDir, "sysfsRoot": n.sysfs.Root,
		"lockTimeout":  "3s",
		"capabilities": map[string]bool{"deviceID": true},
		"ipam": map[string]any{"type": "host-local", "dataDir": filepath.Join(n.dir, "ipam"),
			"ranges": [][]map[string]string{{{"subnet": subnet}}}},
	}
	for k, v := range extra {
		plugin[k] = v
	}
	list := map[string]any{"cniVersion": "1.1.0", "name": name, "plugins": []any{plugin}}
	b, err := json.Marshal(list)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.netDir, name+".conflist"), b, 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// cnitool runs cnitool verb for network net on netns with deviceID passed
// as a runtime capability (as Multus does), returning stdout and the error.
func (n *node) cnitool(verb, net, netns, pci string) (string, error) {
	cmd := exec.Command(env.cnitool, verb, net, netns)
	cmd.Env = append(os.Environ(), "CNI_PATH="+env.cniPath, "NETCONFPATH="+n.netDir, "CNI_IFNAME=net1", testRootEnv)
	if pci != "" {
		cmd.Env = append(cmd.Env, `CAP_ARGS={"deviceID":"`+pci+`"}`)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("cnitool %s: %w: %s%s", verb, err, stdout.String(), stderr.String())
	}
	return stdout.String(), err
}

// assertHome checks the device at pci is on the host exactly as created
// and no record is left.
func (n *node) assertHome(pci string) {
	n.t.Helper()
	want := n.orig[pci]
	l, err := netops.Linux{}.Link(ctx, netops.Host, want.Name)
	if err != nil {
		n.t.Fatalf("device %s not on the host as %s: %v", pci, want.Name, err)
	}
	if l.Index != want.Index || l.MTU != want.MTU || l.MAC.String() != want.MAC.String() || l.Up != want.Up ||
		l.Alias != want.Alias || strings.Join(l.AltNames, ",") != strings.Join(want.AltNames, ",") {
		n.t.Errorf("host link %+v MAC %s, want %+v MAC %s", l, l.MAC, want, want.MAC)
	}
	if exists(filepath.Join(n.stateDir, "devices", pci+".json")) {
		n.t.Errorf("record of %s left", pci)
	}
}

// podLinks lists the links in a pod namespace other than lo.
func podLinks(t testing.TB, netns string) []string {
	out := netnstest.IP(t, "-n", filepath.Base(netns), "-o", "link", "show")
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[1] != "lo:" {
			names = append(names, strings.TrimSuffix(strings.Split(f[1], "@")[0], ":"))
		}
	}
	return names
}

// ipamFiles counts host-local's allocation files (addresses held).
func (n *node) ipamFiles(net string) int {
	entries, _ := os.ReadDir(filepath.Join(n.dir, "ipam", net))
	c := 0
	for _, e := range entries {
		if strings.Count(e.Name(), ".") == 3 {
			c++
		}
	}
	return c
}
