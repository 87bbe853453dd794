package doctor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/firmware"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/sysfs"
)

type fakeRDMA struct {
	mode string
	err  error
}

func (f fakeRDMA) RDMANetnsMode(context.Context) (string, error) { return f.mode, f.err }

// fakeDCB answers DCB reads from a map; a netdev not in it has no DCB.
type fakeDCB map[string]netops.DCB

func (f fakeDCB) DCB(_ context.Context, netdev string) (netops.DCB, error) {
	d, ok := f[netdev]
	if !ok {
		return netops.DCB{}, netops.ErrDCBNotSupported
	}
	return d, nil
}

// lossless is NVIDIA's RoCE configuration: trust dscp (RoCE's DSCP 26 on
// priority 3), PFC on priority 3.
var lossless = netops.DCB{PFCCap: 8, PFC: 1 << 3, DSCP: map[uint8]uint8{26: 3}}

// env is a ready node: fakesysfs.SmallNode with 2 IB VFs with unique
// GUIDs, mlx5's counters (all zero) on the PFs, RoCE netdevs at MTU 9000, ACS off on every bridge, the IOMMU in
// passthrough, nvidia_peermem loaded and containerd unlimited.
type env struct {
	t    *testing.T
	sys  string
	host string
	opt  Options
}

const memlockUnlimited = "Limit                     Soft Limit           Hard Limit           Units\n" +
	"Max open files            1048576              1048576              files\n" +
	"Max locked memory         unlimited            unlimited            bytes\n"

func newEnv(t *testing.T) *env {
	t.Helper()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, sys: t.TempDir(), host: t.TempDir()}
	if err := fakesysfs.Generate(e.sys, d, fakesysfs.Options{TotalVFs: 16}); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fakesysfs.NewKernel(e.sys).SetNumVFs(context.Background(), "0000:18:00.0", 2))
	st, _ := sysfs.New(e.sys).SRIOV("0000:18:00.0")
	for i, v := range st.VFs {
		r, _ := sysfs.New(e.sys).RDMADevices(v.PCI)
		must(fakesysfs.SetNodeGUID(e.sys, r[0], [8]byte{0x9e, 0x9d, 0x1e, 0xa1, 0xb2, 0xc4, 0, byte(i)}))
	}
	must(fakesysfs.SetNetdevMTU(e.sys, "ens42np0", 9000))
	must(fakesysfs.SetNetdevMTU(e.sys, "ens59np0", 9000))
	for _, br := range []string{"0000:00:01.0", "0000:16:00.0", "0000:17:00.0", "0000:17:01.0", "0000:00:02.0", "0000:28:00.0", "0000:29:00.0", "0000:29:01.0", "0000:00:03.0"} {
		must(fakesysfs.WriteConfig(e.sys, br, fakesysfs.ConfigSpace{Vendor: 0x10b5, ACS: true}))
	}
	must(fakesysfs.AddIOMMU(e.sys, "dmar0", "identity"))
	for _, rdma := range []string{"mlx5_0", "mlx5_1", "mlx5_2"} {
		must(fakesysfs.WriteCounters(e.sys, rdma, fakesysfs.MLX5))
	}
	e.write("/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt\n")
	e.write("/proc/modules", "mlx5_ib 462848 0 - Live 0x0000000000000000\nnvidia_peermem 16384 0 - Live 0x0000000000000000\n")
	e.write("/proc/812/comm", "containerd\n")
	e.write("/proc/812/limits", memlockUnlimited)
	e.write("/proc/self/limits", strings.Replace(memlockUnlimited, "unlimited            unlimited", "8388608              8388608  ", 1))
	pol, err := v1alpha1.Parse([]byte("apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\npfs:\n- pciAddress: \"0000:18:00.0\"\n  numVFs: 2\n  linkLayer: InfiniBand\n"))
	must(err)
	e.opt = Options{SysfsRoot: e.sys, Host: HostFiles{Root: e.host}, Policy: pol, RDMA: fakeRDMA{mode: "exclusive"}, Root: true,
		DCB: fakeDCB{"ens42np0": lossless, "ens59np0": lossless},
		// Two counter readings, a window apart that takes no time.
		CounterWindow: DefaultCounterWindow, Wait: func(context.Context, time.Duration) error { return nil }}
	return e
}

