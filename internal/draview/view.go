package draview

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/deviceid"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/strictjson"
)

// FileName is the view's name in its directory.
const FileName = "dra-view.json"

// version is the version of the view's format; a reader refuses another.
const version = 1

// maxSize bounds what Read accepts: a node's claims fit in far less.
const maxSize = 16 << 20

// ErrNoView is returned by Read when no view is published.
var ErrNoView = errors.New("no DRA view published")

// View is what railyard-cni knows of the node's DRA claims.
type View struct {
	Version int `json:"version"`
	// Pools are the resource names of the node's pools delivered through
	// DRA ("railyard.io/rdma_pf"), sorted.
	Pools []string `json:"pools"`
	// Claims are the prepared claims of this driver, sorted by namespace,
	// name and UID.
	Claims []Claim `json:"claims"`
}

// Claim is a prepared ResourceClaim.
type Claim struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Pods are the claim's status.reservedFor pods when it was prepared
	// (their namespace is the claim's).
	Pods []Pod `json:"pods"`
	// Devices are the claim's devices of this driver, in rail order.
	Devices []Device `json:"devices"`
}

// Pod is a pod a claim is reserved for.
type Pod struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
}

// Device is a device of a claim.
type Device struct {
	// PCI is the device's address, Resource its Railyard pool.
	PCI      string `json:"pci"`
	Resource string `json:"resource"`
	// RDMA is its RDMA device when it was prepared ("mlx5_12"), PF its
	// PF's address, Rail its rail index (-1: none).
	RDMA string `json:"rdma,omitempty"`
	PF   string `json:"pf"`
	Rail int    `json:"rail"`
	// Share is the node's index of the claim's share of a shared NIC
	// (0 to sharedLimit-1): the pod gets a macvlan on the NIC, keyed as
	// the device plugin's share deviceid.Share(PCI, Share). nil for a
	// device the claim holds whole.
	Share *int `json:"share,omitempty"`
}

// ShareID is the share's device ID ("0000:18:00.0-s2"), "" for a device
// held whole.
func (d Device) ShareID() string {
	if d.Share == nil {
		return ""
	}
	return deviceid.Share(d.PCI, *d.Share)
}

// PodRef names a pod: CNI_ARGS' K8S_POD_NAMESPACE, K8S_POD_NAME and
// K8S_POD_UID (UID may be empty).
type PodRef struct {
	Namespace, Name, UID string
}

// Held is a device a pod holds through a claim.
type Held struct {
	Device
	Claim *Claim
}

// Path is the view's path in dir.
func Path(dir string) string { return filepath.Join(dir, FileName) }

// HasPool says whether resource is a DRA pool of the node.
func (v *View) HasPool(resource string) bool {
	_, ok := slices.BinarySearch(v.Pools, resource)
	return ok
}

// PodDevices returns the devices of resource in the claims reserved for
// pod: claims in the view's order, each claim's devices in rail order. A
// pod is matched by UID when both sides have one, else by namespace and
// name (a pod recreated under its name has another UID).
func (v *View) PodDevices(pod PodRef, resource string) []Held {
	var out []Held
	for i := range v.Claims {
		c := &v.Claims[i]
		if c.Namespace != pod.Namespace || !slices.ContainsFunc(c.Pods, func(p Pod) bool { return p.matches(pod) }) {
			continue
		}
		for _, d := range c.Devices {
			if d.Resource == resource {
				out = append(out, Held{Device: d, Claim: c})
			}
		}
	}
	return out
}

func (p Pod) matches(ref PodRef) bool {
	if p.UID != "" && ref.UID != "" {
		return p.UID == ref.UID
	}
	return p.Name == ref.Name
}

// Write replaces the view in dir durably (internal/atomicfile: a reader
// sees the old view or the new one). v is normalized (version set, pools
// and claims sorted) and checked first.
func Write(dir string, v View) error {
	b, err := Encode(v)
	if err != nil {
		return err
	}
	return WriteEncoded(dir, b)
}

// WriteEncoded is Write for a view Encode already encoded (a writer that
// compares encodings to skip unchanged views encodes once).
func WriteEncoded(dir string, b []byte) error {
	if err := atomicfile.WriteFile(Path(dir), b, 0o644); err != nil {
		return fmt.Errorf("draview: %w", err)
	}
	return nil
}

