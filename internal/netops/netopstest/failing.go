package netopstest

import (
	"context"
	"fmt"
	"net"
	"sync"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/netops"
)

// Failing wraps real (or any) Ops and fails the k-th mutating call with
// ErrInjected, without making it; reads pass through. It lets tests inject
// a fault at every step against the real kernel.
type Failing struct {
	netops.Ops
	mu    sync.Mutex
	n     int
	k     int
	calls []string
}

var _ netops.Ops = (*Failing)(nil)

// NewFailing wraps inner; k = 0 injects nothing.
func NewFailing(inner netops.Ops, k int) *Failing { return &Failing{Ops: inner, k: k} }

// Mutations returns the number of mutating calls seen.
func (f *Failing) Mutations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// Calls returns the mutating calls seen, in order.
func (f *Failing) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *Failing) step(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	call := fmt.Sprintf(format, args...)
	f.calls = append(f.calls, call)
	if f.k > 0 && f.n == f.k {
		return fmt.Errorf("%s: %w", call, ErrInjected)
	}
	return nil
}

// SetLinkUp implements netops.Ops.
func (f *Failing) SetLinkUp(ctx context.Context, ns, name string, up bool) error {
	if err := f.step("SetLinkUp(%q, %s, %v)", ns, name, up); err != nil {
		return err
	}
	return f.Ops.SetLinkUp(ctx, ns, name, up)
}

// RenameLink implements netops.Ops.
func (f *Failing) RenameLink(ctx context.Context, ns, name, newName string) error {
	if err := f.step("RenameLink(%q, %s, %s)", ns, name, newName); err != nil {
		return err
	}
	return f.Ops.RenameLink(ctx, ns, name, newName)
}

// SetMTU implements netops.Ops.
func (f *Failing) SetMTU(ctx context.Context, ns, name string, mtu int) error {
	if err := f.step("SetMTU(%q, %s, %d)", ns, name, mtu); err != nil {
		return err
	}
	return f.Ops.SetMTU(ctx, ns, name, mtu)
}

// SetMAC implements netops.Ops.
func (f *Failing) SetMAC(ctx context.Context, ns, name string, mac net.HardwareAddr) error {
	if err := f.step("SetMAC(%q, %s, %s)", ns, name, mac); err != nil {
		return err
	}
	return f.Ops.SetMAC(ctx, ns, name, mac)
}

// SetAlias implements netops.Ops.
func (f *Failing) SetAlias(ctx context.Context, ns, name, alias string) error {
	if err := f.step("SetAlias(%q, %s, %q)", ns, name, alias); err != nil {
		return err
	}
	return f.Ops.SetAlias(ctx, ns, name, alias)
}

// AddAltName implements netops.Ops.
func (f *Failing) AddAltName(ctx context.Context, ns, name, alt string) error {
	if err := f.step("AddAltName(%q, %s, %s)", ns, name, alt); err != nil {
		return err
	}
	return f.Ops.AddAltName(ctx, ns, name, alt)
}

// DelAltName implements netops.Ops.
func (f *Failing) DelAltName(ctx context.Context, ns, name, alt string) error {
	if err := f.step("DelAltName(%q, %s, %s)", ns, name, alt); err != nil {
		return err
	}
	return f.Ops.DelAltName(ctx, ns, name, alt)
}

// MoveLink implements netops.Ops.
func (f *Failing) MoveLink(ctx context.Context, from, name, to string) error {
	if err := f.step("MoveLink(%q, %s, %q)", from, name, to); err != nil {
		return err
	}
	return f.Ops.MoveLink(ctx, from, name, to)
}

// ConfigureIPs implements netops.Ops.
func (f *Failing) ConfigureIPs(ctx context.Context, ns, name string, res *current.Result) error {
	if err := f.step("ConfigureIPs(%q, %s)", ns, name); err != nil {
		return err
	}
	return f.Ops.ConfigureIPs(ctx, ns, name, res)
}

