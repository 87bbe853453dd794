package bench

import (
	"cmp"
	"slices"
	"strings"
)

// NCCLTransport is what a job's NCCL_DEBUG=INFO lines say about the
// network it used, per host: the network NCCL chose, the HCAs it found,
// GPUDirect RDMA per HCA, and the transport of every channel. The lines
// may sit anywhere in an output (nccl-tests, a training log, several
// ranks and hosts interleaved); nccldebugformats.go lists the formats.
type NCCLTransport struct {
	// Version is NCCL's version as printed ("2.21.5+cuda12.4"); rank 0
	// prints it once, so it is the job's, not a host's.
	Version string `json:"version,omitempty"`
	// Hosts are the hosts of the lines, sorted by name; "" holds lines
	// without NCCL's "host:pid:tid [dev]" prefix.
	Hosts []NCCLHost `json:"hosts"`
	// Capped says lines of more than maxNCCLHosts hosts were seen: the
	// lines of the hosts beyond were not read.
	Capped bool `json:"capped,omitempty"`
}

// NCCLHost is one host's NCCL INFO lines, merged over its ranks.
type NCCLHost struct {
	Host string `json:"host"`
	// Networks are the networks NCCL chose ("Using network IB", "Socket",
	// a plugin's name such as "IBext_v8" or "AWS Libfabric"), sorted.
	Networks []string `json:"networks,omitempty"`
	// Plugins are the external net plugins NCCL loaded ("NCCL RDMA
	// Plugin v6").
	Plugins []string `json:"plugins,omitempty"`
	// NoIBDevice: NCCL printed "NET/IB : No device found.".
	NoIBDevice bool `json:"no_ib_device,omitempty"`
	// NoVerbs: NCCL could not open libibverbs.
	NoVerbs bool `json:"no_verbs,omitempty"`
	// HCAs are the devices of "NET/IB : Using [0]mlx5_0:1/RoCE ...",
	// sorted by NCCL's index, with the GID index and MTU of their queue
	// pairs when the connection lines were printed.
	HCAs []NCCLHCA `json:"hcas,omitempty"`
	// OOB is the out-of-band interface of the IB transport
	// ("eth0:10.0.0.1<0>"); Socket the interfaces of NET/Socket.
	OOB    string `json:"oob,omitempty"`
	Socket string `json:"socket,omitempty"`
	// GDR is GPUDirect RDMA support per HCA, as NCCL states it ("GPU
	// Direct RDMA Disabled for HCA 5 'mlx5_5' (no module)").
	GDR []NCCLGDR `json:"gdr,omitempty"`
	// GDRPaths are NCCL's per GPU and HCA decisions by PCIe distance
	// ("GPU Direct RDMA Disabled for GPU 1b000 / HCA 0 (distance 6 > 4)"),
	// printed at INFO level from NCCL 2.4 to 2.28.
	GDRPaths []NCCLGDRPath `json:"gdr_paths,omitempty"`
	// NetChannels count the channels through the network per network,
	// and how many of them carry GPUDirect RDMA ("via NET/IB/0/GDRDMA").
	NetChannels []NCCLNetChannels `json:"net_channels,omitempty"`
	// LocalChannels counts intra-node channels (P2P, SHM): no network.
	LocalChannels int `json:"local_channels,omitempty"`
	// Env holds the NCCL_* variables NCCL says were set ("NCCL_IB_GID_INDEX
	// set by environment to 3.").
	Env map[string]string `json:"env,omitempty"`
	// Hints are NCCL's own "HINT:" lines (ACS, GID index, timeouts).
	Hints []string `json:"hints,omitempty"`
}

// NCCLHCA is one device NCCL's IB transport uses.
type NCCLHCA struct {
	Index int    `json:"index"`          // NCCL's [N]
	Name  string `json:"name,omitempty"` // "mlx5_0"; "" when only a connection line named it
	Port  int    `json:"port,omitempty"`
	// LinkLayer is "IB" or "RoCE", as NCCL prints it.
	LinkLayer string `json:"link_layer,omitempty"`
	// GIDIndex is the RoCE GID index of its queue pairs; MTU their MTU in
	// bytes (NCCL prints the verbs enum: 3 is 1024, 5 is 4096).
	GIDIndex *int `json:"gid_index,omitempty"`
	MTU      int  `json:"mtu,omitempty"`
}

// NCCLGDR is NCCL's statement of GPUDirect RDMA support for one HCA.
type NCCLGDR struct {
	// Net is the network that printed it ("IB", "Socket"; "" in NCCL
	// versions that do not say).
	Net   string `json:"net,omitempty"`
	Index int    `json:"index"` // NCCL's HCA index; -1 when only a name was printed
	HCA   string `json:"hca,omitempty"`
	// GPU is the GPU of versions that decided per GPU (2.3, 2.4).
	GPU     string `json:"gpu,omitempty"`
	Enabled bool   `json:"enabled"`
	// Reason is NCCL's, when given ("no module"; NCCL 2.13 and later say
	// none).
	Reason string `json:"reason,omitempty"`
}