// Encode is the view as Write writes it: normalized, checked, JSON.
func Encode(v View) ([]byte, error) {
	v.Version = version
	v.Pools = slices.Clone(v.Pools)
	slices.Sort(v.Pools)
	v.Pools = slices.Compact(v.Pools)
	v.Claims = slices.Clone(v.Claims)
	slices.SortFunc(v.Claims, func(a, b Claim) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.UID, b.UID))
	})
	if v.Pools == nil {
		v.Pools = []string{}
	}
	if v.Claims == nil {
		v.Claims = []Claim{}
	}
	if err := v.check(); err != nil {
		return nil, fmt.Errorf("draview: %w", err)
	}
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return nil, fmt.Errorf("draview: encoding: %w", err)
	}
	return b, nil
}

// Read reads the view in dir; ErrNoView when there is none. It reads a
// regular file only, at most maxSize bytes (inputfile): a FIFO or device
// planted there fails at once instead of blocking railyard-cni.
func Read(dir string) (*View, error) {
	b, err := inputfile.Read(Path(dir), maxSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoView
	}
	if err != nil {
		return nil, fmt.Errorf("draview: %w", err)
	}
	v, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Path(dir), err)
	}
	return v, nil
}

// Parse decodes a view strictly (strictjson: unknown, repeated or
// miscased keys and trailing data are errors; so are another version and
// inconsistent content).
func Parse(b []byte) (*View, error) {
	var v View
	if err := strictjson.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("draview: decoding: %w", err)
	}
	if err := v.check(); err != nil {
		return nil, fmt.Errorf("draview: %w", err)
	}
	return &v, nil
}

// check validates what readers rely on: sorted unique pools, unique claim
// UIDs, canonical PCI addresses, a device in one claim only, named pods.
func (v *View) check() error {
	if v.Version != version {
		return fmt.Errorf("version %d, want %d", v.Version, version)
	}
	for i, p := range v.Pools {
		if p == "" || (i > 0 && v.Pools[i-1] >= p) {
			return fmt.Errorf("pools: %q empty, unsorted or repeated", p)
		}
	}
	uids := map[string]bool{}
	holder := map[string]string{}  // PCI address or share ID -> claim
	heldWhole := map[string]bool{} // PCI address -> held whole (true) or as shares
	for i := range v.Claims {
		c := &v.Claims[i]
		if c.UID == "" || c.Namespace == "" || c.Name == "" || uids[c.UID] {
			return fmt.Errorf("claim %d (%s/%s): missing name, namespace or UID, or a repeated UID", i, c.Namespace, c.Name)
		}
		uids[c.UID] = true
		for _, p := range c.Pods {
			if p.Name == "" {
				return fmt.Errorf("claim %s/%s: a pod without a name", c.Namespace, c.Name)
			}
		}
		for _, d := range c.Devices {
			if !pciaddr.IsCanonical(d.PCI) || d.Resource == "" {
				return fmt.Errorf("claim %s/%s: device %q of %q: not a canonical PCI address or no resource", c.Namespace, c.Name, d.PCI, d.Resource)
			}
			if d.Share != nil {
				if _, _, err := deviceid.ParseShare(d.ShareID()); err != nil {
					return fmt.Errorf("claim %s/%s: device %s: %w", c.Namespace, c.Name, d.PCI, err)
				}
			}
			// A NIC is held whole by one claim, or shared: each share by
			// one claim.
			whole, held := heldWhole[d.PCI]
			switch {
			case held && (whole || d.Share == nil):
				return fmt.Errorf("device %s is in claims %s and %s/%s", d.PCI, holder[d.PCI], c.Namespace, c.Name)
			case d.Share != nil && holder[d.ShareID()] != "":
				return fmt.Errorf("share %s is in claims %s and %s/%s", d.ShareID(), holder[d.ShareID()], c.Namespace, c.Name)
			}
			heldWhole[d.PCI] = d.Share == nil
			holder[d.PCI] = c.Namespace + "/" + c.Name
			if d.Share != nil {
				holder[d.ShareID()] = c.Namespace + "/" + c.Name
			}
		}
	}
	return nil
}
