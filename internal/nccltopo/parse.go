package nccltopo

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/pciaddr"
)

// Limits on what Parse accepts: a topology file of a large node has a few
// hundred elements and a nesting depth below ten.
const (
	MaxBytes    = 4 << 20
	MaxDepth    = 64
	MaxElements = 100000
)

// ErrFormat is returned (wrapped) for a file that is not an NCCL topology.
var ErrFormat = errors.New("not an NCCL topology file")

// System is a parsed NCCL topology file.
type System struct {
	Version int
	Name    string // the optional name attribute of <system>
	CPUs    []*CPU
}

// CPU is one <cpu> element: a NUMA node's root complex in NCCL's model.
type CPU struct {
	NUMAID   int // -1 when absent
	Affinity string
	Arch     string
	Vendor   string
	PCIs     []*PCI
	// NICs are <nic> elements directly under the CPU (NICs without a PCI
	// function, matched by net name only).
	NICs []*NIC
}

// PCI is one <pci> element: a bridge (a PCIe switch, real or virtual) when
// it has <pci> children, else an endpoint; a GPU when it holds a <gpu>, a
// NIC when it holds a <nic>.
type PCI struct {
	BusID     string // as written
	Addr      pciaddr.Addr
	Class     uint32 // 0x060400
	LinkSpeed string
	LinkWidth int
	Children  []*PCI
	GPU       *GPU
	NIC       *NIC
}

// GPU is a <gpu> element.
type GPU struct {
	Dev, SM, Rank int // -1 when absent
	GDR           bool
}

// NIC is a <nic> element with its <net> ports.
type NIC struct {
	Nets []Net
}

// Net is a <net> element: one port of a NIC as NCCL's net plugin sees it.
type Net struct {
	Name    string // RDMA device name, "mlx5_0"
	Dev     int
	Speed   int // Mb/s
	Port    int
	GUID    string
	MaxConn int
	GDR     bool
}

// parseBusID reads a <pci> busid: any case, a domain of 4 to 8 hex digits
// (NVML writes eight, sysfs four or more) or none ("BB:DD.F", domain 0),
// white space around it ignored.
func parseBusID(s string) (pciaddr.Addr, error) {
	return pciaddr.ParseOptionalDomain(strings.TrimSpace(s))
}

// ParseFile reads and parses an NCCL topology file: a regular file (a FIFO
// or a device fails at once, never blocks), at most MaxBytes.
func ParseFile(path string) (*System, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("NCCL topology file: %w", err)
	}
	defer f.Close()
	s, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse reads an NCCL topology file.
func Parse(r io.Reader) (*System, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading NCCL topology: %w", err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("NCCL topology larger than %d bytes: %w", MaxBytes, ErrFormat)
	}
	p := &parser{dec: xml.NewDecoder(strings.NewReader(string(data)))}
	return p.parse()
}

type parser struct {
	dec      *xml.Decoder
	elements int
	depth    int
}

// next returns the next start or end element, skipping text, comments and
// processing instructions.
func (p *parser) next() (xml.Token, error) {
	for {
		tok, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			p.elements++
			p.depth++
			if p.elements > MaxElements {
				return nil, fmt.Errorf("more than %d elements: %w", MaxElements, ErrFormat)
			}
			if p.depth > MaxDepth {
				return nil, fmt.Errorf("nesting deeper than %d: %w", MaxDepth, ErrFormat)
			}
			return t, nil
		case xml.EndElement:
			p.depth--
			return t, nil
		}
	}
}

// skip consumes the rest of an element whose start was just read.
func (p *parser) skip() error {
	for {
		tok, err := p.next()
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			if err := p.skip(); err != nil {
				return err
			}
		case xml.EndElement:
			return nil
		}
	}
}

func (p *parser) parse() (*System, error) {
	var start xml.StartElement
	for {
		tok, err := p.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("no <system> element: %w", ErrFormat)
			}
			return nil, fmt.Errorf("NCCL topology: %w", err)
		}
		if s, ok := tok.(xml.StartElement); ok {
			start = s
			break
		}
	}
	if start.Name.Local != "system" {
		return nil, fmt.Errorf("root element is <%s>, want <system>: %w", start.Name.Local, ErrFormat)
	}
	a := attrs(start)
	version, err := a.int("version", -1)
	if err != nil || version != 1 {
		return nil, fmt.Errorf("<system version=%q>: NCCL reads version 1 only: %w", a["version"], ErrFormat)
	}
	sys := &System{Version: version, Name: a["name"]}
	if err := p.children("system", func(el xml.StartElement) error {
		if el.Name.Local != "cpu" {
			return p.skip()
		}
		cpu, err := p.cpu(el, len(sys.CPUs))
		if err != nil {
			return err
		}
		sys.CPUs = append(sys.CPUs, cpu)
		return nil
	}); err != nil {
		return nil, err
	}
	// Nothing but white space, comments or processing instructions may follow.
	for {
		tok, err := p.dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("NCCL topology: after </system>: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return nil, fmt.Errorf("element <%s> after </system>: %w", t.Name.Local, ErrFormat)
		case xml.CharData:
			if strings.TrimSpace(string(t)) != "" {
				return nil, fmt.Errorf("text after </system>: %w", ErrFormat)
			}
		}
	}
	return sys, nil
}

