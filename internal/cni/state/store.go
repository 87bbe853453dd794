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

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/netops"
)

// ErrNoRecord is returned (wrapped) when a device has no record.
var ErrNoRecord = errors.New("no attachment record")

// ErrCorrupt is returned (wrapped) for a record that does not decode (an
// empty or cut file, or one for another key). Records are written durably,
// but one from an older version or a damaged disk may still be found: the
// plugin treats it as stale, never as a device held forever.
var ErrCorrupt = errors.New("record does not decode")

// maxRecord bounds what Get reads: a record holds a configuration (at
// most 1 MiB on stdin) and a result.
const maxRecord = 4 << 20

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
	// RailTable is the routing table of the interface's multi-rail
	// source routing in the pod, which its rules look up (0: none). It is
	// recorded before the first rule is added: a DEL after a crash finds
	// them.
	RailTable int `json:"railTable,omitempty"`
	// GID is the RoCE v2 GID index the RDMA device has for the
	// interface's address (nil: not RoCE, or not found).
	GID *containerdev.HCAGID `json:"gid,omitempty"`
	// Pod is the pod whose sandbox ContainerID is, from CNI_ARGS (nil:
	// the runtime passed none, or a record written before railyard-cni
	// recorded it). The agent names it in the Event it records on the
	// pod when its HCAs' GID indexes differ.
	Pod *PodRef `json:"pod,omitempty"`

	DeviceInfoFile string          `json:"deviceInfoFile,omitempty"`
	Config         json.RawMessage `json:"config"`
	Result         json.RawMessage `json:"result,omitempty"`
}

// PodRef names a pod: CNI_ARGS' K8S_POD_NAMESPACE, K8S_POD_NAME and
// K8S_POD_UID, which containerd and CRI-O pass.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

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

// Get returns the record of device key, or ErrNoRecord, or ErrCorrupt for a
// record that does not decode. It reads a regular file only, bounded
// (inputfile).
func (s Store) Get(key string) (*Record, error) {
	if !ValidKey(key) {
		return nil, fmt.Errorf("invalid device key %q", key)
	}
	b, err := inputfile.Read(s.recordPath(key), maxRecord)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("device %s: %w", key, ErrNoRecord)
		}
		if errors.Is(err, inputfile.ErrNotRegular) || errors.Is(err, inputfile.ErrTooLarge) {
			return nil, fmt.Errorf("record of %s: %w: %w", key, ErrCorrupt, err)
		}
		return nil, fmt.Errorf("reading record of %s: %w", key, err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("record of %s (%s): %w: %w", key, s.recordPath(key), ErrCorrupt, err)
	}
	if r.Key != key {
		return nil, fmt.Errorf("record of %s (%s) names device %q: %w", key, s.recordPath(key), r.Key, ErrCorrupt)
	}
	return &r, nil
}

// RecordPath is where the record of device key is (for messages telling
// the way out of a corrupt one).
func (s Store) RecordPath(key string) string { return s.recordPath(key) }

// Put writes a record durably: a temporary file in the directory, fsynced,
// renamed over the record, then the directory fsynced (atomicfile), so a
// power loss leaves the old record or the new one, never an empty one.
func (s Store) Put(r *Record) error {
	if !ValidKey(r.Key) {
		return fmt.Errorf("invalid device key %q", r.Key)
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "devices"), 0o700); err != nil {
		return fmt.Errorf("creating state directory: %w", err)
	}
	return s.write(r, atomicfile.WriteFile)
}

// write encodes r and writes it to its path with put (0600).
func (s Store) write(r *Record, put func(path string, b []byte, perm os.FileMode) error) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding record of %s: %w", r.Key, err)
	}
	if err := put(s.recordPath(r.Key), b, 0o600); err != nil {
		return fmt.Errorf("writing record of %s: %w", r.Key, err)
	}
	return nil
}

// Advance replaces a record already durable with a later version of it
// (ADD's attached record over the one it staged) whose loss to a power
// failure costs nothing: the new file is fsynced before it is renamed over
// the old (atomicfile.Replace), so after a power loss the path holds the
// old record or the new, whole, never an empty or cut one; the rename is
// not made durable (no directory fsync: about 0.4 ms of every ADD).
//
// What the attached record adds to the staged one (phase, result, rail
// table, GID, pod) is this boot's kernel state or what CHECK compares it
// with; a power loss resets the kernel, and a record from a previous boot
// is torn down alike in either phase (ADD's claim, DEL, GC: nothing reads
// the phase but CHECK), its IPAM allocation and device-info file released
// from fields the staged record holds.
func (s Store) Advance(r *Record) error {
	if !ValidKey(r.Key) {
		return fmt.Errorf("invalid device key %q", r.Key)
	}
	return s.write(r, atomicfile.Replace)
}

// Delete removes the record of device key; a missing record is not an error.
func (s Store) Delete(key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("invalid device key %q", key)
	}
	if err := atomicfile.Remove(s.recordPath(key)); err != nil {
		return fmt.Errorf("removing record of %s: %w", key, err)
	}
	return nil
}

// List returns every record, sorted by key. Records that cannot be decoded
// are skipped and reported in the error (the others are still returned).
func (s Store) List() ([]*Record, error) {
	recs, corrupt, err := s.ListAll()
	if err != nil {
		return recs, err
	}
	errs := make([]error, len(corrupt))
	for i, k := range corrupt {
		errs[i] = fmt.Errorf("record of %s: %w", k, ErrCorrupt)
	}
	return recs, errors.Join(errs...)
}

// ListAll returns every record that decodes, sorted by key, and the keys
// of those that do not (ErrCorrupt); err is for what could not be read.
func (s Store) ListAll() (recs []*Record, corrupt []string, err error) {
	entries, err := os.ReadDir(filepath.Join(s.Dir, "devices"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("listing records: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		key := strings.TrimSuffix(name, ".json")
		r, err := s.Get(key)
		switch {
		case err == nil:
			recs = append(recs, r)
		case errors.Is(err, ErrCorrupt):
			corrupt = append(corrupt, key)
		case !errors.Is(err, ErrNoRecord):
			errs = append(errs, err)
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Key < recs[j].Key })
	return recs, corrupt, errors.Join(errs...)
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
