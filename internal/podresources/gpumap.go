package podresources

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/pciaddr"
)

// GPUResolver maps a GPU device ID as kubelet reports it to the GPU's PCI
// address ("0000:1b:00.0").
type GPUResolver interface {
	PCIAddress(id string) (string, bool)
}

// normalizePCI returns addr, as kubelet, nvidia-smi or the driver print it
// ("0000:1b:00.0", "00000000:1B:00.0"), in canonical form: pciaddr's rules,
// white space around it ignored.
func normalizePCI(addr string) (string, error) {
	return pciaddr.Normalize(strings.TrimSpace(addr))
}

// Map is a fixed GPU ID -> PCI address table. IDs that are PCI addresses
// resolve to themselves.
type Map map[string]string

var _ GPUResolver = Map(nil)

// PCIAddress implements GPUResolver.
func (m Map) PCIAddress(id string) (string, bool) {
	if pci, ok := m[id]; ok {
		return pci, true
	}
	pci, err := normalizePCI(id)
	return pci, err == nil
}

// MaxMapBytes bounds a GPU map file (a line per GPU).
const MaxMapBytes = 1 << 20

// LoadMap reads a GPU map file, a regular file of at most MaxMapBytes; see
// ParseMap for its formats.
func LoadMap(path string) (Map, error) {
	data, err := inputfile.Read(path, MaxMapBytes)
	if err != nil {
		return nil, fmt.Errorf("reading GPU map: %w", err)
	}
	m, err := ParseMap(data)
	if err != nil {
		return nil, fmt.Errorf("GPU map %s: %w", path, err)
	}
	return m, nil
}

// ParseMap reads a GPU map in one of two formats:
//   - a JSON object {"GPU-<uuid>": "0000:1b:00.0", ...};
//   - the output of `nvidia-smi --query-gpu=uuid,pci.bus_id --format=csv,noheader`:
//     lines "GPU-<uuid>, 00000000:1B:00.0" (blank lines and # comments skipped).
func ParseMap(data []byte) (Map, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var raw map[string]string
		if err := json.Unmarshal(trimmed, &raw); err != nil {
			return nil, fmt.Errorf("JSON GPU map: %w", err)
		}
		m := make(Map, len(raw))
		for id, addr := range raw {
			if err := m.add(id, addr); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	m := Map{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, addr, ok := strings.Cut(line, ",")
		if !ok {
			return nil, fmt.Errorf("line %d: want \"<uuid>, <pci.bus_id>\", got %q", n, line)
		}
		if err := m.add(strings.TrimSpace(id), addr); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m Map) add(id, addr string) error {
	if id == "" {
		return fmt.Errorf("empty GPU ID")
	}
	pci, err := normalizePCI(addr)
	if err != nil {
		return fmt.Errorf("GPU %s: %w", id, err)
	}
	if old, dup := m[id]; dup && old != pci {
		return fmt.Errorf("GPU %s mapped twice (%s and %s)", id, old, pci)
	}
	m[id] = pci
	return nil
}
