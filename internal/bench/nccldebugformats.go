package bench

import (
	"regexp"
	"strconv"
	"strings"
)

// ncclFormat is one kind of NCCL INFO message (the text after "NCCL
// INFO "): a substring every such message holds, a cheap test before the
// pattern; the pattern; and what a match records. source names where NCCL
// prints it (github.com/NVIDIA/nccl, by release tag).
type ncclFormat struct {
	name   string
	source string
	marker string
	re     *regexp.Regexp
	apply  func(p *ncclParse, h *ncclHostState, m []string)
}

// ncclFormats are the messages read, the first match wins.
var ncclFormats = []ncclFormat{
	{
		name:   "version",
		source: `init.cc VERSION_STRING "NCCL version %d.%d.%d%s+cuda%d.%d" (INFO since 2.0)`,
		marker: "NCCL version ",
		re:     regexp.MustCompile(`^NCCL version (\S+)`),
		apply: func(p *ncclParse, _ *ncclHostState, m []string) {
			if p.version == "" {
				p.version = bounded(m[1])
			}
		},
	},
	{
		name:   "network",
		source: `init.cc "Using network %s" (2.6 and later)`,
		marker: "Using network ",
		re:     regexp.MustCompile(`^Using network (.+)$`),
		apply:  func(_ *ncclParse, h *ncclHostState, m []string) { addUnique(&h.h.Networks, m[1], maxNCCLList) },
	},
	{
		name: "net plugin",
		source: `net.cc, plugin/net/net_v*.cc "NET/Plugin: Loaded net plugin %s (v%d)" (2.13 and later); plugin/net.cc ` +
			`"Successfully loaded external plugin %s" (2.27), "... external network plugin %s" (2.28 and later)`,
		marker: "plugin ",
		re:     regexp.MustCompile(`^(?:NET/Plugin ?: Loaded net plugin (.+?)(?: \(v\d+\))?|Successfully loaded external (?:network )?plugin (.+))$`),
		apply: func(_ *ncclParse, h *ncclHostState, m []string) {
			addUnique(&h.h.Plugins, m[1]+m[2], maxNCCLList)
		},
	},
	{
		name:   "no IB device",
		source: `transport/net_ib.cc, net_ib/init.cc "NET/IB : No device found." (2.4 and later)`,
		marker: "No device found",
		re:     regexp.MustCompile(`^NET/IB ?: No device found`),
		apply:  func(_ *ncclParse, h *ncclHostState, _ []string) { h.h.NoIBDevice = true },
	},
	{
		name:   "no libibverbs",
		source: `misc/ibvwrap.cc "Failed to open libibverbs.so[.1]" (to 2.18); misc/ibvsymbols.cc "Count not open %s" (2.19 and later)`,
		marker: "libibverbs",
		re:     regexp.MustCompile(`^(?:Failed to open|Count not open|Could not open) libibverbs`),
		apply:  func(_ *ncclParse, h *ncclHostState, _ []string) { h.h.NoVerbs = true },
	},
	{
		name: "IB devices",
		source: `transport/net_ib.cc, net_ib/init.cc "NET/IB : Using%s %s; OOB %s:%s", each device " [%d]%s:%d/%s" ` +
			`with ":%d" (rail) or "::%d" (plane) before "/%s" in 2.28 and later; the RDMA plugin adds "/SHARP" (2.4 and later)`,
		marker: "Using",
		re:     regexp.MustCompile(`^NET/IB ?: Using(.*)$`),
		apply: func(_ *ncclParse, h *ncclHostState, m []string) {
			body := m[1]
			if k := strings.Index(body, "; OOB "); k >= 0 {
				if h.h.OOB == "" {
					h.h.OOB = bounded(strings.TrimSpace(body[k+len("; OOB "):]))
				}
				body = body[:k]
			}
			for _, d := range ncclHCAItem.FindAllStringSubmatch(body, maxNCCLHCAs) {
				idx, err1 := strconv.Atoi(d[1])
				port, err2 := strconv.Atoi(d[3])
				if err1 != nil || err2 != nil {
					continue
				}
				if a := h.hca(idx); a != nil && a.Name == "" {
					a.Name, a.Port, a.LinkLayer = bounded(d[2]), port, d[4]
				}
			}
		},
	},
	{
		name:   "socket interfaces",
		source: `transport/net_socket.cc "NET/Socket : Using%s", each " [%d]%s:%s" (2.4 and later)`,
		marker: "Using",
		re:     regexp.MustCompile(`^NET/Socket ?: Using (.+)$`),
		apply: func(_ *ncclParse, h *ncclHostState, m []string) {
			if h.h.Socket == "" {
				h.h.Socket = bounded(m[1])
			}
		},
	},
	{
		name: "GPUDirect RDMA",
		source: `per HCA: net_ib.cc "NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)" (2.5 to 2.12), ` +
			`graph/topo.cc "NET/%s : GPU Direct RDMA %s for HCA %d '%s'" (2.13 and later); ` +
			`per GPU: net_ib.cu "NET/IB : GPU Direct RDMA Disabled for GPU %d / HCA %s (%s)" (2.3), ` +
			`net_ib.cc "... for GPU %d[%d] / HCA %d '%s' (no module or not supported by GPU)" and net.cc ` +
			`"NET/%s : GPU Direct RDMA Disabled for GPU %d[%d] / HCA %d (distance %d >= %d)" (2.4), ` +
			`graph/paths.cc "GPU Direct RDMA Disabled for GPU %lx / HCA %d (distance %d > %d)", ` +
			`"... Enabled for GPU %lx / HCA %d (distance %d <= %d), read %d" (2.6 to 2.26; HCA %lx from 2.19), ` +
			`"... for GPU %d / HCA %lx (...), read %d mode %s" (2.27, 2.28; TRACE only from 2.29)`,
		marker: "GPU Direct RDMA ",
		re: regexp.MustCompile(`^(?:NET/(.+?) ?: )?GPU Direct RDMA (Enabled|Disabled) for ` +
			`(?:GPU ([0-9a-fA-F]+)(?:\[\d+\])? / )?HCA (\S+?)(?: '([^']*)')?(?: \(([^)]*)\))?(?:, read \d+)?(?: mode \S+)?\s*$`),
		apply: applyGDR,
	},
	{
		name: "queue pair GID",
		source: `net_ib.cu, net_ib.cc "NET/IB: Dev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX)" (2.3 to 2.18), with ` +
			`"query_ece={...} " before GID (2.19 to 2.26), "NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d ..." ` +
			`("NCCL Dev"/"NCCL MergedDev", 2.20 and later); net_ib/connect.cc "NET/IB: %s: %s %d IbDev %d Port %d qp_num %d ` +
			`mtu %d GID %ld (%lX/%lX) ctsFifoRkey=..." (__func__ first, 2.29.7 and later)`,
		marker: " GID ",
		re: regexp.MustCompile(`^NET/IB: (?:\w+: )?(?:NCCL (?:Merged)?Dev \d+ I[bB]Dev|Dev) (\d+) Port \d+ qp(?:n|_num) \d+ mtu (\d+) ` +
			`(?:query_ece=\{[^}]*\} )?GID (-?\d+) \(`),
		apply: func(_ *ncclParse, h *ncclHostState, m []string) {
			idx, err1 := strconv.Atoi(m[1])
			mtu, err2 := strconv.Atoi(m[2])
			gid, err3 := strconv.Atoi(m[3])
			if err1 != nil || err2 != nil || err3 != nil {
				return
			}
			if a := h.hca(idx); a != nil && a.GIDIndex == nil {
				a.GIDIndex, a.MTU = &gid, ibMTUBytes(mtu)
			}
		},
	},
	{
		name:   "environment",
		source: `misc/param.cc "%s set by environment to %lld." and "NCCL_* set by environment to %s" across NCCL; net_ib "NCCL_IB_HCA set to %s"`,
		marker: " set ",
		re:     regexp.MustCompile(`^(NCCL_[A-Z0-9_]+) set (?:by environment )?to (.+)$`),
		apply: func(_ *ncclParse, h *ncclHostState, m []string) {
			v := m[2]
			if n := strings.TrimSuffix(v, "."); n != v && allDigits(strings.TrimPrefix(n, "-")) {
				v = n // param.cc ends integers with a period
			}
			h.setEnv(m[1], v)
		},
	},
	{
		name:   "hint",
		source: `misc/ibvwrap.cc, net_ib "HINT: In many cases this error occurs when ACS is enabled ..." and friends (2.30.7 and later)`,
		marker: "HINT: ",
		re:     regexp.MustCompile(`^HINT: (.+)$`),
		apply:  func(_ *ncclParse, h *ncclHostState, m []string) { addUnique(&h.h.Hints, m[1], maxNCCLHints) },
	},
	{
		name: "channel",
		source: `transport/net.cc "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s" ("/GDRDMA", "(PCI)", ` +
			`"/Shared"; "NET/%s/%d(%d)" through a PXN proxy), "Ring %02d : %d -> %d [send] via NET/%s/%d%s" (2.4), ` +
			`"Ring %02d : %d -> %d via NET/%s/%d%s%s" (2.3); p2p.cc, shm.cc "... via P2P/IPC", "via SHM/direct/direct"`,
		marker: " via ",
		re:     regexp.MustCompile(`^(?:Channel|Ring) \d+(?:/\d+)? : \d+(?:\[[0-9a-fA-F]+\])? -> \d+(?:\[[0-9a-fA-F]+\])? (?:\[(send|receive)\] )?via (\S.*)$`),
		apply:  applyChannel,
	},
	{
		name:   "CollNet channel",
		source: `transport/coll_net.cc "CollNet %02d/%1d : %d [send] via COLLNET/%s/%d%s%s" (2.6 and later)`,
		marker: " via COLLNET/",
		re:     regexp.MustCompile(`^CollNet \d+/\d+ : \d+ \[(send|receive)\] via (COLLNET/.+)$`),
		apply:  applyChannel,
	},
}

