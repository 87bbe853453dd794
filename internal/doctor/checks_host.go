package doctor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/railyard-io/railyard/internal/sysfs"
)

const netnsFix = "exclusive mode must be set before any other network namespace uses RDMA: " +
	"set the ib_core module option (echo 'options ib_core netns_mode=0' > /etc/modprobe.d/ib_core.conf; update-initramfs -u; reboot), " +
	"or run `rdma system set netns exclusive` early at boot, before kubelet and the container runtime start"

func (n *node) rdmaNetns(ctx context.Context) []Check {
	c := Check{ID: "rdma-netns", Status: OK}
	mode := ""
	if n.opt.RDMA != nil {
		m, err := n.opt.RDMA.RDMANetnsMode(ctx)
		if err == nil {
			mode = m
			c.Read = append(c.Read, "netlink RDMA_NLDEV_CMD_SYS_GET: "+m)
		} else {
			c.Read = append(c.Read, "netlink RDMA_NLDEV_CMD_SYS_GET: "+err.Error())
		}
	}
	if mode == "" {
		if v, err := n.fs.ModuleParam("ib_core", "netns_mode"); err == nil {
			c.Read = append(c.Read, "sysfs module/ib_core/parameters/netns_mode: "+v)
			mode = map[string]string{"Y": "shared", "1": "shared", "N": "exclusive", "0": "exclusive"}[v]
		}
	}
	switch mode {
	case "exclusive":
		c.Summary = "exclusive: each pod sees only the RDMA devices moved into its namespace"
	case "shared":
		c.Status = Warn
		c.Summary = "shared: every pod sees every RDMA device of the node (no isolation; railyard-cni cannot move devices)"
		c.Fix = netnsFix
	default:
		c.Status, c.Summary = Skip, "cannot read the RDMA netns mode (no RDMA subsystem loaded?)"
	}
	return []Check{c}
}

// ParseLimits returns the soft and hard values of a resource in a
// /proc/<pid>/limits file ("Max locked memory": "8388608" or "unlimited").
func ParseLimits(data []byte, resource string) (soft, hard string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, found := strings.CutPrefix(sc.Text(), resource)
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return "", "", false
		}
		return f[0], f[1], true
	}
	return "", "", false
}

// ParseLimitMEMLOCK returns the last LimitMEMLOCK= of a systemd unit file
// ("" when none), as systemd applies the last assignment.
func ParseLimitMEMLOCK(data []byte) string {
	v := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if val, ok := strings.CutPrefix(line, "LimitMEMLOCK="); ok {
			v = strings.TrimSpace(val)
		}
	}
	return v
}

// memlock reads the locked-memory limit containers inherit from the
// container runtime: containerd's own limit (its /proc/<pid>/limits, or
// LimitMEMLOCK of its systemd unit), and this process's.
func (n *node) memlock(context.Context) []Check {
	h := n.opt.Host
	c := Check{ID: "memlock", Status: OK}
	runtime := ""
	if comms, err := h.Glob("/proc/[0-9]*/comm"); err == nil {
		for _, p := range comms {
			b, err := h.Read(p)
			if err != nil || strings.TrimSpace(string(b)) != "containerd" {
				continue
			}
			lim := filepath.Join(filepath.Dir(p), "limits")
			b, err = h.Read(lim)
			if err != nil {
				c.Read = append(c.Read, fmt.Sprintf("%s (containerd): %v", lim, err))
			} else if soft, _, ok := ParseLimits(b, "Max locked memory"); ok {
				runtime = soft
				c.Read = append(c.Read, fmt.Sprintf("%s (containerd): Max locked memory %s", lim, soft))
			}
			break
		}
	}
	if runtime == "" {
		for _, unit := range []string{"/lib/systemd/system/containerd.service", "/usr/lib/systemd/system/containerd.service",
			"/etc/systemd/system/containerd.service", "/etc/systemd/system/containerd.service.d/*.conf"} {
			files, _ := h.Glob(unit)
			for _, f := range files {
				b, err := h.Read(f)
				if err != nil {
					continue
				}
				if v := ParseLimitMEMLOCK(b); v != "" {
					runtime = v
					c.Read = append(c.Read, fmt.Sprintf("%s: LimitMEMLOCK=%s", f, v))
				}
			}
		}
	}
	if b, err := h.Read("/proc/self/limits"); err == nil {
		if soft, _, ok := ParseLimits(b, "Max locked memory"); ok {
			c.Read = append(c.Read, "/proc/self/limits (this process): Max locked memory "+soft)
		}
	}
	const fix = "systemctl edit containerd: [Service] LimitMEMLOCK=infinity, then systemctl restart containerd " +
		"(or give RDMA containers CAP_IPC_LOCK); RDMA registers (pins) memory up to this limit"
	switch runtime {
	case "unlimited", "infinity":
		c.Summary = "the container runtime's locked-memory limit is unlimited"
	case "":
		c.Status, c.Summary, c.Fix = Warn, "cannot find containerd's locked-memory limit (not running here, no systemd unit found)", fix
	default:
		c.Status, c.Summary, c.Fix = Warn, "containers inherit a locked-memory limit of "+runtime+" from the container runtime: RDMA memory registration fails beyond it", fix
	}
	return []Check{c}
}