// SetVFVLAN implements netops.Ops.
func (f *Failing) SetVFVLAN(ctx context.Context, pf string, vf, vlan, qos, proto int) error {
	if err := f.step("SetVFVLAN(%s, %d)", pf, vf); err != nil {
		return err
	}
	return f.Ops.SetVFVLAN(ctx, pf, vf, vlan, qos, proto)
}

// AddMacvlan implements netops.Ops.
func (f *Failing) AddMacvlan(ctx context.Context, parent, name, mode string) error {
	if err := f.step("AddMacvlan(%s, %s)", parent, name); err != nil {
		return err
	}
	return f.Ops.AddMacvlan(ctx, parent, name, mode)
}

// DeleteLink implements netops.Ops.
func (f *Failing) DeleteLink(ctx context.Context, netns, name string) error {
	if err := f.step("DeleteLink(%s, %s)", netns, name); err != nil {
		return err
	}
	return f.Ops.DeleteLink(ctx, netns, name)
}

// SetVFGUID implements netops.Ops.
func (f *Failing) SetVFGUID(ctx context.Context, pf string, vf int, guid net.HardwareAddr) error {
	if err := f.step("SetVFGUID(%s, %d)", pf, vf); err != nil {
		return err
	}
	return f.Ops.SetVFGUID(ctx, pf, vf, guid)
}

// SetVFSpoofChk implements netops.Ops.
func (f *Failing) SetVFSpoofChk(ctx context.Context, pf string, vf int, on bool) error {
	if err := f.step("SetVFSpoofChk(%s, %d)", pf, vf); err != nil {
		return err
	}
	return f.Ops.SetVFSpoofChk(ctx, pf, vf, on)
}

// SetVFTrust implements netops.Ops.
func (f *Failing) SetVFTrust(ctx context.Context, pf string, vf int, on bool) error {
	if err := f.step("SetVFTrust(%s, %d)", pf, vf); err != nil {
		return err
	}
	return f.Ops.SetVFTrust(ctx, pf, vf, on)
}

// SetVFLinkState implements netops.Ops.
func (f *Failing) SetVFLinkState(ctx context.Context, pf string, vf int, state uint32) error {
	if err := f.step("SetVFLinkState(%s, %d)", pf, vf); err != nil {
		return err
	}
	return f.Ops.SetVFLinkState(ctx, pf, vf, state)
}

// SetVFRate implements netops.Ops.
func (f *Failing) SetVFRate(ctx context.Context, pf string, vf, minRate, maxRate int) error {
	if err := f.step("SetVFRate(%s, %d)", pf, vf); err != nil {
		return err
	}
	return f.Ops.SetVFRate(ctx, pf, vf, minRate, maxRate)
}

// MoveRDMA implements netops.Ops.
func (f *Failing) MoveRDMA(ctx context.Context, from, dev, to string) error {
	if err := f.step("MoveRDMA(%q, %s, %q)", from, dev, to); err != nil {
		return err
	}
	return f.Ops.MoveRDMA(ctx, from, dev, to)
}

// SetSysctl implements netops.Ops.
func (f *Failing) SetSysctl(ctx context.Context, ns, name, value string) error {
	if err := f.step("SetSysctl(%q, %s, %s)", ns, name, value); err != nil {
		return err
	}
	return f.Ops.SetSysctl(ctx, ns, name, value)
}

// AddRoute implements netops.Ops.
func (f *Failing) AddRoute(ctx context.Context, ns string, r netops.Route) error {
	if err := f.step("AddRoute(%q, %s)", ns, r); err != nil {
		return err
	}
	return f.Ops.AddRoute(ctx, ns, r)
}

// AddRule implements netops.Ops.
func (f *Failing) AddRule(ctx context.Context, ns string, r netops.Rule) error {
	if err := f.step("AddRule(%q, %s)", ns, r); err != nil {
		return err
	}
	return f.Ops.AddRule(ctx, ns, r)
}

// DelRule implements netops.Ops.
func (f *Failing) DelRule(ctx context.Context, ns string, r netops.Rule) error {
	if err := f.step("DelRule(%q, %s)", ns, r); err != nil {
		return err
	}
	return f.Ops.DelRule(ctx, ns, r)
}
