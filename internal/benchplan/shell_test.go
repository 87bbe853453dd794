package benchplan

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/internal/exectest"
)

// The client's sh -c command keeps hostile values as single arguments: it
// is run here by a real sh, with a stand-in perftest that prints its
// arguments.
func TestClientCommandQuotesEverything(t *testing.T) {
	bin := t.TempDir()
	stub := "#!/bin/sh\nfor a in \"$@\"; do printf '<%s>\\n' \"$a\"; done\n"
	exectest.WriteExecutable(t, filepath.Join(bin, "ib_write_bw"), []byte(stub))
	o := baseOptions()
	o.Tests, o.Variants = []Test{Perftest}, []Variant{RDMA}
	o.ServerAddress = "server.example"
	o.PerftestArgs = []string{"-a", "--comment=$(touch pwned); `id`", "it's"}
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := objs[2].(*corev1.Pod).Spec.Containers[0].Command
	sh := exec.Command(cmd[0], cmd[1:]...)
	sh.Dir = t.TempDir()
	sh.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	for _, e := range objs[2].(*corev1.Pod).Spec.Containers[0].Env { // as the kubelet sets them
		sh.Env = append(sh.Env, e.Name+"="+e.Value)
	}
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "<-a>\n<--comment=$(touch pwned); `id`>\n<it's>\n<server.example>\n"
	if string(out) != want {
		t.Errorf("arguments seen by perftest:\n%s\nwant:\n%s", out, want)
	}
	if _, err := os.Stat(filepath.Join(sh.Dir, "pwned")); err == nil {
		t.Error("a command substitution in an argument ran")
	}
}

// Addresses must be IP addresses or DNS names; node names must be usable
// as the kubernetes.io/hostname label value.
func TestAddressAndNodeValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Options)
		want string
	}{
		"injected address": {func(o *Options) { o.ServerAddress = "1.2.3.4; id #" }, `server address "1.2.3.4; id #": want an IP address or a DNS name`},
		"address spaces":   {func(o *Options) { o.ServerAddress = "a b" }, "want an IP address or a DNS name"},
		"node with space":  {func(o *Options) { o.Nodes = []string{"node-a", "node b"} }, `nodes[1] "node b"`},
		"node too long":    {func(o *Options) { o.Nodes = []string{"node-a", strings.Repeat("n", 64)} }, "nodes[1]"},
		"node with quote":  {func(o *Options) { o.Nodes = []string{"a'b", "node-b"} }, `nodes[0] "a'b"`},
		"perftest suffix":  {func(o *Options) { o.Perftest = "ib_write_bw;id" }, "want an ib_* binary"},
		"env name":         {func(o *Options) { o.NCCLEnv = []corev1.EnvVar{{Name: "A B", Value: "1"}} }, `nccl env "A B"`},
	} {
		o := baseOptions()
		tc.mod(&o)
		if _, err := Objects(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	for _, ok := range []string{"192.168.100.10", "fd00::10", "bench-server.bench.svc.cluster.local"} {
		o := baseOptions()
		o.ServerAddress = ok
		if _, err := Objects(o); err != nil {
			t.Errorf("address %s: %v", ok, err)
		}
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"ib_write_bw": "ib_write_bw", "-a": "-a", "--report_gbits": "--report_gbits", "10.0.0.1": "10.0.0.1",
		"a b": "'a b'", "it's": `'it'\''s'`, "": "''", "$HOME": "'$HOME'",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