func (e *env) write(p, content string) {
	e.t.Helper()
	full := filepath.Join(e.host, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) run() Report {
	e.t.Helper()
	r, err := Run(context.Background(), e.opt)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func TestReadyNodePassesEveryCheck(t *testing.T) {
	r := newEnv(t).run()
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if r.ExitCode() != ExitOK || r.Count(Skip) != 0 {
		t.Fatalf("exit %d:\n%s", r.ExitCode(), buf.String())
	}
	ids := map[string]bool{}
	for _, c := range r.Checks {
		ids[c.ID] = true
		if len(c.Read) == 0 {
			t.Errorf("%s %s says nothing about what it read", c.ID, c.Subject)
		}
	}
	for _, id := range []string{"gpus", "nics", "policy-pf", "gpu-nic", "pcie-link", "ports", "rdma-errors", "link-layer", "roce-gid", "roce-qos", "roce-qos-consistent", "firmware", "mtu", "sriov", "vf-guids", "rdma-netns", "memlock", "gpudirect", "acs", "iommu"} {
		if !ids[id] {
			t.Errorf("no %s check", id)
		}
	}
	if !strings.Contains(buf.String(), "0 warnings, 0 failures, 0 skipped") {
		t.Errorf("table:\n%s", buf.String())
	}
}

// Each case breaks one thing of a ready node; exactly the expected check
// (and those that necessarily follow) leaves ok, with what it says.
func TestEachFailureIsReported(t *testing.T) {
	for name, tc := range map[string]struct {
		breakIt func(e *env)
		id      string
		status  Status
		want    string // in the summary
		fix     string // in the fix ("" = no fix expected)
	}{
		"no GPUs": {func(e *env) {
			_ = fakesysfs.RemoveDevice(e.sys, "0000:19:00.0")
			_ = fakesysfs.RemoveDevice(e.sys, "0000:2b:00.0")
		}, "gpus", Fail, "no GPU found", "lspci"},
		"GPU beyond PXB": {func(e *env) {
			_ = fakesysfs.RemoveDevice(e.sys, "0000:2a:00.0")
			_ = fakesysfs.RemoveDevice(e.sys, "0000:18:00.0")
		}, "gpu-nic", Warn, "is PHB: NCCL uses GPUDirect RDMA only up to PXB", "NCCL_NET_GDR_LEVEL"},
		"port down":        {func(e *env) { _ = fakesysfs.SetPortState(e.sys, "mlx5_1", 1, fakesysfs.PortDown) }, "ports", Fail, "port is DOWN (Disabled)", "cable"},
		"wrong link layer": {func(e *env) { e.opt.Policy.PFs[0].LinkLayer = "Ethernet" }, "link-layer", Fail, "InfiniBand, the policy wants Ethernet", "LINK_TYPE_P1=2"},
		"no RoCE v2 GID":   {func(e *env) { _ = fakesysfs.RemoveRoCEv2GIDs(e.sys, "mlx5_1", 1) }, "roce-gid", Fail, "no RoCE v2 GID", "give it an IP address"},
		// Up without an IP address: the link-local GID is there, and is
		// not enough.
		"link-local RoCE v2 GID only": {func(e *env) { _ = fakesysfs.RemoveIPGIDs(e.sys, "mlx5_1", 1) }, "roce-gid", Fail, "only link-local RoCE v2 GIDs (indexes [1]", "give ens42np0 an IPv4"},
		"RoCE MTU 1500":               {func(e *env) { _ = fakesysfs.SetNetdevMTU(e.sys, "ens42np0", 1500) }, "mtu", Warn, "netdev MTU 1500 gives RoCE active_mtu 1024", "mtu 9000"},
		"IB MTU 2048":                 {func(e *env) { _ = fakesysfs.SetNetdevMTU(e.sys, "ibp24s0", 2044) }, "mtu", Warn, "the port's MTU is 2048", "mtu=5"},
		"VF count":                    {func(e *env) { e.opt.Policy.PFs[0].NumVFs = 4 }, "sriov", Fail, "2 VFs, the policy wants 4", "railyard node apply"},
		"SR-IOV off": {func(e *env) {
			e.opt.Policy.PFs = append(e.opt.Policy.PFs, v1alpha1.PF{PCIAddress: "0000:2a:00.0", NumVFs: 4})
			_ = os.WriteFile(filepath.Join(e.sys, "bus/pci/devices/0000:2a:00.0/sriov_totalvfs"), []byte("0\n"), 0o644)
		}, "sriov", Fail, "SR-IOV is off", "SRIOV_EN=1 NUM_OF_VFS=4"},
		"zero VF GUID": {func(e *env) { _ = fakesysfs.SetNodeGUID(e.sys, vfRDMA(e, 1), [8]byte{}) }, "vf-guids", Fail, "zero GUID: VF 1", "unique GUIDs"},
		"duplicate VF GUID": {func(e *env) {
			_ = fakesysfs.SetNodeGUID(e.sys, vfRDMA(e, 1), [8]byte{0x9e, 0x9d, 0x1e, 0xa1, 0xb2, 0xc4, 0, 0})
		}, "vf-guids", Fail, "has the GUID of", ""},
		"shared netns":     {func(e *env) { e.opt.RDMA = fakeRDMA{mode: "shared"} }, "rdma-netns", Warn, "shared: every pod sees every RDMA device", "netns_mode=0"},
		"netns unreadable": {func(e *env) { e.opt.RDMA = fakeRDMA{err: errors.New("protocol not supported")} }, "rdma-netns", Skip, "cannot read", ""},
		"memlock limited": {func(e *env) {
			e.write("/proc/812/limits", strings.Replace(memlockUnlimited, "unlimited            unlimited", "65536                65536    ", 1))
		}, "memlock", Warn, "limit of 65536", "LimitMEMLOCK=infinity"},
		"no peermem": {func(e *env) { e.write("/proc/modules", "mlx5_ib 462848 0 - Live 0x0\n") }, "gpudirect", Fail, "nvidia_peermem is not loaded", "modprobe nvidia_peermem"},
		"ACS redirect": {func(e *env) {
			_ = fakesysfs.WriteConfig(e.sys, "0000:17:01.0", fakesysfs.ConfigSpace{ACS: true, ACSControl: sysfs.ACSSourceValidation | sysfs.ACSP2PRequestRedirect | sysfs.ACSP2PCompletionRedir})
		}, "acs", Fail, "ACS redirects peer-to-peer traffic on 0000:17:01.0", "pci=disable_acs_redir=0000:17:01.0"},
		// Unread must never read as "no redirection".
		"ACS config unreadable": {func(e *env) {
			_ = os.Remove(filepath.Join(e.sys, "bus/pci/devices/0000:17:01.0/config"))
		}, "acs", Skip, "cannot read the ACS control of 0000:17:01.0", "lspci"},
		"ACS capability list loops": {func(e *env) {
			cfg := make([]byte, 4096)
			cfg[0x100], cfg[0x101], cfg[0x102], cfg[0x103] = 0x01, 0x00, 0x01, 0x10 // AER, next 0x100: itself
			_ = os.WriteFile(filepath.Join(e.sys, "bus/pci/devices/0000:17:01.0/config"), cfg, 0o644)
		}, "acs", Skip, "cannot read the ACS control of 0000:17:01.0", "lspci"},
		// A policy PF this node lacks is a failing line, not skipped.
		"policy PF address typo": {func(e *env) {
			e.opt.Policy.PFs = append(e.opt.Policy.PFs, v1alpha1.PF{PCIAddress: "0000:18:00.7", NumVFs: 2})
		}, "policy-pf", Fail, "no RDMA NIC at 0000:18:00.7 (no such PCI device)", "pciAddress"},
		"policy PF is a GPU": {func(e *env) {
			e.opt.Policy.PFs = append(e.opt.Policy.PFs, v1alpha1.PF{PCIAddress: "0000:19:00.0", NumVFs: 2})
		}, "policy-pf", Fail, "no RDMA NIC at 0000:19:00.0 (a GPU)", "pciAddress"},
		"policy PF unknown netdev": {func(e *env) {
			e.opt.Policy.PFs = append(e.opt.Policy.PFs, v1alpha1.PF{Netdev: "ens99np0", NumVFs: 2})
		}, "policy-pf", Fail, "no RDMA NIC has netdev ens99np0", "netdev"},
		// The most common silent bandwidth loss: a card trained below
		// its capability, or a switch port on the way.
		"NIC at x8": {func(e *env) {
			_ = fakesysfs.SetPCIeLink(e.sys, "0000:2a:00.0", fakesysfs.Link{Speed: 16, MaxSpeed: 16, Width: 8, MaxWidth: 16})
		}, "pcie-link", Fail, "0000:2a:00.0 at 16 GT/s x8 (of 16 GT/s x16)", "lspci -vv -s 0000:2a:00.0"},
		"NIC at Gen3": {func(e *env) {
			_ = fakesysfs.SetPCIeLink(e.sys, "0000:3b:00.0", fakesysfs.Link{Speed: 8, MaxSpeed: 16, Width: 16, MaxWidth: 16})
		}, "pcie-link", Fail, "0000:3b:00.0 at 8 GT/s x16 (of 16 GT/s x16)", "reseat the card"},
		"switch uplink at x4": {func(e *env) {
			_ = fakesysfs.SetPCIeLink(e.sys, "0000:16:00.0", fakesysfs.Link{Speed: 16, MaxSpeed: 16, Width: 4, MaxWidth: 16})
		}, "pcie-link", Fail, "bridge 0000:16:00.0 at 16 GT/s x4 (of 16 GT/s x16)", "lspci -vv -s 0000:16:00.0"},
		// A GPU drops its link speed when idle: a warning to check under
		// load, not a failure.
		"GPU idle at Gen1": {func(e *env) {
			_ = fakesysfs.SetPCIeLink(e.sys, "0000:19:00.0", fakesysfs.Link{Speed: 2.5, MaxSpeed: 16, Width: 16, MaxWidth: 16})
			_ = fakesysfs.SetPCIeLink(e.sys, "0000:17:00.0", fakesysfs.Link{Speed: 2.5, MaxSpeed: 16, Width: 16, MaxWidth: 16})
		}, "pcie-link", Warn, "0000:19:00.0 at 2.5 GT/s x16 (of 16 GT/s x16); bridge 0000:17:00.0 at 2.5 GT/s", "nvidia-smi -q -d PCIE"},
		// RoCE lossless configuration, without a policy's qos.
		"PFC off": {func(e *env) { e.opt.DCB.(fakeDCB)["ens42np0"] = netops.DCB{PFCCap: 8} }, "roce-qos", Warn,
			"PFC is off on every priority: RoCE here is lossy", "mlnx_qos -i ens42np0 --trust dscp --pfc 0,0,0,1,0,0,0,0"},
		// A fabric lossy by design: no PFC is fine, no ECN is not.
		"PFC and ECN off on a lossy fabric": {func(e *env) {
			e.opt.Profile = "roce-lossy"
			e.opt.DCB.(fakeDCB)["ens42np0"] = netops.DCB{PFCCap: 8}
			_ = fakesysfs.SetECN(e.sys, "ens42np0", fakesysfs.ECN{CNPDSCP: 48, CNPPrio: 6})
		}, "roce-qos", Warn, "PFC off, as the roce-lossy profile expects, and ECN off on every priority", "ecn/roce_rp/enable/3"},
		"trust pcp": {func(e *env) { e.opt.DCB.(fakeDCB)["ens42np0"] = netops.DCB{PFCCap: 8, PFC: 1 << 3} }, "roce-qos", Warn,
			"trust pcp with PFC on 3: untagged RoCE v2 traffic carries no PCP", "--trust dscp"},
		"ECN off on the PFC priority": {func(e *env) {
			_ = fakesysfs.SetECN(e.sys, "ens42np0", fakesysfs.ECN{RP: 0xf7, NP: 0xff, CNPDSCP: 48, CNPPrio: 6})
		}, "roce-qos", Warn, "ECN off on PFC priority 3 (rp 0,1,2,4,5,6,7, np 0,1,2,3,4,5,6,7)", "ecn/roce_rp/enable/3"},
		"RoCE NICs differ": {func(e *env) {
			e.opt.DCB.(fakeDCB)["ens59np0"] = netops.DCB{PFCCap: 8, PFC: 1 << 4, DSCP: map[uint8]uint8{26: 4}}
		}, "roce-qos-consistent", Warn, "the node's RoCE NICs differ", "the same settings"},
		"no DCB": {func(e *env) { delete(e.opt.DCB.(fakeDCB), "ens42np0") }, "roce-qos", Skip, "the driver has no DCB", ""},
		// Against the policy's qos: a failure, fixed by node apply.
		"policy QoS": {func(e *env) {
			e.opt.Policy.PFs = append(e.opt.Policy.PFs, v1alpha1.PF{PCIAddress: "0000:2a:00.0", QoS: &v1alpha1.QoS{Trust: "pcp", PFC: []int{3, 4}, ECN: []int{3}}})
			_ = fakesysfs.SetECN(e.sys, "ens42np0", fakesysfs.ECN{RP: 0xff, NP: 0xf7})
		}, "roce-qos", Fail, "ECN off on priority 3 (rp 0,1,2,3,4,5,6,7, np 0,1,2,4,5,6,7), the policy wants it on; PFC on 3, the policy wants 3,4; trust dscp, the policy wants pcp", "railyard node apply"},
		// One firmware release per model: mlx5_1 and mlx5_2 are both
		// ConnectX-6 Dx (15b3:101d).
		"firmware differs within a model": {func(e *env) { _ = fakesysfs.SetFirmware(e.sys, "mlx5_2", "22.35.1012") }, "firmware", Warn,
			"2 firmware versions on one model: 22.35.1012 on mlx5_2; 22.39.1002 on mlx5_1", "mlxfwmanager"},
		// A release NVIDIA's notes list with a known issue Railyard's checks
		// depend on (internal/firmware): a warning with the workaround.
		"firmware with a known issue": {func(e *env) {
			_ = fakesysfs.SetFirmware(e.sys, "mlx5_1", "22.45.1020")
			_ = fakesysfs.SetFirmware(e.sys, "mlx5_2", "22.45.1020")
		}, "firmware", Warn, "NVIDIA known issue 4394475 (detected in 22.45.1020, still listed in the 22.46.3048 release notes, https://docs.nvidia.com/networking/display/connectx6dxfirmwarev22463048/known+issues)", "ecn/roce_rp/enable"},
		// The firmware policy (the agent's, given as flags): a release
		// below the model's minimum, or with a known issue it refuses,
		// fails, even on a node whose NICs agree.
		"firmware below the policy's minimum": {func(e *env) {
			e.opt.Firmware = mustPolicy(map[string]string{"15b3:101d": "22.40.1000"}, nil)
		}, "firmware", Fail, "mlx5_1, mlx5_2 refused: firmware 22.39.1002 below the minimum 22.40.1000 for 15b3:101d", "taints these NICs NoSchedule"},
		"firmware with a refused known issue": {func(e *env) {
			e.opt.Firmware = mustPolicy(nil, []string{"4394475"})
			_ = fakesysfs.SetFirmware(e.sys, "mlx5_2", "22.45.1020")
		}, "firmware", Fail, "mlx5_2 refused: firmware 22.45.1020 has known issue 4394475", "flash an accepted release"},
		"firmware unreadable": {func(e *env) { _ = os.Remove(filepath.Join(e.sys, "class/infiniband/mlx5_0/fw_ver")) }, "firmware", Skip,
			"cannot read the firmware version of any NIC of this model", ""},
		"IOMMU translating": {func(e *env) {
			for _, g := range []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18"} {
				_ = os.WriteFile(filepath.Join(e.sys, "kernel/iommu_groups", g, "type"), []byte("DMA-FQ\n"), 0o644)
			}
		}, "iommu", Warn, "the IOMMU translates DMA of", "iommu=pt"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			tc.breakIt(e)
			r := e.run()
			var found bool
			for _, c := range r.Checks {
				if c.ID != tc.id || c.Status == OK {
					continue
				}
				found = true
				if c.Status != tc.status || !strings.Contains(c.Summary, tc.want) || !strings.Contains(c.Fix, tc.fix) {
					t.Errorf("%s: %s %q fix %q", c.ID, c.Status, c.Summary, c.Fix)
				}
			}
			if !found {
				var buf bytes.Buffer
				_ = r.WriteTable(&buf)
				t.Fatalf("no %s check left ok:\n%s", tc.id, buf.String())
			}
			want := map[Status]int{Fail: ExitFailures, Warn: ExitWarnings, Skip: ExitOK}[tc.status]
			if r.ExitCode() < want {
				t.Errorf("exit code %d, want at least %d", r.ExitCode(), want)
			}
		})
	}
}