// children calls fn for every child element of the element just started
// (named parent), until its end.
func (p *parser) children(parent string, fn func(xml.StartElement) error) error {
	for {
		tok, err := p.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("unterminated <%s>: %w", parent, ErrFormat)
			}
			return fmt.Errorf("NCCL topology: in <%s>: %w", parent, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := fn(t); err != nil {
				return err
			}
		case xml.EndElement:
			return nil
		}
	}
}

func (p *parser) cpu(el xml.StartElement, idx int) (*CPU, error) {
	a := attrs(el)
	numa, err := a.int("numaid", -1)
	if err != nil {
		return nil, fmt.Errorf("cpu[%d]: %w", idx, err)
	}
	if numa < -1 {
		numa = -1
	}
	cpu := &CPU{NUMAID: numa, Affinity: a["affinity"], Arch: a["arch"], Vendor: a["vendor"]}
	path := fmt.Sprintf("cpu[%d]", idx)
	err = p.children("cpu", func(c xml.StartElement) error {
		switch c.Name.Local {
		case "pci":
			pci, err := p.pci(c, fmt.Sprintf("%s.pci[%d]", path, len(cpu.PCIs)))
			if err != nil {
				return err
			}
			cpu.PCIs = append(cpu.PCIs, pci)
			return nil
		case "nic":
			nic, err := p.nic(fmt.Sprintf("%s.nic[%d]", path, len(cpu.NICs)))
			if err != nil {
				return err
			}
			cpu.NICs = append(cpu.NICs, nic)
			return nil
		}
		return p.skip()
	})
	return cpu, err
}

func (p *parser) pci(el xml.StartElement, path string) (*PCI, error) {
	a := attrs(el)
	busID, ok := a["busid"]
	if !ok {
		return nil, fmt.Errorf("%s: <pci> without busid: %w", path, ErrFormat)
	}
	addr, err := parseBusID(busID)
	if err != nil {
		return nil, fmt.Errorf("%s: busid: %w", path, err)
	}
	pci := &PCI{BusID: busID, Addr: addr, LinkSpeed: a["link_speed"]}
	if c, ok := a["class"]; ok {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(c)), "0x"), 16, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: class %q is not a hex number: %w", path, c, ErrFormat)
		}
		pci.Class = uint32(v)
	}
	if pci.LinkWidth, err = a.int("link_width", 0); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	err = p.children("pci", func(c xml.StartElement) error {
		switch c.Name.Local {
		case "pci":
			child, err := p.pci(c, fmt.Sprintf("%s.pci[%d]", path, len(pci.Children)))
			if err != nil {
				return err
			}
			pci.Children = append(pci.Children, child)
			return nil
		case "gpu":
			if pci.GPU != nil {
				return fmt.Errorf("%s: two <gpu> elements: %w", path, ErrFormat)
			}
			g := attrs(c)
			gpu := &GPU{}
			var errs []error
			for _, f := range []struct {
				key string
				dst *int
			}{{"dev", &gpu.Dev}, {"sm", &gpu.SM}, {"rank", &gpu.Rank}} {
				v, err := g.int(f.key, -1)
				errs = append(errs, err)
				*f.dst = v
			}
			gdr, err := g.int("gdr", 0)
			errs = append(errs, err)
			gpu.GDR = gdr == 1
			if err := errors.Join(errs...); err != nil {
				return fmt.Errorf("%s.gpu: %w", path, err)
			}
			pci.GPU = gpu
			return p.skip() // nvlink and c2c children are not used
		case "nic":
			if pci.NIC != nil {
				return fmt.Errorf("%s: two <nic> elements: %w", path, ErrFormat)
			}
			nic, err := p.nic(path + ".nic")
			if err != nil {
				return err
			}
			pci.NIC = nic
			return nil
		}
		return p.skip()
	})
	return pci, err
}

func (p *parser) nic(path string) (*NIC, error) {
	nic := &NIC{}
	err := p.children("nic", func(c xml.StartElement) error {
		if c.Name.Local != "net" {
			return p.skip()
		}
		a := attrs(c)
		n := Net{Name: a["name"], GUID: a["guid"]}
		var errs []error
		for _, f := range []struct {
			key string
			dst *int
		}{{"dev", &n.Dev}, {"speed", &n.Speed}, {"port", &n.Port}, {"maxconn", &n.MaxConn}} {
			v, err := a.int(f.key, -1)
			errs = append(errs, err)
			*f.dst = v
		}
		gdr, err := a.int("gdr", 0)
		errs = append(errs, err)
		n.GDR = gdr == 1
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("%s.net[%d]: %w", path, len(nic.Nets), err)
		}
		nic.Nets = append(nic.Nets, n)
		return p.skip()
	})
	return nic, err
}

type attrMap map[string]string

func attrs(el xml.StartElement) attrMap {
	m := make(attrMap, len(el.Attr))
	for _, a := range el.Attr {
		if a.Name.Space == "" {
			m[a.Name.Local] = a.Value
		}
	}
	return m
}

// int reads a decimal attribute, def when absent.
func (a attrMap) int(key string, def int) (int, error) {
	s, ok := a[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return def, fmt.Errorf("%s=%q is not an integer: %w", key, s, ErrFormat)
	}
	return int(v), nil
}
