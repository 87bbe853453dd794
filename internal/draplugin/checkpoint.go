package draplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/strictjson"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// checkpointVersion is the version of the checkpoint's format.
const checkpointVersion = 1

// preparedClaim is a prepared claim as the checkpoint keeps it: what
// Unprepare needs after a restart (the claim object may be gone by then)
// and what Prepare returns again when asked twice.
type preparedClaim struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Pods are the pods of the claim's status.reservedFor when it was
	// last prepared (none in a checkpoint written before they were kept):
	// railyard-cni attaches the claim's netdevs to them.
	Pods    []claimPod       `json:"pods,omitempty"`
	Devices []preparedDevice `json:"devices"`
}

// claimPod is a pod a claim is reserved for, in the claim's namespace.
type claimPod struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// preparedDevice is one allocated device of a prepared claim.
type preparedDevice struct {
	// Request is the allocation result's request ("nic0", "nic0/numa").
	Request string `json:"request"`
	// Pool and Device name it in the slices ("n1/rdma-vf", "pci-0000-18-00-2").
	Pool   string `json:"pool"`
	Device string `json:"device"`
	// PCI is its address, Resource the Railyard pool ("railyard.io/rdma_vf").
	PCI      string `json:"pci"`
	Resource string `json:"resource"`
	// RDMA is the RDMA device ("mlx5_12"), Nodes the char devices under
	// infiniband/ the container gets ("uverbs12", "rdma_cm").
	RDMA  string   `json:"rdma,omitempty"`
	Nodes []string `json:"nodes"`
	// Rail is the railyard.io/rail attribute (-1 when none), PF the PF's
	// address: the container's rail order.
	Rail int    `json:"rail"`
	PF   string `json:"pf"`
	// CDIDevice is the fully qualified CDI device name.
	CDIDevice string `json:"cdiDevice"`
	// Published is the device as published when the claim was prepared
	// (dra.Options.Prepared keeps it so while the claim holds it).
	Published resourceapi.Device `json:"published"`
	// AdminAccess marks a device of an admin-access request (KEP-5018):
	// allocated even while another claim holds it, to look at it (doctor,
	// counters), never to take it: it holds nothing, and railyard-cni does
	// not move its netdev (it is not in the DRA view).
	AdminAccess bool `json:"adminAccess,omitempty"`
	// ShareID is the allocation's share of a shared NIC (KEP-5075
	// consumable capacity): many claims hold the NIC, each its share.
	ShareID *types.UID `json:"shareID,omitempty"`
	// Share is the node's index of that share, 0 to the pool's
	// sharedLimit-1, lowest free first: railyard-cni keys the pod's
	// macvlan on the NIC with it as the device plugin's shares are keyed
	// (deviceid.Share). nil for a device that is not a share.
	Share *int `json:"share,omitempty"`
}

type checkpointDoc struct {
	Version int              `json:"version"`
	Claims  []*preparedClaim `json:"claims"`
}

// maxCheckpointBytes bounds the checkpoint (a claim takes about 1 KiB).
const maxCheckpointBytes = 32 << 20

// loadCheckpoint reads the prepared claims (none when the file does not
// exist). Stray temporary files of a crashed write are removed.
func loadCheckpoint(path string) (map[types.UID]*preparedClaim, error) {
	claims := map[types.UID]*preparedClaim{}
	atomicfile.RemoveTemps(path)
	b, err := inputfile.Read(path, maxCheckpointBytes)
	if errors.Is(err, os.ErrNotExist) {
		return claims, nil
	}
	if err != nil {
		return nil, fmt.Errorf("draplugin: reading checkpoint: %w", err)
	}
	doc, err := decodeCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("draplugin: checkpoint %s: %w", path, err)
	}
	for _, c := range doc.Claims {
		claims[c.UID] = c
	}
	return claims, nil
}

// decodeCheckpoint decodes strictly and checks what Unprepare relies on.
func decodeCheckpoint(b []byte) (*checkpointDoc, error) {
	var doc checkpointDoc
	if err := strictjson.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if doc.Version != checkpointVersion {
		return nil, fmt.Errorf("version %d, want %d", doc.Version, checkpointVersion)
	}
	seen := map[types.UID]bool{}
	for i, c := range doc.Claims {
		if c == nil || c.UID == "" || seen[c.UID] || !validUID(string(c.UID)) {
			return nil, fmt.Errorf("claim %d: missing, duplicate or invalid UID", i)
		}
		seen[c.UID] = true
	}
	return &doc, nil
}

// validUID says whether a claim UID can name a CDI device and a file: the
// API server's UIDs are RFC 4122 strings, checked loosely here.
func validUID(uid string) bool {
	if uid == "" || len(uid) > 64 {
		return false
	}
	for _, r := range uid {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// saveCheckpointLocked commits the prepared claims: temporary file, fsync,
// rename (the commit point), directory fsync.
func (d *Driver) saveCheckpointLocked() error {
	doc := checkpointDoc{Version: checkpointVersion}
	for _, c := range d.claims {
		doc.Claims = append(doc.Claims, c)
	}
	slices.SortFunc(doc.Claims, func(a, b *preparedClaim) int { return strings.Compare(string(a.UID), string(b.UID)) })
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return fmt.Errorf("draplugin: encoding checkpoint: %w", err)
	}
	return atomicfile.WriteFile(d.ckptPath, b, 0o644)
}
