package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/rdmacounter"
)

// Counter window bounds: the CLI's default, and the longest doctor waits.
const (
	DefaultCounterWindow = 2 * time.Second
	MaxCounterWindow     = time.Minute
)

// ValidateCounterWindow refuses a negative window and one longer than
// MaxCounterWindow (doctor is a quick look; railyard top watches longer).
func ValidateCounterWindow(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("counter window %s: negative (0 reads the counters once)", d)
	case d > MaxCounterWindow:
		return fmt.Errorf("counter window %s: longer than %s; doctor is a quick look, watch counters for longer with railyard top", d, MaxCounterWindow)
	}
	return nil
}

// timerWait waits d, or until ctx is done.
func timerWait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// counterPort is one PF port whose error counters rdma-errors reads.
type counterPort struct {
	rdma   string
	port   int
	netdev string
	roce   bool
	first  reading
	second reading
}

// reading is one rdmacounter.Read of a port.
type reading struct {
	s   rdmacounter.Sample
	err error
}

// rdmaErrors reads the error counters of every PF port twice,
// CounterWindow apart (once when it is 0), and judges each port by what
// rose in between (rdmacounter's Health of each counter) and by the link
// counters' values since boot (History).
func (n *node) rdmaErrors(ctx context.Context) []Check {
	var ports []*counterPort
	for _, d := range rdmacounter.Devices(n.topo, nil) {
		if d.Kind != rdmacounter.KindPF {
			continue // a VF shares its PF's link; its transport counters are its pod's
		}
		nic, _ := n.topo.NIC(d.PCI)
		for _, p := range d.Ports {
			cp := &counterPort{rdma: d.RDMA, port: p, netdev: nic.Netdev, roce: nic.LinkLayer == v1alpha1.LinkLayerEthernet}
			for _, tp := range nic.Ports {
				if tp.Num == p && tp.LinkLayer != "" {
					cp.roce = tp.LinkLayer == v1alpha1.LinkLayerEthernet
				}
			}
			cp.first.s, cp.first.err = rdmacounter.Read(n.fs, d.RDMA, p, true, time.Now())
			ports = append(ports, cp)
		}
	}
	window := n.opt.CounterWindow
	var interrupted error
	twice := false
	if window > 0 && anyErrorCounter(ports) {
		wait := n.opt.Wait
		if wait == nil {
			wait = timerWait
		}
		if err := wait(ctx, window); err != nil {
			interrupted = err
		} else {
			for _, cp := range ports {
				cp.second.s, cp.second.err = rdmacounter.Read(n.fs, cp.rdma, cp.port, true, time.Now())
			}
			twice = true
		}
	}
	out := make([]Check, 0, len(ports))
	for _, cp := range ports {
		c := judgeCounters(cp, window, twice)
		if interrupted != nil && c.Status != Skip {
			c = Check{ID: "rdma-errors", Subject: c.Subject, Status: Skip,
				Summary: fmt.Sprintf("interrupted during the %s counter window (%v): no second reading", window, interrupted),
				Read:    []string{fmt.Sprintf("sysfs class/infiniband/%s/ports/%d/{counters,hw_counters}: read once, before the window", cp.rdma, cp.port)}}
		}
		out = append(out, c)
	}
	return out
}

// anyErrorCounter says whether some port's first reading has an error
// counter: without one there is nothing to wait for.
func anyErrorCounter(ports []*counterPort) bool {
	table := rdmacounter.Counters()
	for _, cp := range ports {
		for i, c := range table {
			if _, ok := cp.first.s.Raw(i); ok && c.Kind == rdmacounter.Error {
				return true
			}
		}
	}
	return false
}

// splitReadError separates Read's error into the counter files it could
// not read (by row) and an error about the port as a whole (its counter
// directories could not be listed).
func splitReadError(err error) (files map[int]error, port error) {
	files = map[int]error{}
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var ce *rdmacounter.CounterError
		if errors.As(e, &ce) {
			files[ce.Index] = e
			return
		}
		port = errors.Join(port, e)
	}
	walk(err)
	return files, port
}

