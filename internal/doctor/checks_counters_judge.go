package doctor

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/rdmacounter"
)

// tally is what one port's error counters showed, each list in table
// order: rises by what the table's Health says they mean, values, and
// what could not be read.
type tally struct {
	linkRise, transportRise, retrans, unjudged []string
	// history are link counters above 0 before the window (History).
	history []string
	// nonZero are the counters above 0 at the last reading.
	nonZero []string
	// down are counters that went down in the window (a wrap or a reset).
	down       []string
	unreadable []string
	read       int // error counters the port has
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
	t := tallyCounters(cp, bad1, bad2, twice)
	if t.read == 0 && len(t.unreadable) == 0 {
		c.Status = Skip
		c.Summary = fmt.Sprintf("no error counters in ports/%d/counters or hw_counters: a VF or a driver without counters", cp.port)
		c.Read = []string{dirs + ": none of rdmacounter's error counters"}
		return c
	}
	how := "read once (no counter window: rises not checked)"
	if twice {
		how = fmt.Sprintf("read twice, %s apart", window)
	}
	c.Read = append(c.Read, fmt.Sprintf("%s: %d error counters %s (link counters too: a PF)", dirs, t.read, how))
	if len(t.nonZero) > 0 {
		c.Read = append(c.Read, "non-zero: "+strings.Join(t.nonZero, ", "))
	}
	notes := t.notes()
	c.Read = append(c.Read, notes...)
	switch {
	case len(t.linkRise)+len(t.transportRise) > 0:
		c.Status = Fail
		c.Fix = failFix(cp)
	case len(t.retrans)+len(t.history) > 0:
		c.Status = Warn
		c.Fix = warnFix(cp, t)
	case len(t.unreadable) > 0:
		c.Status = Skip
		c.Summary = "cannot read every error counter: " + strings.Join(t.unreadable, "; ")
		if t.read > 0 {
			c.Summary += fmt.Sprintf("; of the %d read, none says a fault", t.read)
		}
		return c
	default:
		c.Summary = fmt.Sprintf("%d error counters %s: none rose; no link errors since boot", t.read, how)
		if !twice {
			c.Summary = fmt.Sprintf("%d error counters %s; no link errors since boot", t.read, how)
		}
		c.Summary = strings.Join(append([]string{c.Summary}, notes...), "; ")
		return c
	}
	c.Summary = strings.Join(append(t.findings(window), notes...), "; ")
	return c
}

// tallyCounters goes through the table's error counters of one port:
// bad1 and bad2 are the files each reading could not read (by row).
func tallyCounters(cp *counterPort, bad1, bad2 map[int]error, twice bool) tally {
	var t tally
	for i, k := range rdmacounter.Counters() {
		if k.Kind != rdmacounter.Error {
			continue
		}
		file := string(k.Dir) + "/" + k.File
		if err := bad1[i]; err != nil {
			t.unreadable = append(t.unreadable, err.Error())
			continue
		}
		if err := bad2[i]; err != nil {
			t.unreadable = append(t.unreadable, err.Error()+" (at the second reading)")
			continue
		}
		v1, ok1 := cp.first.s.Raw(i)
		if !ok1 {
			continue // the driver has no such file
		}
		t.read++
		cur := v1
		if twice {
			v2, ok2 := cp.second.s.Raw(i)
			if !ok2 { // listed at the first reading, gone at the second
				t.unreadable = append(t.unreadable, file+": gone at the second reading")
				continue
			}
			cur = v2
			t.rise(k, file, v1, v2)
		}
		if cur > 0 {
			t.nonZero = append(t.nonZero, fmt.Sprintf("%s %d", file, cur))
		}
		// The link's history is what the counter held before the window
		// (what rose in it is told as a rise; a counter that went down had
		// its history before).
		if k.History && v1 > 0 {
			t.history = append(t.history, fmt.Sprintf("%s %d", file, v1))
		}
	}
	return t
}

