package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/fakesysfs"
)

// A NIC whose firmware the config's firmware policy refuses (older than
// its model's minimum) is marked refused at the next rediscovery: the
// device plugin advertises its VFs Unhealthy, railyard_nic_firmware_refused
// is 1 and the log says why; once the card runs an accepted release its
// VFs are Healthy again. Faked: fw_ver in the generated tree (as a card
// flashed with another release shows it), kubelet (registration stub and
// PodResources server).
func TestFirmwarePolicyRefusesAnOldRelease(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	model := pciModel(t, e.sysfs, "0000:05:00.0")
	current, err := os.ReadFile(filepath.Join(e.sysfs, "class/infiniband/mlx5_0/fw_ver"))
	if err != nil {
		t.Fatal(err)
	}
	accepted := strings.TrimSpace(string(current)) // every NIC of the tree runs it
	r, vfs := startVFAgent(t, e, `firmware:
  minimum: {"`+model+`": "`+accepted+`"}
`)
	vfs.next(t, "4 healthy VFs at the minimum", 5*time.Second, func(h map[string]string) bool {
		return len(h) == 4 && h["0000:05:00.1"] == pluginapi.Healthy && h["0000:0c:00.1"] == pluginapi.Healthy
	})
	old := strings.Replace(accepted, ".39.", ".38.", 1)
	if err := fakesysfs.SetFirmware(e.sysfs, "mlx5_0", old); err != nil {
		t.Fatal(err)
	}
	vfs.next(t, "05:00.x unhealthy on "+old, 10*time.Second, func(h map[string]string) bool {
		return h["0000:05:00.1"] == pluginapi.Unhealthy && h["0000:05:00.2"] == pluginapi.Unhealthy && h["0000:0c:00.1"] == pluginapi.Healthy
	})
	_, body := httpGet(t, "http://"+r.metrics.String()+"/metrics")
	if !strings.Contains(body, `railyard_nic_firmware_refused{firmware="`+old+`",pci="0000:05:00.0",rdma="mlx5_0"} 1`) ||
		!strings.Contains(body, `railyard_nic_firmware_refused{firmware="`+accepted+`",pci="0000:0c:00.0",rdma="mlx5_1"} 0`) {
		t.Errorf("metrics lack the refused NIC:\n%s", grepLines(body, "railyard_nic_firmware_refused"))
	}
	want := "firmware " + old + " below the minimum " + accepted + " for " + model
	if log := r.log.String(); !strings.Contains(log, "NIC refused by the firmware policy") || !strings.Contains(log, want) {
		t.Errorf("no log of the refused NIC and why (%q):\n%s", want, log)
	}
	if err := fakesysfs.SetFirmware(e.sysfs, "mlx5_0", accepted); err != nil {
		t.Fatal(err)
	}
	vfs.next(t, "05:00.x healthy once flashed", 10*time.Second, func(h map[string]string) bool {
		return h["0000:05:00.1"] == pluginapi.Healthy && h["0000:05:00.2"] == pluginapi.Healthy
	})
	if log := r.log.String(); !strings.Contains(log, "NIC no longer refused by the firmware policy") {
		t.Errorf("no log of the NIC accepted again:\n%s", log)
	}
}

// pciModel reads a PCI function's vendor:device from the tree, as lspci
// -n prints it.
func pciModel(t *testing.T, sys, addr string) string {
	t.Helper()
	var ids []string
	for _, f := range []string{"vendor", "device"} {
		b, err := os.ReadFile(filepath.Join(sys, "bus/pci/devices", addr, f))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"))
	}
	return strings.Join(ids, ":")
}
