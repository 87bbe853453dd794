//go:build linux

package netops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/containernetworking/plugins/pkg/netlinksafe"
	"golang.org/x/sys/unix"
)

// The RDMA operations use the RDMA netlink family; they need an RDMA device
// and are covered by the fake in tests on machines without one.

// rdmaHandle is a netlink handle for the RDMA family in namespace path.
func (lx Linux) rdmaHandle(path string) (netlinksafe.Handle, func(), error) {
	return lx.handleFor(path, unix.NETLINK_RDMA)
}

// RDMANetnsMode implements Ops.
func (lx Linux) RDMANetnsMode(_ context.Context) (string, error) {
	h, done, err := lx.rdmaHandle(Host)
	if err != nil {
		return "", err
	}
	defer done()
	mode, err := h.RdmaSystemGetNetnsMode()
	if err != nil {
		return "", fmt.Errorf("reading RDMA netns mode (is the RDMA subsystem loaded?): %w", err)
	}
	return mode, nil
}

// RDMADeviceIn implements Ops.
func (lx Linux) RDMADeviceIn(_ context.Context, path, dev string) (bool, error) {
	h, done, err := lx.rdmaHandle(path)
	if err != nil {
		return false, err
	}
	defer done()
	if _, err := h.RdmaLinkByName(dev); err != nil {
		if errors.Is(err, syscall.ENODEV) || isRDMANotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("looking up RDMA device %s in %s: %w", dev, nsLabel(path), err)
	}
	return true, nil
}

// isRDMANotFound matches netlink's error for an unknown RDMA device name
// ("Rdma device mlx5_0 not found"); netlink has no sentinel for it.
func isRDMANotFound(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "Rdma device ") && strings.HasSuffix(msg, " not found")
}

// MoveRDMA implements Ops.
func (lx Linux) MoveRDMA(_ context.Context, from, dev, to string) error {
	target, err := nsHandle(to)
	if err != nil {
		return err
	}
	defer target.Close()
	h, done, err := lx.rdmaHandle(from)
	if err != nil {
		return err
	}
	defer done()
	l, err := h.RdmaLinkByName(dev)
	if err != nil {
		if isRDMANotFound(err) {
			return fmt.Errorf("%s in %s: %w", dev, nsLabel(from), ErrRDMANotFound)
		}
		return fmt.Errorf("looking up RDMA device %s in %s: %w", dev, nsLabel(from), err)
	}
	if err := h.RdmaLinkSetNsFd(l, uint32(target)); err != nil {
		return fmt.Errorf("moving RDMA device %s from %s to %s: %w", dev, nsLabel(from), nsLabel(to), err)
	}
	return nil
}
