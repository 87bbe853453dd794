package nodefabric

import "github.com/railyard-io/railyard/internal/fabric"

// DefaultHoldRounds is how many rounds a neighbor not heard stays
// published by default: at the chart's 5 minute interval, a quarter of an
// hour of a silent port before its rail label goes.
const DefaultHoldRounds = 3

// goneNIC is the reason a port whose NIC this round's discovery did not
// list carries.
const goneNIC = "its NIC was not found on the node this round"

// Hold carries the last published ports (prev: what the Node's annotation
// says) into this round's (fresh), so that one quiet round does not move
// the node's labels. Ports are matched by NIC and rail. A port that heard
// a neighbor this round is published as heard. One that did not, and
// whose last published port had a switch:
//   - keeps that switch for up to rounds rounds in a row
//     (fabric.Port.StaleRounds counts them, NoNeighbor says why this round
//     heard nothing): its rail label and leaf set stay;
//   - past that, or at once when the switch withdrew it (withdrawn, by
//     NIC: an LLDP shutdown frame), has no switch and keeps it as
//     fabric.Port.LastSwitch: its rail label goes, the node's leaf set
//     stays, and the rail is degraded (fabric.DegradedRailsLabel);
//   - a LastSwitch already published is kept until the port hears a
//     neighbor again (the same leaf, or a new one: the node was recabled).
//
// A port that heard several neighbors this round (fabric.Port.Switches)
// names, of them, the switch its last published port named (keepPublished),
// so that its rail label does not flip between them from round to round.
//
// A NIC of prev with a rail that fresh lacks (its driver gone, the card
// dead, discovery failing) is carried the same way, with goneNIC as its
// reason: a rail the node is known to have stays in its leaf set. Deleting
// the annotation forgets it all. Ports are not modified.
func Hold(prev, fresh []fabric.Port, rounds int, withdrawn map[string]bool) []fabric.Port {
	last := map[string]fabric.Port{}
	for _, q := range prev {
		if _, dup := last[q.NIC]; q.NIC != "" && !dup {
			last[q.NIC] = q
		}
	}
	out := make([]fabric.Port, 0, len(fresh))
	seen := map[string]bool{}
	for _, p := range fresh {
		seen[p.NIC] = true
		q, ok := last[p.NIC]
		if ok && q.Rail == p.Rail && len(p.Switches) > 0 {
			p = keepPublished(p, q)
		}
		if p.Switch != "" || len(p.Switches) > 0 || !ok || p.NIC == "" || q.Rail != p.Rail {
			out = append(out, p)
			continue
		}
		out = append(out, carry(p, q, rounds, withdrawn[p.NIC]))
	}
	for _, q := range prev {
		if q.NIC == "" || q.Rail < 0 || seen[q.NIC] || (q.Switch == "" && q.LastSwitch == "") {
			continue
		}
		seen[q.NIC] = true
		p := q
		p.Switch, p.SwitchPort, p.Switches, p.SwitchPorts, p.StaleRounds, p.LastSwitch = "", "", nil, nil, 0, ""
		p.NoNeighbor = goneNIC
		out = append(out, carry(p, q, rounds, false))
	}
	return out
}

// carry gives p, which heard no neighbor this round, what its last
// published port q had: q's switch while the hold lasts, else q's switch
// (or q's own last one) as its last switch.
func carry(p, q fabric.Port, rounds int, withdrawn bool) fabric.Port {
	switch {
	case q.Switch != "" && !withdrawn && q.StaleRounds < rounds:
		p.Switch, p.SwitchPort, p.Switches, p.SwitchPorts = q.Switch, q.SwitchPort, q.Switches, q.SwitchPorts
		p.StaleRounds = q.StaleRounds + 1
	case q.Switch != "":
		p.LastSwitch = q.Switch
	case q.LastSwitch != "":
		p.LastSwitch = q.LastSwitch
	}
	return p
}

// keepPublished returns p, which heard several neighbors, naming as its
// Switch and SwitchPort the one of them that q, its last published port,
// named (its switch, else its last switch; the same switch port first),
// when p heard it again; else p as it is (the first of them).
func keepPublished(p, q fabric.Port) fabric.Port {
	sw, port := q.Switch, q.SwitchPort
	if sw == "" {
		sw, port = q.LastSwitch, ""
	}
	at := -1
	for i, s := range p.Switches {
		if s != sw {
			continue
		}
		if i < len(p.SwitchPorts) && p.SwitchPorts[i] == port {
			at = i
			break
		}
		if at < 0 {
			at = i
		}
	}
	if sw == "" || at < 0 {
		return p
	}
	p.Switch, p.SwitchPort = p.Switches[at], ""
	if at < len(p.SwitchPorts) {
		p.SwitchPort = p.SwitchPorts[at]
	}
	return p
}
