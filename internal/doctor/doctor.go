package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/firmware"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// RDMAMode reads the RDMA subsystem's netns mode (netops.Linux on a node).
type RDMAMode interface {
	RDMANetnsMode(ctx context.Context) (string, error)
}

// Options say where the node's files are and what it should look like.
type Options struct {
	// SysfsRoot is sysfs ("" = /sys).
	SysfsRoot string
	// Host reads /proc, /etc and /lib.
	Host HostFiles
	// Policy, when set, is the node policy: VF counts and link layers are
	// checked against it.
	Policy *v1alpha1.NodePolicy
	// RDMA reads the RDMA netns mode; nil falls back on ib_core's
	// netns_mode module parameter in sysfs.
	RDMA RDMAMode
	// Root says whether the process can read what only root can (PCI
	// extended config space).
	Root bool
	// DCB reads RoCE NICs' PFC and trust (netops.Linux on a node); nil
	// skips the roce-qos checks.
	DCB DCBReader
	// Recorder, when set, is told every sysfs path the checks and
	// discovery read (sysfs.FS.Recorder); Host has its own.
	Recorder sysfs.Recorder
	// CounterWindow is how long rdma-errors waits between its two
	// readings of each PF port's error counters (the CLI's default is
	// DefaultCounterWindow); 0 reads them once, and no rise can be seen.
	// At most MaxCounterWindow (ValidateCounterWindow).
	CounterWindow time.Duration
	// Wait waits d, or until ctx is done, and returns ctx's error then
	// (nil: a timer). Tests change the counter files in it instead of
	// sleeping.
	Wait func(ctx context.Context, d time.Duration) error
	// Firmware is which NIC firmware is refused (a minimum release per
	// model, known issues): a refused NIC fails the firmware check. The
	// agent refuses the same NICs with its config's firmware section.
	Firmware firmware.Policy
	// Profile names the fabric (bench.Profiles): on a lossy one
	// (roce-lossy, cloud, virtual) a RoCE NIC without PFC is expected and
	// ECN is what must be on; "" judges RoCE as roce-lossless, as
	// bench report does.
	Profile string
}

// node is what the checks share.
type node struct {
	opt  Options
	fs   sysfs.FS
	topo *topology.Topology
	// profile is the fabric's (Options.Profile, else roce-lossless).
	profile bench.Profile
}

// Run runs every check (the table in checks.go). It fails when the counter window is not valid,
// when sysfs has no PCI bus, and when ctx is done before the checks are
// (Ctrl-C during the counter window): then with ctx's error and the
// checks made so far.
func Run(ctx context.Context, opt Options) (Report, error) {
	if err := ValidateCounterWindow(opt.CounterWindow); err != nil {
		return Report{}, err
	}
	name := opt.Profile
	if name == "" {
		name = bench.ProfileRoCELossless
	}
	profile, err := bench.ProfileNamed(name)
	if err != nil {
		return Report{}, err
	}
	topo, err := discovery.Options{Recorder: opt.Recorder}.Discover(ctx, opt.SysfsRoot)
	if err != nil {
		return Report{}, fmt.Errorf("reading the node: %w", err)
	}
	fs := sysfs.New(opt.SysfsRoot)
	fs.Recorder = opt.Recorder
	n := &node{opt: opt, fs: fs, topo: topo, profile: profile}
	var r Report
	for _, row := range table {
		r.Checks = append(r.Checks, row.run(n, ctx)...)
		if err := ctx.Err(); err != nil {
			return r, fmt.Errorf("doctor interrupted: %w", err)
		}
	}
	return r, nil
}

// policyPF returns the policy entry naming NIC nic (by PCI address or
// netdev), or nil.
func (n *node) policyPF(nic topology.NIC) *v1alpha1.PF {
	if n.opt.Policy == nil {
		return nil
	}
	for i := range n.opt.Policy.PFs {
		pf := &n.opt.Policy.PFs[i]
		if pf.PCIAddress == nic.PCI || (pf.Netdev != "" && (pf.Netdev == nic.Netdev)) {
			return pf
		}
	}
	return nil
}