// A degraded link is named with the slot the platform registers for it.
func TestDegradedLinkNamesItsSlot(t *testing.T) {
	e := newEnv(t)
	if err := fakesysfs.SetPCIeLink(e.sys, "0000:2a:00.0", fakesysfs.Link{Speed: 16, MaxSpeed: 16, Width: 8, MaxWidth: 16}); err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.AddPCISlot(e.sys, "7", "0000:2a:00"); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.run().Checks {
		if c.ID == "pcie-link" && c.Status != OK {
			if !strings.Contains(c.Summary, "0000:2a:00.0 in slot 7 at 16 GT/s x8") || c.Subject != "mlx5_1 (0000:2a:00.0)" {
				t.Errorf("%s %s: %s", c.Subject, c.Status, c.Summary)
			}
			return
		}
	}
	t.Fatal("no pcie-link check left ok")
}

// A link whose attributes cannot be read is skipped, never ok.
func TestUnreadablePCIeLinkIsSkipped(t *testing.T) {
	e := newEnv(t)
	if err := os.Remove(filepath.Join(e.sys, "bus/pci/devices/0000:19:00.0/max_link_width")); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.run().Checks {
		if c.ID == "pcie-link" && c.Subject == "GPU 0000:19:00.0" {
			if c.Status != Skip || !strings.Contains(c.Summary, "max_link_width") {
				t.Errorf("%s: %s", c.Status, c.Summary)
			}
			return
		}
	}
	t.Fatal("no pcie-link check for GPU 0000:19:00.0")
}

