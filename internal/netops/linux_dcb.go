//go:build linux

package netops

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// dcbMsg is struct dcbmsg: family, command, padding.
type dcbMsg struct{ cmd uint8 }

func (m dcbMsg) Len() int { return sizeofDCBMsg }
func (m dcbMsg) Serialize() []byte {
	return []byte{unix.AF_UNSPEC, m.cmd, 0, 0}
}

// DCB reads a host netdev's IEEE DCB settings over rtnetlink (RTM_GETDCB,
// DCB_CMD_IEEE_GET), as mlnx_qos does; vishvananda/netlink has no DCB
// support, so this is the request itself. Reading needs no privilege.
func (lx Linux) DCB(_ context.Context, netdev string) (DCB, error) {
	if err := ValidIfName(netdev); err != nil {
		return DCB{}, err
	}
	req := nl.NewNetlinkRequest(unix.RTM_GETDCB, 0)
	req.AddData(dcbMsg{cmd: dcbCmdIEEEGet})
	req.AddData(nl.NewRtAttr(dcbAttrIfname, nl.ZeroTerminated(netdev)))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_GETDCB)
	switch {
	case errors.Is(err, syscall.EOPNOTSUPP):
		return DCB{}, fmt.Errorf("DCB of %s: %w", netdev, ErrDCBNotSupported)
	case errors.Is(err, syscall.ENODEV):
		return DCB{}, fmt.Errorf("DCB of %s: %w", netdev, ErrLinkNotFound)
	case err != nil:
		return DCB{}, fmt.Errorf("DCB of %s: %w", netdev, err)
	case len(msgs) == 0:
		return DCB{}, fmt.Errorf("DCB of %s: no reply", netdev)
	}
	d, err := parseDCBReply(msgs[0])
	if err != nil {
		return DCB{}, fmt.Errorf("DCB of %s: %w", netdev, err)
	}
	return d, nil
}

// SetDCB sets a host netdev's PFC priorities (bit p: priority p) and trust
// mode over rtnetlink (RTM_SETDCB, DCB_CMD_IEEE_SET; needs CAP_NET_ADMIN),
// as mlnx_qos --pfc and --trust do. Trust dscp is the APP table's DSCP
// entries: mlx5 trusts DSCP from its first DSCP entry on, so "dscp" adds
// the 64 entries of the default map (DSCP d on priority d>>3) when the
// table has none, and "pcp" deletes (DCB_CMD_IEEE_DEL) those it has.
func (lx Linux) SetDCB(ctx context.Context, netdev string, pfc uint8, trust string) error {
	if trust != "dscp" && trust != "pcp" {
		return fmt.Errorf("trust %q: want dscp or pcp", trust)
	}
	cur, err := lx.DCB(ctx, netdev)
	if err != nil {
		return err
	}
	set := ieeeAttrs(cur.PFCCap, &pfc, nil)
	if trust == "dscp" && len(cur.DSCP) == 0 {
		set = ieeeAttrs(cur.PFCCap, &pfc, DefaultDSCPMap())
	}
	if err := dcbRequest(netdev, dcbCmdIEEESet, set); err != nil {
		return err
	}
	if trust == "pcp" && len(cur.DSCP) > 0 {
		return dcbRequest(netdev, dcbCmdIEEEDel, ieeeAttrs(0, nil, cur.DSCP))
	}
	return nil
}

// dcbRequest sends one DCB command with the IEEE attribute ieee and reads
// the kernel's answer.
func dcbRequest(netdev string, cmd uint8, ieee []byte) error {
	if err := ValidIfName(netdev); err != nil {
		return err
	}
	req := nl.NewNetlinkRequest(unix.RTM_SETDCB, 0)
	req.AddData(dcbMsg{cmd: cmd})
	req.AddData(nl.NewRtAttr(dcbAttrIfname, nl.ZeroTerminated(netdev)))
	req.AddData(rawData(ieee))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_SETDCB)
	if err == nil && len(msgs) > 0 {
		// dcbnl answers a set with the driver's result as a u8 in
		// DCB_ATTR_IEEE, not as the netlink error.
		err = setResult(msgs[0])
	}
	switch {
	case errors.Is(err, syscall.EOPNOTSUPP):
		return fmt.Errorf("DCB of %s: %w", netdev, ErrDCBNotSupported)
	case errors.Is(err, syscall.ENODEV):
		return fmt.Errorf("DCB of %s: %w", netdev, ErrLinkNotFound)
	case err != nil:
		return fmt.Errorf("setting DCB of %s: %w", netdev, err)
	}
	return nil
}

// rawData is bytes already in netlink form.
type rawData []byte

func (r rawData) Len() int          { return len(r) }
func (r rawData) Serialize() []byte { return r }
