package ibneighbor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/lldp"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// Runner runs a command and returns its standard output; a command that
// fails returns what it printed and an error saying how it failed (Exec:
// its exit status and the first line of its standard error). A command
// that is not installed fails with an error wrapping exec.ErrNotFound.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// Tool is the command Query runs (infiniband-diags).
const Tool = "smpquery"

// Why a port has no neighbor, wrapped by Query's errors.
var (
	// ErrNotInstalled: smpquery is not on this host (or in this container).
	ErrNotInstalled = errors.New("smpquery not found: install infiniband-diags")
	// ErrPortDown: the local port's link is down, so nothing answers at
	// hop 1.
	ErrPortDown = errors.New("the port is down")
	// ErrQuery: smpquery ran and failed (no answer from hop 1, no access
	// to the port's umad device, ...); the error carries what it said.
	ErrQuery = errors.New("smpquery failed")
	// ErrNotSwitch: the node at hop 1 answered but is not a switch (a
	// Channel Adapter: a back-to-back cable to another host). Query then
	// returns that neighbor too.
	ErrNotSwitch = errors.New("the node at hop 1 is not a switch")
)

// Type names of Query's neighbors' IDs (lldp.Neighbor's ChassisIDType
// and PortIDType).
const (
	ChassisIDType = "InfiniBand node GUID"
	PortIDType    = "InfiniBand port number"
)

// Query asks what the InfiniBand port `port` of the RDMA device ca is
// cabled to: the node at hop 1 of a directed route from the port. It
// returns it as an lldp.Neighbor: ChassisID is the node GUID
// (0x0002c9030000abcd), PortID the node's port the cable lands on
// ("17"), SystemName its NodeDesc and SystemDescription its node type
// ("InfiniBand Switch"). A node that is not a switch is returned with an
// error wrapping ErrNotSwitch; every other error (wrapping
// ErrNotInstalled, ErrPortDown, ErrQuery or ErrBadOutput) comes with no
// neighbor. Each error begins with the port ("mlx5_0 port 1: ").
func Query(ctx context.Context, r Runner, ca string, port int) (lldp.Neighbor, error) {
	if !validCA(ca) {
		return lldp.Neighbor{}, fmt.Errorf("%q is not an RDMA device name: no InfiniBand port to query", clip(ca))
	}
	if port < 1 || port > 254 {
		return lldp.Neighbor{}, fmt.Errorf("%s port %d: not a port number (1 to 254)", ca, port)
	}
	run := func(op string, route ...string) ([]byte, error) {
		return r.Run(ctx, Tool, append([]string{"-C", ca, "-P", strconv.Itoa(port), "-D", op}, route...)...)
	}
	out, err := run("nodeinfo", "0,1")
	if err != nil {
		return lldp.Neighbor{}, failed(ctx, ca, port, "nodeinfo", out, err, run)
	}
	ni, err := ParseNodeInfo(out)
	if err != nil {
		return lldp.Neighbor{}, fmt.Errorf("%s port %d: smpquery -D nodeinfo 0,1: %w", ca, port, err)
	}
	out, err = run("nodedesc", "0,1")
	if err != nil {
		return lldp.Neighbor{}, failed(ctx, ca, port, "nodedesc", out, err, nil)
	}
	desc, err := ParseNodeDesc(out)
	if err != nil {
		return lldp.Neighbor{}, fmt.Errorf("%s port %d: smpquery -D nodedesc 0,1: %w", ca, port, err)
	}
	nb := lldp.Neighbor{
		ChassisID: FormatGUID(ni.GUID), ChassisIDType: ChassisIDType,
		PortID: strconv.Itoa(ni.LocalPort), PortIDType: PortIDType,
		SystemName: desc, SystemDescription: "InfiniBand " + ni.NodeType,
	}
	if ni.NodeType != Switch {
		what := "a " + ni.NodeType
		if ni.NodeType == ChannelAdapter {
			what = "a back-to-back cable to another host's Channel Adapter"
		}
		return nb, fmt.Errorf("%s port %d: %w: %s %s port %s (%q), %s", ca, port, ErrNotSwitch, ni.NodeType, nb.ChassisID, nb.PortID, desc, what)
	}
	return nb, nil
}

// failed explains a failed smpquery run: not installed, stopped, the
// port down (asked of the local port, which answers while its link is
// down; only after nodeinfo, when diagnose is set), or what smpquery said.
func failed(ctx context.Context, ca string, port int, op string, out []byte, err error, diagnose func(string, ...string) ([]byte, error)) error {
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("%s port %d: %w", ca, port, ErrNotInstalled)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s port %d: smpquery -D %s 0,1: %w", ca, port, op, ctx.Err())
	}
	if diagnose != nil {
		if pi, perr := diagnose("portinfo", "0", strconv.Itoa(port)); perr == nil {
			if ps, perr := ParsePortState(pi); perr == nil && ps.LinkState == "Down" {
				return fmt.Errorf("%s port %d: %w (LinkState %s, PhysLinkState %s): no neighbor answers", ca, port, ErrPortDown, ps.LinkState, ps.PhysLinkState)
			}
		}
	}
	hint := ""
	why := firstIberror(out)
	if said := why + " " + err.Error(); strings.Contains(said, "Failed to open") || strings.Contains(said, "Permission denied") {
		hint = "; smpquery needs read-write access to the port's umad device"
	}
	why = termsafe.Escape(why) // smpquery's words are printed: no terminal escapes
	if why != "" {
		return fmt.Errorf("%s port %d: %w: smpquery -D %s 0,1: %s (%w)%s", ca, port, ErrQuery, op, why, err, hint)
	}
	return fmt.Errorf("%s port %d: %w: smpquery -D %s 0,1: %w%s", ca, port, ErrQuery, op, err, hint)
}

// firstIberror returns what the first iberror line of out says.
func firstIberror(out []byte) string {
	if len(out) > maxParse {
		out = out[:maxParse]
	}
	for _, line := range strings.Split(string(out), "\n") {
		if why := iberror(line); why != "" {
			return why
		}
	}
	return ""
}

// validCA reports whether ca can be an RDMA device name given to
// smpquery -C: letters, digits, '_', '-' and '.', not starting with '-'
// (never an option), at most 63 bytes (IB_DEVICE_NAME_MAX 64).
func validCA(ca string) bool {
	if ca == "" || len(ca) > 63 || ca[0] == '-' {
		return false
	}
	for i := 0; i < len(ca); i++ {
		c := ca[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
