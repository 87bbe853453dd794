package sysfs

import (
	"fmt"
	"path/filepath"
	"strings"
)

// FirmwareVersion reads an RDMA device's fw_ver ("20.39.1002" on a
// ConnectX-6), as ibv_devinfo and ibstat print it.
func (f FS) FirmwareVersion(rdma string) (string, error) {
	if rdma == "" || strings.ContainsAny(rdma, "/\x00") || rdma == "." || rdma == ".." {
		return "", fmt.Errorf("invalid RDMA device name %q", rdma)
	}
	s, err := f.ReadString(filepath.Join("class/infiniband", rdma, "fw_ver"))
	if err != nil {
		return "", err
	}
	return Printable(Clip(s, 64)), nil
}
