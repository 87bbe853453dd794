package porthealth

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// Class is what a counter's rise says about its port.
type Class int

const (
	// Flap: the link went down, or its error recovery retrained it. One
	// is enough to degrade.
	Flap Class = iota + 1
	// LinkError: a physical link error the link survived. Config.LinkErrors
	// of them (all such counters together) in one window degrade.
	LinkError
)

// Rule is one counter that degrades a port, by rdmacounter's name, and
// its class.
type Rule struct {
	Counter string
	Class   Class
}

// Rules are the counters that degrade a port, in the order reasons name
// them (by name): rdmacounter's table is their one source, every counter
// whose Health is LinkFault, a Flap when the table marks it so, else a
// LinkError. Every other counter's rise is left to railyard doctor.
func Rules() []Rule {
	out := make([]Rule, 0, len(rules))
	for _, r := range rules {
		out = append(out, Rule{r.counter.Name, r.class})
	}
	return out
}

// rule is a Rule with its counter's row in rdmacounter.Counters().
type rule struct {
	counter rdmacounter.Counter
	index   int
	class   Class
}

// rules are the table's link faults, by name; computed once, never
// changed.
var rules = func() []rule {
	var out []rule
	for i, c := range rdmacounter.Counters() {
		if c.Health != rdmacounter.LinkFault {
			continue
		}
		class := LinkError
		if c.Flap {
			class = Flap
		}
		out = append(out, rule{c, i, class})
	}
	slices.SortFunc(out, func(a, b rule) int { return strings.Compare(a.counter.Name, b.counter.Name) })
	return out
}()

// Config is the threshold (docs/agent.md, "Health from counters"; the
// agent's defaults are api/config/v1alpha1's ErrorCounters').
type Config struct {
	// Window is the longest span two compared readings are apart: rises
	// add up over at most this long.
	Window time.Duration
	// LinkErrors is how many LinkError rises in one window degrade.
	LinkErrors uint64
	// Hold is how long a NIC stays degraded after its last counted rise.
	Hold time.Duration
}

type portKey struct {
	rdma string
	port int
}

// port is what the tracker remembers of one PF port.
type port struct {
	base     rdmacounter.Sample // the reading rises are counted from
	haveBase bool
	until    time.Time // degraded until then
	reason   string
}

// Tracker judges the ports of one node across readings. Not safe for
// concurrent use (the agent calls it under its lock).
type Tracker struct {
	cfg   Config
	fs    sysfs.FS
	ports map[portKey]*port
}

// New returns a tracker reading through fs.
func New(cfg Config, fs sysfs.FS) *Tracker {
	return &Tracker{cfg: cfg, fs: fs, ports: map[portKey]*port{}}
}

// Observe reads every PF port of t at now and returns the reason of each
// degraded NIC, by PCI address (nil when none is). A port whose counters
// cannot be read is not judged (and keeps what it was until its hold
// ends); a port that left the topology is forgotten.
func (tr *Tracker) Observe(t *topology.Topology, now time.Time) map[string]string {
	seen := map[portKey]bool{}
	var out map[string]string
	for _, dev := range rdmacounter.Devices(t, nil) {
		if dev.Kind != rdmacounter.KindPF {
			continue // a VF's link is its PF's
		}
		var reasons []string
		for _, num := range dev.Ports {
			k := portKey{dev.RDMA, num}
			seen[k] = true
			p := tr.ports[k]
			if p == nil {
				p = &port{}
				tr.ports[k] = p
			}
			s, err := rdmacounter.Read(tr.fs, dev.RDMA, num, true, now)
			if err == nil {
				tr.judge(p, s, num, now)
			}
			if now.Before(p.until) {
				reasons = append(reasons, p.reason)
			}
		}
		if len(reasons) > 0 {
			if out == nil {
				out = map[string]string{}
			}
			out[dev.PCI] = strings.Join(reasons, "; ")
		}
	}
	for k := range tr.ports {
		if !seen[k] {
			delete(tr.ports, k)
		}
	}
	return out
}

// judge counts the rises from p's base to s and degrades p when Rules
// say so; the base moves to s once it is a window old.
func (tr *Tracker) judge(p *port, s rdmacounter.Sample, num int, now time.Time) {
	if !p.haveBase {
		p.base, p.haveBase = s, true
		return
	}
	var flaps, linkErrs []string
	var linkSum uint64
	rebase := false // a counter went down: later rises count from s
	for _, r := range rules {
		v0, ok0 := p.base.Raw(r.index)
		v1, ok1 := s.Raw(r.index)
		if !ok0 || !ok1 {
			continue
		}
		d, ev := r.counter.RawDelta(v0, v1)
		if ev != rdmacounter.Counted {
			rebase = true
			continue
		}
		if d == 0 {
			continue
		}
		rise := fmt.Sprintf("%s +%d", r.counter.File, d)
		switch r.class {
		case Flap:
			flaps = append(flaps, rise)
		case LinkError:
			linkErrs = append(linkErrs, rise)
			linkSum += d
		}
	}
	span := s.Time.Sub(p.base.Time).Round(time.Second)
	switch {
	case len(flaps) > 0:
		p.until, p.reason = now.Add(tr.cfg.Hold), fmt.Sprintf("port %d link flapped (%s in %s)", num, strings.Join(append(flaps, linkErrs...), ", "), span)
	case linkSum >= tr.cfg.LinkErrors && linkSum > 0:
		p.until, p.reason = now.Add(tr.cfg.Hold), fmt.Sprintf("port %d link errors (%s in %s, at least %d degrade)", num, strings.Join(linkErrs, ", "), span, tr.cfg.LinkErrors)
	}
	if rebase || len(flaps) > 0 || linkSum >= tr.cfg.LinkErrors || s.Time.Sub(p.base.Time) >= tr.cfg.Window {
		p.base = s
	}
}
