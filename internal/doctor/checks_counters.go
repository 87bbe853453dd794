package doctor

import (
	"context"
	"errors"
	"fmt"
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
