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