// ncclHCAItem is one device of the "NET/IB : Using" line: "[0]mlx5_0:1/RoCE",
// "[1]mlx5_1:1/IB/SHARP", "[2]mlx5_2:1:3/IB" (rail 3), "[3]mlx5_3:1::2/IB"
// (plane 2).
var ncclHCAItem = regexp.MustCompile(`\[(\d+)\]([^\s:\[\]]+):(\d+)(?::\d*)?(?::\d+)?/(\w+)`)

// ncclVia is a channel through the network: "NET/IB/0/GDRDMA",
// "NET/IB/0(1)/GDRDMA(PCI)/Shared", "NET/AWS Libfabric/3", "COLLNET/SHARP/0".
var ncclVia = regexp.MustCompile(`^(NET|COLLNET)/(.+?)/\d+(?:\(\d+\))?(/GDRDMA)?`)

func applyChannel(_ *ncclParse, h *ncclHostState, m []string) {
	v := ncclVia.FindStringSubmatch(m[2])
	if v == nil {
		h.h.LocalChannels++ // P2P, SHM: inside the host
		return
	}
	net := v[2]
	if v[1] == "COLLNET" {
		net = "CollNet/" + net
	}
	c := h.channels(net)
	if c == nil {
		return
	}
	gdr := v[3] != ""
	if m[1] == "send" {
		c.Send++
		if gdr {
			c.SendGDRDMA++
		}
		return
	}
	c.Receive++
	if gdr {
		c.ReceiveGDRDMA++
	}
}