// rise files counter k's move from v1 to v2 by what its Health says.
func (t *tally) rise(k rdmacounter.Counter, file string, v1, v2 uint64) {
	d, ev := k.RawDelta(v1, v2)
	switch {
	case ev != rdmacounter.Counted:
		// A wrap and a reset from the upper half of the range look
		// alike (rdmacounter.RawDelta): neither is a rise to judge.
		t.down = append(t.down, fmt.Sprintf("%s %d → %d", file, v1, v2))
	case d > 0:
		r := fmt.Sprintf("%s +%d (%d → %d)", file, d, v1, v2)
		switch k.Health {
		case rdmacounter.LinkFault:
			t.linkRise = append(t.linkRise, r)
		case rdmacounter.TransportFailure:
			t.transportRise = append(t.transportRise, r)
		case rdmacounter.Retransmission:
			t.retrans = append(t.retrans, r)
		default:
			t.unjudged = append(t.unjudged, r)
		}
	}
}

// findings are the summary's parts that set a fail or a warning.
func (t tally) findings(window time.Duration) []string {
	in := fmt.Sprintf(" in %s", window)
	var parts []string
	if len(t.linkRise) > 0 {
		parts = append(parts, "link errors rose"+in+": "+strings.Join(t.linkRise, ", "))
	}
	if len(t.transportRise) > 0 {
		parts = append(parts, "requests exhausted their transport retries (their queue pairs failed)"+in+": "+strings.Join(t.transportRise, ", "))
	}
	if len(t.retrans) > 0 {
		parts = append(parts, "retransmissions"+in+" (loss or congestion): "+strings.Join(t.retrans, ", "))
	}
	if len(t.history) > 0 {
		parts = append(parts, "link errors since boot: "+strings.Join(t.history, ", ")+" (history, not necessarily now)")
	}
	return parts
}

// notes are what changes no status: rises not judged, counters that went
// down, files not read.
func (t tally) notes() []string {
	var notes []string
	if len(t.unjudged) > 0 {
		notes = append(notes, "also rose (not judged): "+strings.Join(t.unjudged, ", "))
	}
	if len(t.down) > 0 {
		notes = append(notes, "went down, not counted as a rise (a wrap or a device reset): "+strings.Join(t.down, ", "))
	}
	if len(t.unreadable) > 0 {
		notes = append(notes, "unreadable: "+strings.Join(t.unreadable, "; "))
	}
	return notes
}

// link names the port and its netdev for a fix.
func (cp *counterPort) link() string {
	link := fmt.Sprintf("%s port %d", cp.rdma, cp.port)
	if cp.netdev != "" {
		link += " (" + cp.netdev + ")"
	}
	return link
}

// failFix is the fix of a link fault or a transport failure that rose.
func failFix(cp *counterPort) string {
	fix := fmt.Sprintf("reseat or replace the cable or transceiver of %s and check its switch port (the switch's error counters for it, its optics); "+
		"railyard top shows which pod's traffic runs on the port", cp.link())
	if cp.roce {
		fix += "; on RoCE, check PFC and ECN (the roce-qos check): a lossy fabric drops packets under congestion"
	}
	return fix
}

// warnFix is the fix of retransmissions that rose and of link errors
// since boot.
func warnFix(cp *counterPort, t tally) string {
	var fixes []string
	if len(t.retrans) > 0 {
		f := "retransmissions mean packets were lost or late: railyard top shows which pod's traffic and its congestion (CONG/s); "
		if cp.roce {
			f += "on RoCE, check PFC and ECN (the roce-qos check) and the switch's buffers"
		} else {
			f += "check the switch ports' congestion (port_xmit_wait, discards) on the fabric"
		}
		fixes = append(fixes, f)
	}
	if len(t.history) > 0 {
		fixes = append(fixes, "the link counters keep their values until a reboot or a driver reload (perfquery -R clears them): "+
			"watch whether they move (railyard doctor --counter-window 30s, railyard top); if they rise, reseat or replace the cable or transceiver of "+
			cp.link()+" and check its switch port")
	}
	return strings.Join(fixes, "; ")
}
