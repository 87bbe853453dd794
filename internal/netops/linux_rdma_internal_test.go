//go:build linux

package netops

import (
	"errors"
	"fmt"
	"testing"
)

func TestIsRDMANotFoundMatchesNetlinkMessage(t *testing.T) {
	// The message netlink v1.3.1 builds in RdmaLinkByName.
	if !isRDMANotFound(fmt.Errorf("Rdma device %v not found", "mlx5_0")) {
		t.Fatal("netlink's not-found error not recognised")
	}
	for _, err := range []error{nil, errors.New("Rdma device mlx5_0: permission denied"), errors.New("not found")} {
		if isRDMANotFound(err) {
			t.Errorf("%v taken for not-found", err)
		}
	}
}