// NCCLGDRPath is NCCL's GPUDirect RDMA decision for one GPU and one HCA
// by their PCIe distance (against NCCL_NET_GDR_LEVEL, PXB by default).
type NCCLGDRPath struct {
	GPU      string `json:"gpu"`   // bus ID ("1b000") or, from 2.27, the rank
	Index    int    `json:"index"` // the HCA's NCCL index
	Enabled  bool   `json:"enabled"`
	Distance string `json:"distance"` // as printed: "6 > 4" (NCCL's path types, which vary by version)
}

// NCCLNetChannels counts one network's channels on a host by direction;
// lines without a direction (NCCL 2.3) count as receives.
type NCCLNetChannels struct {
	Net           string `json:"net"` // "IB", "Socket", "IBext_v8", "CollNet/SHARP"
	Send          int    `json:"send"`
	SendGDRDMA    int    `json:"send_gdrdma"`
	Receive       int    `json:"receive"`
	ReceiveGDRDMA int    `json:"receive_gdrdma"`
}

// Bounds: NCCL's own line buffer is 1024 bytes, and no host has more
// than a few dozen HCAs. Beyond the bounds lines are cut or dropped, so
// that a log of any size and content parses in bounded memory.
const (
	maxNCCLLine     = 2048
	maxNCCLHosts    = 4096
	maxNCCLName     = 256 // a host, HCA, network or env value
	maxNCCLHCAs     = 64
	maxNCCLGDR      = 64
	maxNCCLGDRPaths = 256
	maxNCCLList     = 8 // networks, plugins, channel networks
	maxNCCLEnv      = 64
	maxNCCLHints    = 16
	ncclInfoMarker  = "NCCL INFO "
)

// ncclParse is the state of one pass over the lines.
type ncclParse struct {
	version string
	hosts   map[string]*ncclHostState
	capped  bool
}

// ncclHostState is a host being read; its maps find entries to merge.
type ncclHostState struct {
	h     NCCLHost
	hcas  map[int]int // NCCL index -> position in h.HCAs
	gdr   map[NCCLGDR]bool
	paths map[NCCLGDRPath]bool
	nets  map[string]int // network -> position in h.NetChannels
}

// parseNCCLDebug reads every complete NCCL INFO line; nil when there is
// none. It never fails: lines it does not know are skipped.
func parseNCCLDebug(lines []line) *NCCLTransport {
	p := ncclParse{hosts: map[string]*ncclHostState{}}
	seen := false
	for _, l := range lines {
		if !l.complete {
			continue // cut off: never read, as table rows
		}
		text := l.text
		if len(text) > maxNCCLLine {
			text = text[:maxNCCLLine]
		}
		i := strings.Index(text, ncclInfoMarker)
		if i < 0 {
			// NCCL_DEBUG=VERSION (and WARN) print the version alone.
			if t := strings.TrimSpace(text); strings.HasPrefix(t, "NCCL version ") && p.version == "" {
				p.version = bounded(strings.Fields(t)[2])
			}
			continue
		}
		seen = true
		h := p.host(ncclLineHost(text[:i]))
		if h == nil {
			continue
		}
		p.read(h, strings.TrimSpace(text[i+len(ncclInfoMarker):]))
	}
	if !seen {
		return nil
	}
	return p.result()
}

// read applies the first format whose marker and pattern match msg.
func (p *ncclParse) read(h *ncclHostState, msg string) {
	for _, f := range ncclFormats {
		if !strings.Contains(msg, f.marker) {
			continue
		}
		if m := f.re.FindStringSubmatch(msg); m != nil {
			f.apply(p, h, m)
			return
		}
	}
}

// host returns the state of a host, nil past maxNCCLHosts.
func (p *ncclParse) host(name string) *ncclHostState {
	if h, ok := p.hosts[name]; ok {
		return h
	}
	if len(p.hosts) >= maxNCCLHosts {
		p.capped = true
		return nil
	}
	h := &ncclHostState{h: NCCLHost{Host: name}, hcas: map[int]int{}, gdr: map[NCCLGDR]bool{},
		paths: map[NCCLGDRPath]bool{}, nets: map[string]int{}}
	p.hosts[name] = h
	return h
}

