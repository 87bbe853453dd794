package deviceplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/strictjson"
)

// maxGroupState bounds a group's record: a few pools of a few devices
// each take a few KiB.
const maxGroupState = 1 << 20

// groupState is the record of one group, <stateDir>/nccl/<group>.json.
type groupState struct {
	Group   string        `json:"group"`
	Members []groupMember `json:"members"`
}

// groupMember is one pool's allocation in a group.
type groupMember struct {
	Resource string      `json:"resource"`
	Devices  []hcaDevice `json:"devices"`
}

// hcaDevice is what rail ordering needs of a device.
type hcaDevice struct {
	ID   string `json:"id"`
	PF   string `json:"pf"`
	RDMA string `json:"rdma"`
	Rail int    `json:"rail"`
}

func member(resource string, devs []Device) groupMember {
	m := groupMember{Resource: resource}
	for _, d := range devs {
		m.Devices = append(m.Devices, hcaDevice{ID: d.ID, PF: d.PF, RDMA: d.RDMA, Rail: d.Rail})
	}
	return m
}

// railOrder is containerdev's rail order (rail index, devices on no rail
// last, then PF address, then device ID): the order NCCL_IB_HCA lists them in.
func railOrder(a, b hcaDevice) int {
	return containerdev.Compare(containerdev.Device{PCI: a.ID, PF: a.PF, Rail: a.Rail}, containerdev.Device{PCI: b.ID, PF: b.PF, Rail: b.Rail})
}

// railHCAs returns the distinct RDMA device names of devs in rail order.
func railHCAs(devs []hcaDevice) []string {
	devs = slices.Clone(devs)
	slices.SortFunc(devs, railOrder)
	var out []string
	for _, d := range devs {
		if d.RDMA != "" && !slices.Contains(out, d.RDMA) {
			out = append(out, d.RDMA)
		}
	}
	return out
}

// hcas returns the RDMA devices of every member in rail order: the same
// list whatever order the members joined in.
func (s groupState) hcas() []string {
	var all []hcaDevice
	for _, m := range s.Members {
		all = append(all, m.Devices...)
	}
	return railHCAs(all)
}

// groupFiles writes a group's state, its NCCL configuration file and,
// with cdiDir, its CDI spec; every file atomically (temp file + rename),
// so a reader sees the old or the new content, never a mix.
type groupFiles struct {
	dir, cdiDir string
}

func (f groupFiles) statePath(group string) string { return filepath.Join(f.dir, group+".json") }
func (f groupFiles) confPath(group string) string  { return filepath.Join(f.dir, group+".conf") }
func (f groupFiles) cdiPath(group string) string {
	return filepath.Join(f.cdiDir, "railyard.io-nccl-"+group+".json")
}

func (f groupFiles) load(group string) (groupState, error) {
	var st groupState
	if err := strictjson.ReadFile(f.statePath(group), maxGroupState, &st); err != nil {
		return st, fmt.Errorf("reading group state: %w", err)
	}
	if st.Group != group {
		return st, fmt.Errorf("group state %s names group %q", f.statePath(group), st.Group)
	}
	return st, nil
}

// write stores the group and returns its NCCL configuration file's path.
func (f groupFiles) write(st groupState, hcas []string) (string, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encoding group state: %w", err)
	}
	if err := atomicfile.WriteFile(f.statePath(st.Group), b, 0o644); err != nil {
		return "", err
	}
	var conf strings.Builder
	conf.WriteString("# railyard-agent: the RDMA devices of every pool of this container, in rail order.\n")
	for _, m := range st.Members {
		ids := make([]string, len(m.Devices))
		for i, d := range m.Devices {
			ids[i] = d.ID
		}
		fmt.Fprintf(&conf, "# %s: %s\n", m.Resource, strings.Join(ids, ","))
	}
	// "=" asks NCCL for exact names: plain "mlx5_1" would also match mlx5_10.
	fmt.Fprintf(&conf, "NCCL_IB_HCA==%s\n", strings.Join(hcas, ","))
	if err := atomicfile.WriteFile(f.confPath(st.Group), []byte(conf.String()), 0o644); err != nil {
		return "", err
	}
	if err := f.writeCDI(st.Group, hcas); err != nil {
		return "", err
	}
	return f.confPath(st.Group), nil
}

func (f groupFiles) writeCDI(group string, hcas []string) error {
	if f.cdiDir == "" {
		return nil
	}
	spec := &cdispec.Spec{Kind: NCCLCDIKind, Devices: []cdispec.Device{{
		Name: group, ContainerEdits: cdispec.ContainerEdits{Env: []string{"NCCL_IB_HCA==" + strings.Join(hcas, ",")}},
	}}}
	ver, err := cdispec.MinimumRequiredVersion(spec)
	if err != nil {
		return fmt.Errorf("CDI spec version: %w", err)
	}
	spec.Version = ver
	b, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("encoding CDI spec: %w", err)
	}
	return atomicfile.WriteFile(f.cdiPath(group), b, 0o644)
}

// restore creates the state directory and rewrites the CDI spec of every
// group it holds.
func (f groupFiles) restore() error {
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return fmt.Errorf("rail group directory: %w", err)
	}
	if f.cdiDir == "" {
		return nil
	}
	states, err := filepath.Glob(filepath.Join(f.dir, "*.json"))
	if err != nil {
		return fmt.Errorf("rail group directory: %w", err)
	}
	var errs []error
	for _, p := range states {
		group := strings.TrimSuffix(filepath.Base(p), ".json")
		st, err := f.load(group)
		if err == nil {
			err = f.writeCDI(group, st.hcas())
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
