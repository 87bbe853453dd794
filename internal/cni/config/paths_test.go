package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

// TestPathFieldsAreConfined: a path in a network configuration is not a
// licence to use it. Each path field accepts what railyard-cni owns (or a
// path below the test root given by its own environment); anything else,
// ".." climbing out of an owned directory included, is refused by ADD,
// CHECK, STATUS and GC with code 7 naming the field, and DEL keeps the
// default instead.
func TestPathFieldsAreConfined(t *testing.T) {
	const base = `{"cniVersion":"1.1.0","name":"n","type":"railyard-cni","deviceID":"0000:03:00.2",%s}`
	for _, tc := range []struct {
		field, value string
		ok           bool
		testRoot     string
		get          func(*Config) string
	}{
		{field: "stateDir", value: "/var/lib/cni/railyard", ok: true},
		{field: "stateDir", value: "/var/lib/cni/railyard/roce", ok: true},
		{field: "stateDir", value: "/var/lib/railyard/cni", ok: true},
		{field: "stateDir", value: "/etc"},
		{field: "stateDir", value: "/var/lib/cni/railyard/../../../etc/cron.d"},
		{field: "stateDir", value: "/var/lib/cni/railyard-evil"},
		{field: "stateDir", value: "/run/railyard"},
		{field: "bindingDir", value: "/var/lib/railyard/binding", ok: true},
		{field: "bindingDir", value: "/root/.ssh"},
		{field: "sysfsRoot", value: "/sys", ok: true},
		{field: "sysfsRoot", value: "/sys/..", ok: false},
		{field: "sysfsRoot", value: "/tmp/sys"},
		{field: "sysfsRoot", value: "/tmp/ry-test/sys", ok: true, testRoot: "/tmp/ry-test"},
		{field: "sysfsRoot", value: "/tmp/ry-test", testRoot: "/tmp/ry-test"},
		{field: "sysfsRoot", value: "/tmp/ry-test/../sys", testRoot: "/tmp/ry-test"},
		{field: "sysfsRoot", value: "/tmp/sys", testRoot: "/"}, // "/" opens nothing
		{field: "sysfsRoot", value: "/tmp/sys", testRoot: "tmp"},
		{field: "logFile", value: "/var/log/railyard-cni.log", ok: true},
		{field: "logFile", value: "/var/log/railyard/roce.log", ok: true},
		{field: "logFile", value: "/var/log/railyard"},
		{field: "logFile", value: "/etc/shadow"},
		{field: "logFile", value: "/root/.bashrc"},
		{field: "logFile", value: "/var/log/railyard/../../../etc/passwd"},
		{field: "podResourcesSocket", value: "/var/lib/kubelet/pod-resources/kubelet.sock", ok: true},
		{field: "podResourcesSocket", value: "/var/lib/k0s/kubelet/pod-resources/kubelet.sock", ok: true},
		{field: "podResourcesSocket", value: "/run/containerd/containerd.sock"},
		{field: "podResourcesSocket", value: "/var/run/docker.sock"},
	} {
		name := fmt.Sprintf("%s=%s,testRoot=%s", tc.field, tc.value, tc.testRoot)
		t.Run(name, func(t *testing.T) {
			conf := []byte(fmt.Sprintf(base, fmt.Sprintf("%q:%q", tc.field, tc.value)))
			var opts []Option
			if tc.testRoot != "" {
				opts = append(opts, TestRoot(tc.testRoot))
			}
			c, err := Parse(conf, opts...)
			if tc.ok {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Code() != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), tc.field+":") {
				t.Fatalf("Parse = %+v, %v; want code 7 naming %s", c, err, tc.field)
			}
			if _, err := ParseNetwork(conf, opts...); err == nil {
				t.Errorf("ParseNetwork accepted it")
			}
			d, problems := ParseDel(conf, opts...)
			if len(problems) == 0 {
				t.Errorf("ParseDel reported no problem")
			}
			def := map[string]string{"stateDir": DefaultStateDir, "bindingDir": DefaultBindingDir, "sysfsRoot": DefaultSysfsRoot,
				"logFile": "", "podResourcesSocket": DefaultPodResourcesSocket}[tc.field]
			got := map[string]string{"stateDir": d.StateDir, "bindingDir": d.BindingDir, "sysfsRoot": d.SysfsRoot,
				"logFile": d.LogFile, "podResourcesSocket": d.PodResourcesSocket}[tc.field]
			if got != def {
				t.Errorf("ParseDel used %q, want the default %q", got, def)
			}
		})
	}
}

// TestPathFieldsTableNamesEveryPathOfRaw: every raw field that names a
// host path railyard-cni writes, reads or connects to is in pathFields
// (CNIDeviceInfoFile is confined by internal/cni to the file Multus names).
func TestPathFieldsTableNamesEveryPathOfRaw(t *testing.T) {
	want := []string{"stateDir", "bindingDir", "sysfsRoot", "logFile", "podResourcesSocket"}
	var got []string
	for _, f := range pathFields {
		got = append(got, f.name)
		if !knownFields()[f.name] {
			t.Errorf("path field %s is no field of the configuration", f.name)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("path fields %v, want %v", got, want)
	}
}