// gpuDirect checks for nvidia_peermem or DMA-BUF on nodes with NVIDIA GPUs.
func (n *node) gpuDirect(context.Context) []Check {
	nvidia := false
	for _, g := range n.topo.GPUs {
		nvidia = nvidia || g.Vendor == 0x10de
	}
	if !nvidia {
		return nil
	}
	h := n.opt.Host
	c := Check{ID: "gpudirect", Status: OK}
	if b, err := h.Read("/proc/modules"); err != nil {
		c.Read = append(c.Read, "/proc/modules: "+err.Error())
	} else {
		loaded := bytes.HasPrefix(b, []byte("nvidia_peermem ")) || bytes.Contains(b, []byte("\nnvidia_peermem "))
		c.Read = append(c.Read, fmt.Sprintf("/proc/modules: nvidia_peermem loaded=%v", loaded))
		if loaded {
			c.Summary = "nvidia_peermem is loaded (GPUDirect RDMA through peer memory)"
			return []Check{c}
		}
	}
	if n.fs.ModuleLoaded("nvidia_peermem") {
		c.Read = append(c.Read, "sysfs module/nvidia_peermem: present")
		c.Summary = "nvidia_peermem is loaded (GPUDirect RDMA through peer memory)"
		return []Check{c}
	}
	ver, _ := h.Read("/proc/driver/nvidia/version")
	rel, _ := h.Read("/proc/sys/kernel/osrelease")
	open := bytes.Contains(ver, []byte("Open Kernel Module"))
	c.Read = append(c.Read, fmt.Sprintf("/proc/driver/nvidia/version: open kernel module=%v; /proc/sys/kernel/osrelease: %s", open, strings.TrimSpace(string(rel))))
	if open && kernelAtLeast(string(rel), 5, 12) {
		c.Summary = "no nvidia_peermem, but DMA-BUF works (open NVIDIA kernel module, Linux >= 5.12): NCCL >= 2.13 uses it"
		return []Check{c}
	}
	c.Status = Fail
	c.Summary = "no GPUDirect RDMA: nvidia_peermem is not loaded and DMA-BUF needs the open NVIDIA kernel module on Linux >= 5.12"
	c.Fix = "modprobe nvidia_peermem (and add it to /etc/modules-load.d/); or install the open NVIDIA kernel modules for DMA-BUF"
	return []Check{c}
}

func kernelAtLeast(release string, major, minor int) bool {
	var a, b int
	if _, err := fmt.Sscanf(strings.TrimSpace(release), "%d.%d", &a, &b); err != nil {
		return false
	}
	return a > major || a == major && b >= minor
}

