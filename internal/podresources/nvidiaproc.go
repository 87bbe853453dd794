package podresources

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/railyard-io/railyard/internal/inputfile"
)

// DefaultProcRoot is where procfs is mounted. /proc/driver/nvidia is not
// namespaced: a container sees the host's GPUs there unless its runtime
// masks the path (containerd and Docker do not by default).
const DefaultProcRoot = "/proc"

// maxInformation bounds one information file (about 500 bytes in practice).
const maxInformation = 64 << 10

// ReadNVIDIAProc maps GPU UUIDs to PCI addresses from the NVIDIA driver's
// /proc/driver/nvidia/gpus/<pci>/information files (their "GPU UUID:" and
// "Bus Location:" lines) below procRoot. Without the driver (no such
// directory) the map is empty and the error nil; a GPU whose file cannot
// be read or parsed is left out and reported in the error.
func ReadNVIDIAProc(procRoot string) (Map, error) {
	if procRoot == "" {
		procRoot = DefaultProcRoot
	}
	dir := filepath.Join(procRoot, "driver/nvidia/gpus")
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Map{}, nil
		}
		return Map{}, fmt.Errorf("listing NVIDIA GPUs: %w", err)
	}
	m := Map{}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(dir, e.Name(), "information")
		data, err := inputfile.Read(p, maxInformation)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uuid, pci, err := ParseNVIDIAInformation(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		if pci == "" {
			pci = e.Name()
		}
		if err := m.add(uuid, pci); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return m, errors.Join(errs...)
}

// ParseNVIDIAInformation reads the UUID ("GPU-...") and PCI address
// ("" when the file has no Bus Location line) from the contents of an
// NVIDIA driver information file.
func ParseNVIDIAInformation(data []byte) (uuid, pci string, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(key) {
		case "GPU UUID":
			uuid = val
		case "Bus Location":
			p, err := normalizePCI(val)
			if err != nil {
				return "", "", fmt.Errorf("bus location: %w", err)
			}
			pci = p
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", err
	}
	if !strings.HasPrefix(uuid, "GPU-") || len(uuid) < 8 || strings.ContainsAny(uuid, " \t") {
		return "", "", fmt.Errorf("no \"GPU UUID: GPU-...\" line")
	}
	return uuid, pci, nil
}

// NewResolver returns the GPU resolver the agent uses: the UUIDs the
// NVIDIA driver lists below procRoot, overridden by the entries of the GPU
// map file gpuMap ("" for none). A driver file that cannot be read is
// reported in the error with the map still usable; a bad gpuMap fails.
func NewResolver(procRoot, gpuMap string) (Map, error) {
	m, procErr := ReadNVIDIAProc(procRoot)
	if procErr != nil {
		procErr = fmt.Errorf("GPU UUIDs from the NVIDIA driver: %w", procErr)
	}
	if gpuMap == "" {
		return m, procErr
	}
	override, err := LoadMap(gpuMap)
	if err != nil {
		return nil, err
	}
	for id, pci := range override {
		m[id] = pci
	}
	return m, procErr
}