func vfRDMA(e *env, index int) string {
	st, _ := sysfs.New(e.sys).SRIOV("0000:18:00.0")
	r, _ := sysfs.New(e.sys).RDMADevices(st.VFs[index].PCI)
	return r[0]
}

func TestUnprivilegedACSIsSkippedAsNeedingRoot(t *testing.T) {
	e := newEnv(t)
	e.opt.Root = false
	for _, br := range []string{"0000:17:00.0", "0000:17:01.0", "0000:16:00.0"} {
		if err := fakesysfs.WriteConfig(e.sys, br, fakesysfs.ConfigSpace{ACS: true, ACSControl: 0x1d, Size: 64}); err != nil {
			t.Fatal(err)
		}
	}
	r := e.run()
	for _, c := range r.Checks {
		if c.ID == "acs" && c.Subject == "GPU 0000:19:00.0 <-> 0000:18:00.0" {
			if c.Status != Skip || !c.NeedsRoot || !strings.Contains(c.Summary, "only root can read") {
				t.Fatalf("unprivileged ACS check = %+v", c)
			}
			if r.ExitCode() != ExitOK {
				t.Fatalf("a skipped check changed the exit code to %d", r.ExitCode())
			}
			return
		}
	}
	t.Fatal("no ACS check for GPU 0000:19:00.0")
}