// applyGDR records a GPUDirect RDMA line: a decision by distance is a
// path, anything else the HCA's support.
func applyGDR(_ *ncclParse, h *ncclHostState, m []string) {
	net, enabled, gpu, hca, name, reason := m[1], m[2] == "Enabled", m[3], m[4], m[5], m[6]
	if d, ok := strings.CutPrefix(reason, "distance "); ok && gpu != "" {
		idx, err := strconv.ParseUint(hca, 16, 64) // %lx from 2.19: the topology ID
		if err != nil {
			return
		}
		h.addPath(NCCLGDRPath{GPU: bounded(gpu), Index: int(idx & ncclTopoLocalIDMask), Enabled: enabled, Distance: bounded(d)})
		return
	}
	g := NCCLGDR{Net: bounded(net), Index: -1, HCA: bounded(name), GPU: bounded(gpu), Enabled: enabled, Reason: bounded(reason)}
	if i, err := strconv.Atoi(hca); err == nil && i >= 0 {
		g.Index = i
	} else if g.HCA == "" {
		g.HCA = bounded(hca) // 2.3 names the HCA without an index
	}
	h.addGDR(g)
}

// ncclTopoLocalIDMask is NCCL_TOPO_ID_LOCAL_ID's mask (graph/topo.h): the
// HCA of a topology ID, without the system ID in its top byte.
const ncclTopoLocalIDMask = 0x00ffffffffffffff

// ibMTUBytes maps the verbs MTU enum NCCL prints (IBV_MTU_256 = 1 ...
// IBV_MTU_4096 = 5) to bytes; 0 for another value.
func ibMTUBytes(enum int) int {
	if enum >= 1 && enum <= 5 {
		return 128 << enum
	}
	return 0
}
