package containerdev

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rails are two devices on rails 0 and 1, given out of order, each on a
// leaf of its own.
func rails(leaf0, leaf1 string) []Device {
	return []Device{
		{Resource: "railyard.io/rdma_vf", PCI: "0000:9a:00.2", PF: "0000:9a:00.0", Rail: 1, RDMA: "mlx5_9", Leaf: leaf1},
		{Resource: "railyard.io/rdma_vf", PCI: "0000:18:00.2", PF: "0000:18:00.0", Rail: 0, RDMA: "mlx5_3", Leaf: leaf0},
	}
}

// nccl keeps the NCCL variables of an environment.
func nccl(vs Vars) []string {
	var out []string
	for _, s := range vs.Strings() {
		if strings.HasPrefix(s, "NCCL_") {
			out = append(out, s)
		}
	}
	return out
}

// TestNCCLSettings: each row of the table sets its variable from its
// source when it applies; Railyard's defaults only where the pod can
// override them (Overridable: the device plugin's Allocate); the
// operator's values and what the devices and the fabric decide on every
// path; nothing without an RDMA device.
func TestNCCLSettings(t *testing.T) {
	t.Parallel()
	eth0, none := "=eth0", ""
	for _, c := range []struct {
		name string
		devs []Device
		o    EnvOptions
		want []string
	}{
		{"device plugin, nothing configured", rails("", ""), EnvOptions{NCCLIBHCA: true, Overridable: true}, []string{
			"NCCL_IB_HCA==mlx5_3,mlx5_9", "NCCL_IB_ROCE_VERSION_NUM=2", "NCCL_IB_ADDR_FAMILY=AF_INET", "NCCL_SOCKET_IFNAME=^docker,lo,virbr,net"}},
		{"CDI, nothing configured: no default", rails("", ""), EnvOptions{NCCLIBHCA: true}, []string{"NCCL_IB_HCA==mlx5_3,mlx5_9"}},
		{"merged mode: no NCCL_IB_HCA", rails("", ""), EnvOptions{Overridable: true}, []string{
			"NCCL_IB_ROCE_VERSION_NUM=2", "NCCL_IB_ADDR_FAMILY=AF_INET", "NCCL_SOCKET_IFNAME=^docker,lo,virbr,net"}},
		{"CDI, everything configured", rails("", ""), EnvOptions{NCCLIBHCA: true, NCCL: NCCL{
			CrossNIC: new(1), Profile: "ecmp", SocketIfname: &eth0, IBAddrFamily: "AF_INET6"}}, []string{
			"NCCL_IB_HCA==mlx5_3,mlx5_9", "NCCL_CROSS_NIC=1", "NCCL_IB_QPS_PER_CONNECTION=4", "NCCL_IB_SPLIT_DATA_ON_QPS=0",
			"NCCL_IB_ADDR_FAMILY=AF_INET6", "NCCL_SOCKET_IFNAME==eth0"}},
		{"adaptive routing", rails("", ""), EnvOptions{NCCL: NCCL{Profile: "adaptive-routing"}}, []string{"NCCL_IB_ADAPTIVE_ROUTING=1"}},
		{"an unknown profile sets nothing", rails("", ""), EnvOptions{NCCL: NCCL{Profile: "spine"}}, nil},
		{"socket interface set off", rails("", ""), EnvOptions{Overridable: true, NCCL: NCCL{SocketIfname: &none}}, []string{
			"NCCL_IB_ROCE_VERSION_NUM=2", "NCCL_IB_ADDR_FAMILY=AF_INET"}},
		{"each HCA on a leaf of its own: isolated rails", rails("leaf-r0", "leaf-r1"), EnvOptions{}, []string{"NCCL_CROSS_NIC=0"}},
		{"the operator's value wins over the fabric", rails("leaf-r0", "leaf-r1"), EnvOptions{NCCL: NCCL{CrossNIC: new(2)}}, []string{"NCCL_CROSS_NIC=2"}},
		{"two HCAs under one leaf", rails("tor-1", "tor-1"), EnvOptions{}, nil},
		{"a leaf unknown", rails("leaf-r0", ""), EnvOptions{}, nil},
		{"one HCA", rails("leaf-r0", "leaf-r1")[1:], EnvOptions{}, nil},
		{"no RDMA device", []Device{{Resource: "r", PCI: "0000:18:00.2", Rail: 0}}, EnvOptions{NCCLIBHCA: true, Overridable: true, NCCL: NCCL{CrossNIC: new(0)}}, nil},
	} {
		if diff := cmp.Diff(c.want, nccl(Env(c.devs, c.o))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestNCCLProfiles: every profile names a documented variable of the
// table, and ProfileNames lists them.
func TestNCCLProfiles(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"adaptive-routing", "ecmp"}, ProfileNames()); diff != "" {
		t.Errorf("ProfileNames (-want +got):\n%s", diff)
	}
	rows := map[string]bool{}
	for _, s := range Settings {
		rows[s.Name] = true
	}
	for _, p := range Profiles {
		for _, v := range p.Vars {
			if !rows[v.Name] {
				t.Errorf("profile %s sets %s, which is no row of Settings", p.Name, v.Name)
			}
		}
	}
}

// TestNCCLSettingsAreDocumented: docs/agent.md's "NCCL settings" section
// has a row for every variable of the table and each profile.
func TestNCCLSettingsAreDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/agent.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## NCCL settings")
	if !ok {
		t.Fatal(`docs/agent.md has no "## NCCL settings" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	for _, s := range Settings {
		if !strings.Contains(sec, "| `"+s.Name+"` |") {
			t.Errorf("docs/agent.md, NCCL settings: no row for %s", s.Name)
		}
	}
	for _, p := range Profiles {
		if !strings.Contains(sec, "`"+p.Name+"`") {
			t.Errorf("docs/agent.md, NCCL settings: profile %s not described", p.Name)
		}
	}
}

// runtimeEnv is the environment a container's process starts with, as
// kubelet (v1.35 pkg/kubelet/kubelet_pods.go GenerateRunContainerOptions:
// the device plugins' variables, then the container's own), containerd's
// CRI (container_create.go: the image's, then the CRI request's, through
// oci.WithEnv: replaceOrAppendEnvValues), the CDI library (applied after,
// ociedit addEnv: a variable already there is replaced in place) and
// runc (of two values of a variable, the last) build it.
func runtimeEnv(image []string, devicePlugin Vars, pod []string, cdi Vars) map[string]string {
	env := append(append(append([]string{}, image...), devicePlugin.Strings()...), pod...)
	for _, e := range cdi.Strings() {
		k, _, _ := strings.Cut(e, "=")
		replaced := false
		for i, o := range env {
			if ok, _, _ := strings.Cut(o, "="); ok == k {
				env[i], replaced = e, true
			}
		}
		if !replaced {
			env = append(env, e)
		}
	}
	out := map[string]string{}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		out[k] = v // the last wins
	}
	return out
}

// TestNCCLPodEnvironmentWins: the precedence rule. A variable in the pod
// spec wins over Railyard's on the device plugin's path (kubelet and the
// runtime put it last); on a CDI path (late binding, DRA) the runtime
// applies Railyard's edits over the pod spec, so Env sets there no
// default, and the pod's own choice stays. What the operator configured
// wins over the pod on a CDI path: it is the node's policy.
func TestNCCLPodEnvironmentWins(t *testing.T) {
	t.Parallel()
	pod := []string{"NCCL_SOCKET_IFNAME==eth1", "NCCL_IB_ADDR_FAMILY=AF_INET6"}
	image := []string{"NCCL_SOCKET_IFNAME=eth"}
	dp := runtimeEnv(image, Env(rails("", ""), EnvOptions{NCCLIBHCA: true, Overridable: true}), pod, nil)
	cdi := runtimeEnv(image, nil, pod, Env(rails("", ""), EnvOptions{NCCLIBHCA: true}))
	for name, env := range map[string]map[string]string{"device plugin": dp, "CDI": cdi} {
		got := map[string]string{"NCCL_SOCKET_IFNAME": env["NCCL_SOCKET_IFNAME"], "NCCL_IB_ADDR_FAMILY": env["NCCL_IB_ADDR_FAMILY"], "NCCL_IB_HCA": env["NCCL_IB_HCA"]}
		want := map[string]string{"NCCL_SOCKET_IFNAME": "=eth1", "NCCL_IB_ADDR_FAMILY": "AF_INET6", "NCCL_IB_HCA": "=mlx5_3,mlx5_9"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the pod's own variables (-want +got):\n%s", name, diff)
		}
	}
	if got := dp["NCCL_IB_ROCE_VERSION_NUM"]; got != "2" {
		t.Errorf("device plugin: NCCL_IB_ROCE_VERSION_NUM %q, want Railyard's default 2 where the pod sets none", got)
	}
	eth0 := "=eth0"
	policy := runtimeEnv(image, nil, pod, Env(rails("", ""), EnvOptions{NCCL: NCCL{SocketIfname: &eth0}}))
	if got := policy["NCCL_SOCKET_IFNAME"]; got != "=eth0" {
		t.Errorf("CDI with ncclSocketIfname: %q, want the operator's =eth0", got)
	}
}