// acs checks the ACS control of every bridge between each GPU and its
// rail NIC, when they share a switch (PIX or PXB).
func (n *node) acs(context.Context) []Check {
	var out []Check
	for _, r := range n.topo.Rails {
		if !r.Class.GPUDirect() {
			continue
		}
		bridges := n.bridgesBetween(r.GPU, r.NIC)
		c := Check{ID: "acs", Subject: fmt.Sprintf("GPU %s <-> %s", r.GPU, r.NIC), Status: OK}
		var redirect, unread []string
		for _, br := range bridges {
			cfg, err := n.fs.PCIConfig(br)
			if err != nil {
				c.Read = append(c.Read, fmt.Sprintf("sysfs %v", err))
				unread = append(unread, br)
				continue
			}
			if !sysfs.HasExtendedConfig(cfg) {
				c.Read = append(c.Read, fmt.Sprintf("sysfs bus/pci/devices/%s/config: %d bytes", br, len(cfg)))
				if n.opt.Root {
					continue // conventional PCI: no extended capabilities, no ACS
				}
				c.Status, c.NeedsRoot = Skip, true
				c.Summary = fmt.Sprintf("config space of %s reads %d bytes: the ACS capability is in the extended space only root can read", br, len(cfg))
				break
			}
			acs, ok, err := sysfs.ParseACS(cfg)
			switch {
			case err != nil:
				c.Read = append(c.Read, fmt.Sprintf("%s: %v", br, err))
				unread = append(unread, br)
			case !ok:
				c.Read = append(c.Read, fmt.Sprintf("%s: no ACS capability", br))
			default:
				c.Read = append(c.Read, fmt.Sprintf("%s: ACSCtl %s (at %#x)", br, acs, acs.Offset))
				if acs.Redirects() {
					redirect = append(redirect, br)
				}
			}
		}
		switch {
		case len(redirect) > 0:
			c.Status = Fail
			c.Summary = fmt.Sprintf("ACS redirects peer-to-peer traffic on %s: GPU-NIC traffic goes up through the root complex", strings.Join(redirect, ", "))
			c.Fix = "disable ACS in the BIOS, or boot with pci=disable_acs_redir=" + strings.Join(redirect, ";") +
				" (Linux >= 5.1), or clear it until reboot: setpci -s <bridge> ECAP_ACS+0x6.w=0000 (not with an IOMMU in translation mode)"
		case c.Status == Skip:
		case len(unread) > 0:
			// A bridge whose ACS control could not be read may redirect:
			// never say "no redirection" for it.
			c.Status = Skip
			c.Summary = fmt.Sprintf("cannot read the ACS control of %s (config space unreadable or its capability list malformed): redirection unknown", strings.Join(unread, ", "))
			c.Fix = "read it with lspci -vvv -s <bridge> (as root) and look for ACSCtl ReqRedir+ or CmpltRedir+"
		default:
			c.Summary = fmt.Sprintf("no ACS redirection on the %d bridges between them", len(bridges))
		}
		out = append(out, c)
	}
	return out
}

// iommu checks whether DMA of the GPUs and NICs is translated.
func (n *node) iommu(context.Context) []Check {
	c := Check{ID: "iommu", Status: OK}
	units, _ := n.fs.IOMMUs()
	cmdline, _ := n.opt.Host.Read("/proc/cmdline")
	var flags []string
	for _, f := range strings.Fields(string(cmdline)) {
		if strings.Contains(f, "iommu") {
			flags = append(flags, f)
		}
	}
	c.Read = []string{fmt.Sprintf("sysfs class/iommu: %v", units), fmt.Sprintf("/proc/cmdline iommu options: %v", flags)}
	if len(units) == 0 {
		c.Summary = "no IOMMU in use: device DMA is not translated"
		return []Check{c}
	}
	var translated []string
	for _, g := range n.topo.GPUs {
		translated = append(translated, n.translatedGroup(g.PCI, &c)...)
	}
	for _, x := range n.topo.NICs {
		translated = append(translated, n.translatedGroup(x.PCI, &c)...)
	}
	if len(translated) == 0 {
		c.Summary = "IOMMU in passthrough (identity) mode for the GPUs and NICs"
		return []Check{c}
	}
	c.Status = Warn
	c.Summary = "the IOMMU translates DMA of " + strings.Join(translated, ", ") + ": GPUDirect peer traffic is redirected or slow"
	c.Fix = "boot with iommu=pt (and intel_iommu=on or amd_iommu=on if you need the IOMMU for VFIO)"
	return []Check{c}
}

func (n *node) translatedGroup(addr string, c *Check) []string {
	g, err := n.fs.IOMMUGroup(addr)
	if err != nil || g == "" {
		return nil
	}
	t, err := n.fs.IOMMUGroupType(g)
	if err != nil {
		return nil
	}
	c.Read = append(c.Read, fmt.Sprintf("sysfs kernel/iommu_groups/%s/type (%s): %s", g, addr, t))
	if t == "identity" {
		return nil
	}
	return []string{addr}
}
