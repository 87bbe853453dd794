package draview

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/strictjson"
)

// StatusDir is the directory, in the view's directory, of the device
// status records railyard-cni writes for the agent: one per attachment of
// a claimed device, which the agent's DRA driver turns into the claim's
// status.devices (KEP-4817 networkData).
const StatusDir = "dra-status"

// Bounds of the status records: a record is a few hundred bytes; a node
// has at most a few thousand attachments.
const (
	maxStatusSize  = 64 << 10
	maxStatusFiles = 8192
)

// DeviceStatus is what railyard-cni's ADD did with a claim's device.
type DeviceStatus struct {
	Version int `json:"version"`
	// ClaimUID and PCI name the claim and its device.
	ClaimUID string `json:"claimUID"`
	PCI      string `json:"pci"`
	// ContainerID and IfName are the attachment (CNI_CONTAINERID,
	// CNI_IFNAME): the record's name.
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifName"`
	// MAC is the interface's hardware address in the pod, IPs its
	// addresses in CIDR notation ("192.0.2.5/24").
	MAC string   `json:"mac,omitempty"`
	IPs []string `json:"ips,omitempty"`
}

// safeName is what a container ID or an interface name must look like to
// name a record: no separator, no dot-dot, bounded (maxSafeName, checked
// apart: a {0,127} repetition compiles to a 127-fold program, which took
// 0.5 ms of every railyard-cni start).
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]*$`)

// maxSafeName bounds a name safeName accepts.
const maxSafeName = 128

func isSafeName(s string) bool { return len(s) <= maxSafeName && safeName.MatchString(s) }

// statusPath is the record of attachment (containerID, ifName) in dir;
// false when either cannot name a file beneath it.
func statusPath(dir, containerID, ifName string) (string, bool) {
	if !isSafeName(containerID) || !isSafeName(ifName) || strings.Contains(containerID+ifName, "..") {
		return "", false
	}
	return filepath.Join(dir, StatusDir, containerID+"_"+ifName+".json"), true
}

func (s *DeviceStatus) check() error {
	if s.Version != version {
		return fmt.Errorf("status version %d, this reader knows %d", s.Version, version)
	}
	if s.ClaimUID == "" || len(s.ClaimUID) > 128 {
		return fmt.Errorf("status: claim UID %q", s.ClaimUID)
	}
	if _, err := pciaddr.Parse(s.PCI); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if _, ok := statusPath("", s.ContainerID, s.IfName); !ok {
		return fmt.Errorf("status: container %q, interface %q: not a record name", s.ContainerID, s.IfName)
	}
	if s.MAC != "" {
		if _, err := net.ParseMAC(s.MAC); err != nil {
			return fmt.Errorf("status: %w", err)
		}
	}
	if len(s.IPs) > 16 {
		return fmt.Errorf("status: %d IPs", len(s.IPs))
	}
	for _, ip := range s.IPs {
		if _, _, err := net.ParseCIDR(ip); err != nil {
			return fmt.Errorf("status: %w", err)
		}
	}
	return nil
}

// WriteStatus writes the record of s durably (atomicfile), creating the
// status directory. It refuses a record that does not check.
func WriteStatus(dir string, s DeviceStatus) error {
	s.Version = version
	if err := s.check(); err != nil {
		return fmt.Errorf("draview: %w", err)
	}
	p, _ := statusPath(dir, s.ContainerID, s.IfName)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("draview: %w", err)
	}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return fmt.Errorf("draview: encoding status: %w", err)
	}
	if err := atomicfile.WriteFile(p, b, 0o644); err != nil {
		return fmt.Errorf("draview: %w", err)
	}
	return nil
}

// RemoveStatus removes the record of attachment (containerID, ifName):
// none, or names that cannot name a record, is nothing to do.
func RemoveStatus(dir, containerID, ifName string) error {
	p, ok := statusPath(dir, containerID, ifName)
	if !ok {
		return nil
	}
	if err := atomicfile.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("draview: %w", err)
	}
	return nil
}

// ReadStatuses reads every record in dir's status directory (none when it
// does not exist). A record that cannot be read or does not check is left
// out, its error joined in the returned error: one bad file does not hide
// the others.
func ReadStatuses(dir string) ([]DeviceStatus, error) {
	d := filepath.Join(dir, StatusDir)
	f, err := os.Open(d)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("draview: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(maxStatusFiles + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("draview: %w", err)
	}
	var errs []error
	if len(names) > maxStatusFiles {
		errs = append(errs, fmt.Errorf("draview: more than %d status records in %s: the rest are not read", maxStatusFiles, d))
		names = names[:maxStatusFiles]
	}
	var out []DeviceStatus
	for _, n := range names {
		if !strings.HasSuffix(n, ".json") {
			continue // atomicfile's temporary files
		}
		s, err := readStatus(filepath.Join(d, n))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if want, _ := statusPath(dir, s.ContainerID, s.IfName); filepath.Base(want) != n {
			errs = append(errs, fmt.Errorf("draview: %s holds the record of %s_%s", n, s.ContainerID, s.IfName))
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

func readStatus(p string) (DeviceStatus, error) {
	var s DeviceStatus
	if err := strictjson.ReadFile(p, maxStatusSize, &s); err != nil {
		return s, fmt.Errorf("draview: %w", err)
	}
	if err := s.check(); err != nil {
		return s, fmt.Errorf("draview: %s: %w", p, err)
	}
	return s, nil
}
