package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/railyard-io/railyard/internal/netops"
)

// ErrNoRecord is returned (wrapped) when a device has no record.
var ErrNoRecord = errors.New("no attachment record")

// Phases of an attachment.
const (
	PhaseAdding   = "adding"   // ADD in progress (or crashed during ADD)
	PhaseAttached = "attached" // ADD completed
)

// PF identifies the physical function a VF's settings are made through.
type PF struct {
	Netdev string `json:"netdev"`
	PCI    string `json:"pci"`
	VF     int    `json:"vf"`
}

// KindMacvlan marks a record whose pod interface is a macvlan railyard-cni
// created on a shared NIC's netdev (Parent), which itself never moves.
const KindMacvlan = "macvlan"

// Record describes one device attachment and everything needed to undo it.
type Record struct {
	Key         string `json:"key"`
	Network     string `json:"network"`
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
	Netns       string `json:"netns"`
	BootID      string `json:"bootID"`
	Phase       string `json:"phase"`

	PCI string `json:"pci,omitempty"`
	// Kind is "" when the device's own netdev moves into the pod, or
	// KindMacvlan.
	Kind string `json:"kind,omitempty"`
	// Parent is the shared NIC's netdev a macvlan is created on.
	Parent   string `json:"parent,omitempty"`
	TempName string `json:"tempName"`
	// Marker is the alias set on the netdev while it is attached.
	Marker string `json:"marker"`
	// Orig is the netdev as found on the host before ADD changed it.
	Orig    netops.Link `json:"orig"`
	OrigMAC string      `json:"origMAC,omitempty"`
	PF      *PF         `json:"pf,omitempty"`
	// OrigVF is the VF's settings before ADD; nil when not a VF.
	OrigVF *netops.VFSettings `json:"origVF,omitempty"`
	// OrigGUID is an InfiniBand VF's GUID before ADD set another one
	// ("" when ADD set none).
	OrigGUID string `json:"origGUID,omitempty"`
	// OrigVFMAC is an Ethernet VF's MAC as its PF reported it before ADD
	// (all zeros: none set). Changing the VF netdev's MAC changes what the
	// PF reports (igb, mlx5), and DEL puts this back through the PF.
	OrigVFMAC string `json:"origVFMAC,omitempty"`
	RDMA      string `json:"rdma,omitempty"`

	DeviceInfoFile string          `json:"deviceInfoFile,omitempty"`
	Config         json.RawMessage `json:"config"`
	Result         json.RawMessage `json:"result,omitempty"`
}

// Store is a state directory.
type Store struct {
	Dir string
}

// ValidKey reports whether key is safe as a file name.
func ValidKey(key string) bool {
	return key != "" && key != "." && key != ".." && len(key) <= 128 && !strings.ContainsAny(key, "/\x00")
}

func (s Store) recordPath(key string) string {
	return filepath.Join(s.Dir, "devices", key+".json")
}

// Get returns the record of device key, or ErrNoRecord.
func (s Store) Get(key string) (*Record, error) {
	if !ValidKey(key) {
		return nil, fmt.Errorf("invalid device key %q", key)
	}
	b, err := os.ReadFile(s.recordPath(key))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("device %s: %w", key, ErrNoRecord)
		}
		return nil, fmt.Errorf("reading record of %s: %w", key, err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding record of %s: %w", key, err)
	}
	return &r, nil
}

// Put writes a record atomically (temporary file, rename). It does not
// fsync: a record only has to survive the death of a process, which the page
// cache does; after a power loss the node reboots, every pod namespace is
// gone and records from an earlier boot are stale anyway (see Record.BootID).
func (s Store) Put(r *Record) error {
	if !ValidKey(r.Key) {
		return fmt.Errorf("invalid device key %q", r.Key)
	}
	dir := filepath.Join(s.Dir, "devices")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating state directory: %w", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding record of %s: %w", r.Key, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+r.Key+"-*")
	if err != nil {
		return fmt.Errorf("writing record of %s: %w", r.Key, err)
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), s.recordPath(r.Key))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing record of %s: %w", r.Key, werr)
	}
	return nil
}

// Delete removes the record of device key; a missing record is not an error.
func (s Store) Delete(key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("invalid device key %q", key)
	}
	if err := os.Remove(s.recordPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing record of %s: %w", key, err)
	}
	return nil
}

// List returns every record, sorted by key. Records that cannot be decoded
// are skipped and reported in the error (the others are still returned).
func (s Store) List() ([]*Record, error) {
	entries, err := os.ReadDir(filepath.Join(s.Dir, "devices"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing records: %w", err)
	}
	var out []*Record
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		r, err := s.Get(strings.TrimSuffix(name, ".json"))
		if err != nil {
			if !errors.Is(err, ErrNoRecord) {
				errs = append(errs, err)
			}
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, errors.Join(errs...)
}

// Find returns the record for an attachment (containerID, ifname), or
// ErrNoRecord.
func (s Store) Find(containerID, ifname string) (*Record, error) {
	recs, err := s.List()
	for _, r := range recs {
		if r.ContainerID == containerID && r.IfName == ifname {
			return r, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("container %s interface %s: %w", containerID, ifname, ErrNoRecord)
}