// result is the transport in a stable order: hosts by name, HCAs by
// index, the rest sorted.
func (p *ncclParse) result() *NCCLTransport {
	t := &NCCLTransport{Version: p.version, Capped: p.capped, Hosts: make([]NCCLHost, 0, len(p.hosts))}
	for _, s := range p.hosts {
		h := s.h
		slices.Sort(h.Networks)
		slices.Sort(h.Plugins)
		slices.SortFunc(h.HCAs, func(a, b NCCLHCA) int { return cmp.Compare(a.Index, b.Index) })
		slices.SortFunc(h.GDR, func(a, b NCCLGDR) int {
			return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.HCA, b.HCA), cmp.Compare(a.Net, b.Net),
				cmp.Compare(a.GPU, b.GPU), boolCmp(a.Enabled, b.Enabled), cmp.Compare(a.Reason, b.Reason))
		})
		slices.SortFunc(h.GDRPaths, func(a, b NCCLGDRPath) int {
			return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Index, b.Index), boolCmp(a.Enabled, b.Enabled),
				cmp.Compare(a.Distance, b.Distance))
		})
		slices.SortFunc(h.NetChannels, func(a, b NCCLNetChannels) int { return cmp.Compare(a.Net, b.Net) })
		t.Hosts = append(t.Hosts, h)
	}
	slices.SortFunc(t.Hosts, func(a, b NCCLHost) int { return cmp.Compare(a.Host, b.Host) })
	return t
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// ncclLineHost is the host of NCCL's "host:pid:tid [dev] " prefix at the
// end of before (the text before "NCCL INFO"); "" when there is none.
// What precedes it (a timestamp, a launcher's "[1] " or Ray's "(pid=2981)
// ") is ignored.
func ncclLineHost(before string) string {
	b := strings.TrimRight(before, " \t")
	j := strings.LastIndexByte(b, '[')
	if j < 0 || !strings.HasSuffix(b, "]") || !allDigits(b[j+1:len(b)-1]) {
		return ""
	}
	b = strings.TrimRight(b[:j], " \t")
	f := b[strings.LastIndexAny(b, " \t")+1:]
	for range 2 { // ":tid", then ":pid"
		c := strings.LastIndexByte(f, ':')
		if c < 0 || !allDigits(f[c+1:]) {
			return ""
		}
		f = f[:c]
	}
	// A tag glued to the host ("[1,0]<stdout>:host", "0:host").
	if c := strings.LastIndexAny(f, ":>]"); c >= 0 {
		f = f[c+1:]
	}
	return bounded(f)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// bounded cuts a name from a log to maxNCCLName bytes.
func bounded(s string) string {
	if len(s) > maxNCCLName {
		return s[:maxNCCLName]
	}
	return s
}

// addUnique appends v to *list unless present or the list is full.
func addUnique(list *[]string, v string, limit int) {
	v = bounded(v)
	if v == "" || slices.Contains(*list, v) || len(*list) >= limit {
		return
	}
	*list = append(*list, v)
}

// hca returns the HCA of NCCL index i, added when new; nil when the host
// has maxNCCLHCAs already.
func (h *ncclHostState) hca(i int) *NCCLHCA {
	if k, ok := h.hcas[i]; ok {
		return &h.h.HCAs[k]
	}
	if len(h.h.HCAs) >= maxNCCLHCAs {
		return nil
	}
	h.hcas[i] = len(h.h.HCAs)
	h.h.HCAs = append(h.h.HCAs, NCCLHCA{Index: i})
	return &h.h.HCAs[len(h.h.HCAs)-1]
}

// channels returns the channel counts of a network, nil when the host
// has maxNCCLList networks already.
func (h *ncclHostState) channels(net string) *NCCLNetChannels {
	net = bounded(net)
	if k, ok := h.nets[net]; ok {
		return &h.h.NetChannels[k]
	}
	if len(h.h.NetChannels) >= maxNCCLList {
		return nil
	}
	h.nets[net] = len(h.h.NetChannels)
	h.h.NetChannels = append(h.h.NetChannels, NCCLNetChannels{Net: net})
	return &h.h.NetChannels[len(h.h.NetChannels)-1]
}

// addGDR records one HCA's GPUDirect RDMA statement once.
func (h *ncclHostState) addGDR(g NCCLGDR) {
	if h.gdr[g] || len(h.h.GDR) >= maxNCCLGDR {
		return
	}
	h.gdr[g] = true
	h.h.GDR = append(h.h.GDR, g)
}

// addPath records one GPU/HCA decision once.
func (h *ncclHostState) addPath(g NCCLGDRPath) {
	if h.paths[g] || len(h.h.GDRPaths) >= maxNCCLGDRPaths {
		return
	}
	h.paths[g] = true
	h.h.GDRPaths = append(h.h.GDRPaths, g)
}

// setEnv records an NCCL_* variable NCCL reports.
func (h *ncclHostState) setEnv(name, value string) {
	if h.h.Env == nil {
		h.h.Env = map[string]string{}
	}
	if _, ok := h.h.Env[name]; ok || len(h.h.Env) >= maxNCCLEnv {
		return
	}
	h.h.Env[bounded(name)] = bounded(value)
}

// ParseNCCLDebug reads data for its NCCL_DEBUG=INFO lines alone (bench
// parse --suite nccl-debug): a result with no rows, tool "nccl-debug" and
// its NCCLTransport, ok when NCCL INFO lines were found. Any log will do:
// a training job's, an application's.
func ParseNCCLDebug(data []byte) Result {
	r := Result{Tool: ToolNCCLDebug, Summary: map[string]float64{}, NCCLTransport: parseNCCLDebug(splitLines(data))}
	if r.NCCLTransport == nil {
		r.Error = "no NCCL INFO lines: run the job with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,ENV,NET)"
	}
	r.OK = r.Error == ""
	return r
}

// ToolNCCLDebug is the tool of a ParseNCCLDebug result.
const ToolNCCLDebug = "nccl-debug"