// judgeCounters judges one port from its readings; twice says whether
// cp.second was read (window apart).
func judgeCounters(cp *counterPort, window time.Duration, twice bool) Check {
	c := Check{ID: "rdma-errors", Subject: fmt.Sprintf("%s/%d", cp.rdma, cp.port), Status: OK}
	dirs := fmt.Sprintf("sysfs class/infiniband/%s/ports/%d/{counters,hw_counters}", cp.rdma, cp.port)
	bad1, port1 := splitReadError(cp.first.err)
	bad2, port2 := splitReadError(cp.second.err)
	if port1 != nil || port2 != nil {
		c.Status, c.Summary = Skip, "cannot read the port's counters: "+errors.Join(port1, port2).Error()
		c.Read = []string{dirs + ": unreadable"}
		return c
	}
	var (
		linkRise, transportRise, retrans, unjudged, history, nonZero, down, unreadable []string
		read                                                                           int
	)
	for i, k := range rdmacounter.Counters() {
		if k.Kind != rdmacounter.Error {
			continue
		}
		file := string(k.Dir) + "/" + k.File
		if err := bad1[i]; err != nil {
			unreadable = append(unreadable, err.Error())
			continue
		}
		if err := bad2[i]; err != nil {
			unreadable = append(unreadable, err.Error()+" (at the second reading)")
			continue
		}
		v1, ok1 := cp.first.s.Raw(i)
		if !ok1 {
			continue // the driver has no such file
		}
		read++
		cur := v1
		if twice {
			v2, ok2 := cp.second.s.Raw(i)
			if !ok2 { // listed at the first reading, gone at the second
				unreadable = append(unreadable, file+": gone at the second reading")
				continue
			}
			cur = v2
			d, ev := k.RawDelta(v1, v2)
			switch {
			case ev != rdmacounter.Counted:
				// A wrap and a reset from the upper half of the range look
				// alike (rdmacounter.RawDelta): neither is a rise to judge.
				down = append(down, fmt.Sprintf("%s %d → %d", file, v1, v2))
			case d > 0:
				rise := fmt.Sprintf("%s +%d (%d → %d)", file, d, v1, v2)
				switch k.Health {
				case rdmacounter.LinkFault:
					linkRise = append(linkRise, rise)
				case rdmacounter.TransportFailure:
					transportRise = append(transportRise, rise)
				case rdmacounter.Retransmission:
					retrans = append(retrans, rise)
				default:
					unjudged = append(unjudged, rise)
				}
			}
		}
		if cur > 0 {
			nonZero = append(nonZero, fmt.Sprintf("%s %d", file, cur))
		}
		// The link's history is what the counter held before the window
		// (what rose in it is told as a rise; a counter that went down had
		// its history before).
		if k.History && v1 > 0 {
			history = append(history, fmt.Sprintf("%s %d", file, v1))
		}
	}
	if read == 0 && len(unreadable) == 0 {
		c.Status = Skip
		c.Summary = fmt.Sprintf("no error counters in ports/%d/counters or hw_counters: a VF or a driver without counters", cp.port)
		c.Read = []string{dirs + ": none of rdmacounter's error counters"}
		return c
	}
	how := "read once (no counter window: rises not checked)"
	if twice {
		how = fmt.Sprintf("read twice, %s apart", window)
	}
	c.Read = append(c.Read, fmt.Sprintf("%s: %d error counters %s (link counters too: a PF)", dirs, read, how))
	if len(nonZero) > 0 {
		c.Read = append(c.Read, "non-zero: "+strings.Join(nonZero, ", "))
	}
	in := fmt.Sprintf(" in %s", window)
	var parts []string
	if len(linkRise) > 0 {
		parts = append(parts, "link errors rose"+in+": "+strings.Join(linkRise, ", "))
	}
	if len(transportRise) > 0 {
		parts = append(parts, "requests exhausted their transport retries (their queue pairs failed)"+in+": "+strings.Join(transportRise, ", "))
	}
	if len(retrans) > 0 {
		parts = append(parts, "retransmissions"+in+" (loss or congestion): "+strings.Join(retrans, ", "))
	}
	if len(history) > 0 {
		parts = append(parts, "link errors since boot: "+strings.Join(history, ", ")+" (history, not necessarily now)")
	}
	var notes []string
	if len(unjudged) > 0 {
		notes = append(notes, "also rose (not judged): "+strings.Join(unjudged, ", "))
	}
	if len(down) > 0 {
		notes = append(notes, "went down, not counted as a rise (a wrap or a device reset): "+strings.Join(down, ", "))
	}
	if len(unreadable) > 0 {
		notes = append(notes, "unreadable: "+strings.Join(unreadable, "; "))
	}
	c.Read = append(c.Read, notes...)
	link := fmt.Sprintf("%s port %d", cp.rdma, cp.port)
	if cp.netdev != "" {
		link += " (" + cp.netdev + ")"
	}
	switch {
	case len(linkRise)+len(transportRise) > 0:
		c.Status = Fail
		c.Fix = fmt.Sprintf("reseat or replace the cable or transceiver of %s and check its switch port (the switch's error counters for it, its optics); "+
			"railyard top shows which pod's traffic runs on the port", link)
		if cp.roce {
			c.Fix += "; on RoCE, check PFC and ECN (the roce-qos check): a lossy fabric drops packets under congestion"
		}
	case len(retrans)+len(history) > 0:
		c.Status = Warn
		var fixes []string
		if len(retrans) > 0 {
			f := "retransmissions mean packets were lost or late: railyard top shows which pod's traffic and its congestion (CONG/s); "
			if cp.roce {
				f += "on RoCE, check PFC and ECN (the roce-qos check) and the switch's buffers"
			} else {
				f += "check the switch ports' congestion (port_xmit_wait, discards) on the fabric"
			}
			fixes = append(fixes, f)
		}
		if len(history) > 0 {
			fixes = append(fixes, "the link counters keep their values until a reboot or a driver reload (perfquery -R clears them): "+
				"watch whether they move (railyard doctor --counter-window 30s, railyard top); if they rise, reseat or replace the cable or transceiver of "+
				link+" and check its switch port")
		}
		c.Fix = strings.Join(fixes, "; ")
	case len(unreadable) > 0:
		c.Status = Skip
		c.Summary = "cannot read every error counter: " + strings.Join(unreadable, "; ")
		if read > 0 {
			c.Summary += fmt.Sprintf("; of the %d read, none says a fault", read)
		}
		return c
	default:
		c.Summary = fmt.Sprintf("%d error counters %s: none rose; no link errors since boot", read, how)
		if !twice {
			c.Summary = fmt.Sprintf("%d error counters %s; no link errors since boot", read, how)
		}
		c.Summary = strings.Join(append([]string{c.Summary}, notes...), "; ")
		return c
	}
	c.Summary = strings.Join(append(parts, notes...), "; ")
	return c
}