// FIFOs as /proc/modules, containerd's /proc/<pid>/limits and a bridge's
// PCI config fail their reads at once (internal/inputfile, sysfs's
// non-blocking reader) instead of hanging doctor, and the checks say what
// could not be read.
func TestFIFOHostFilesFailAtOnce(t *testing.T) {
	e := newEnv(t)
	for _, full := range []string{filepath.Join(e.host, "/proc/modules"), filepath.Join(e.host, "/proc/812/limits"),
		filepath.Join(e.sys, "bus/pci/devices/0000:17:01.0/config")} {
		if err := os.Remove(full); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(full, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan Report, 1)
	go func() {
		r, err := Run(context.Background(), e.opt)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	var r Report
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("doctor hangs on a FIFO input")
	}
	read := map[string]string{}
	for _, c := range r.Checks {
		read[c.ID] += strings.Join(c.Read, "\n")
		if c.ID == "acs" && c.Subject == "GPU 0000:19:00.0 <-> 0000:18:00.0" && (c.Status != Skip || !strings.Contains(c.Summary, "cannot read the ACS control of 0000:17:01.0")) {
			t.Errorf("acs with a FIFO config: %s %q", c.Status, c.Summary)
		}
	}
	for id, want := range map[string]string{"gpudirect": "/proc/modules: open ", "memlock": "/proc/812/limits (containerd): open "} {
		if !strings.Contains(read[id], want) || !strings.Contains(read[id], "not a regular file (a FIFO)") {
			t.Errorf("%s read %q, want %q ... not a regular file (a FIFO)", id, read[id], want)
		}
	}
}

func TestFallbacks(t *testing.T) {
	e := newEnv(t)
	// No containerd process: the systemd unit's drop-in is read.
	_ = os.RemoveAll(filepath.Join(e.host, "proc/812"))
	e.write("/lib/systemd/system/containerd.service", "[Service]\nLimitNOFILE=infinity\n")
	e.write("/etc/systemd/system/containerd.service.d/memlock.conf", "[Service]\nLimitMEMLOCK=infinity\n")
	// No netlink answer: ib_core's module parameter.
	e.opt.RDMA = nil
	if err := fakesysfs.SetModuleParam(e.sys, "ib_core", "netns_mode", "N"); err != nil {
		t.Fatal(err)
	}
	// No nvidia_peermem, but the open kernel module on Linux 6.5: DMA-BUF.
	e.write("/proc/modules", "mlx5_ib 462848 0 - Live 0x0\n")
	e.write("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15\n")
	e.write("/proc/sys/kernel/osrelease", "6.5.0-35-generic\n")
	r := e.run()
	if r.ExitCode() != ExitOK {
		var buf bytes.Buffer
		_ = r.WriteTable(&buf)
		t.Fatalf("exit %d:\n%s", r.ExitCode(), buf.String())
	}
	for _, c := range r.Checks {
		switch c.ID {
		case "memlock":
			if !strings.Contains(strings.Join(c.Read, "\n"), "/etc/systemd/system/containerd.service.d/memlock.conf: LimitMEMLOCK=infinity") {
				t.Errorf("memlock read %q", c.Read)
			}
		case "rdma-netns":
			if !strings.Contains(c.Summary, "exclusive") {
				t.Errorf("netns %q", c.Summary)
			}
		case "gpudirect":
			if !strings.Contains(c.Summary, "DMA-BUF works") {
				t.Errorf("gpudirect %q", c.Summary)
			}
		}
	}
}

func TestReportJSONAndExitCodes(t *testing.T) {
	r := Report{Checks: []Check{{ID: "a", Status: OK, Summary: "fine"}, {ID: "b", Status: Skip}}}
	if r.ExitCode() != 0 {
		t.Fatal(r.ExitCode())
	}
	r.Checks = append(r.Checks, Check{ID: "c", Status: Warn})
	if r.ExitCode() != 1 {
		t.Fatal(r.ExitCode())
	}
	r.Checks = append(r.Checks, Check{ID: "d", Status: Fail, NeedsRoot: true})
	if r.ExitCode() != 2 {
		t.Fatal(r.ExitCode())
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"id": "d"`) || !strings.Contains(buf.String(), `"needsRoot": true`) || !strings.Contains(buf.String(), `"status": "warn"`) {
		t.Fatalf("json:\n%s", buf.String())
	}
}

func TestRoCEActiveMTU(t *testing.T) {
	for mtu, want := range map[int]int{1500: 1024, 4192: 4096, 4191: 2048, 9000: 4096, 2144: 2048, 300: 0, 352: 256} {
		if got := RoCEActiveMTU(mtu); got != want {
			t.Errorf("RoCEActiveMTU(%d) = %d, want %d", mtu, got, want)
		}
	}
}

func FuzzParseLimits(f *testing.F) {
	f.Add([]byte(memlockUnlimited))
	f.Fuzz(func(t *testing.T, b []byte) {
		soft, hard, ok := ParseLimits(b, "Max locked memory")
		if ok && (soft == "" || hard == "") {
			t.Fatal("ok without values")
		}
		_ = ParseLimitMEMLOCK(b)
	})
}

// The fabric profile decides whether a RoCE NIC without PFC is a problem:
// warned under roce-lossless (also the default), expected under a lossy
// profile when ECN is on; an unknown profile is refused.
func TestRoCEWithoutPFCByProfile(t *testing.T) {
	for _, tc := range []struct {
		profile string
		want    Status
		read    string
	}{
		{"", Warn, "judged as the roce-lossless profile (doctor --profile): lossless"},
		{"roce-lossless", Warn, "judged as the roce-lossless profile"},
		{"roce-lossy", OK, "judged as the roce-lossy profile (doctor --profile): lossy, ECN expected instead of PFC"},
		{"cloud", OK, "judged as the cloud profile"},
	} {
		e := newEnv(t)
		e.opt.Profile = tc.profile
		e.opt.DCB.(fakeDCB)["ens42np0"] = netops.DCB{PFCCap: 8}
		var got *Check
		for _, c := range e.run().Checks {
			if c.ID == "roce-qos" && c.Subject == "ens42np0" {
				got = &c
			}
		}
		if got == nil {
			t.Fatalf("profile %q: no roce-qos check of ens42np0", tc.profile)
		}
		if got.Status != tc.want || !strings.Contains(strings.Join(got.Read, "\n"), tc.read) {
			t.Errorf("profile %q: %s %q, read %q; want %s and %q", tc.profile, got.Status, got.Summary, got.Read, tc.want, tc.read)
		}
	}
	e := newEnv(t)
	e.opt.Profile = "lossless"
	if _, err := Run(context.Background(), e.opt); err == nil || !strings.Contains(err.Error(), "want one of infiniband, roce-lossless") {
		t.Errorf("Run with profile %q: %v, want the profiles named", e.opt.Profile, err)
	}
}

func mustPolicy(minimum map[string]string, refuse []string) firmware.Policy {
	p, err := firmware.NewPolicy(minimum, refuse)
	if err != nil {
		panic(err)
	}
	return p
}
