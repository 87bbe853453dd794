package benchverify

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/topology"
)

// Checks of a job's devices, beside bench's NCCL checks.
const (
	// CheckDevices: every pod of the job got RDMA devices from Railyard.
	CheckDevices = "job-devices"
	// CheckNear: each pod's NICs are near (PIX, PXB) to one of its GPUs,
	// and each GPU has a near NIC.
	CheckNear = "job-near"
	// CheckRails: every pod is on the same rails.
	CheckRails = "job-rails"
	// CheckHCAs: NCCL used the HCAs Railyard gave each pod.
	CheckHCAs = "job-hcas"
	// CheckLogs: the pods' logs could be read and hold NCCL INFO lines.
	CheckLogs = "job-logs"
)

// Scenario is the scenario of the verdicts: "rdma" when a pod of the job
// holds RDMA devices from Railyard (NCCL then must use them: a socket
// fallback fails), else "job".
const (
	ScenarioRDMA = "rdma"
	ScenarioJob  = "job"
)

// maxListed bounds the pods or hosts a reason names.
const maxListed = 8

// judge computes every verdict of a report.
func judge(rep *Report, o Options) []bench.Verdict {
	scenario := ScenarioJob
	if slices.ContainsFunc(rep.Pods, func(p Pod) bool { return len(p.NICs) > 0 }) {
		scenario = ScenarioRDMA
	}
	base := bench.Verdict{Scenario: scenario, Tool: "bench verify"}
	var all []byte
	for i := range rep.Pods {
		p := &rep.Pods[i]
		if t := bench.ParseNCCLDebug(p.log).NCCLTransport; t != nil {
			for _, h := range t.Hosts {
				p.Hosts = append(p.Hosts, h.Host)
			}
		}
		all = append(all, p.log...)
		p.log = nil
	}
	out := []bench.Verdict{logsVerdict(base, rep)}
	r := bench.ParseNCCLDebug(all)
	rep.NCCL = r.NCCLTransport
	if rep.NCCL != nil {
		in := bench.JudgeInput{Profile: o.Profile, NearHCAs: nearHCAs(rep.Pods)}
		vs := bench.NCCLTransportVerdicts(in, bench.Labelled{Scenario: scenario, Result: r})
		for i := range vs {
			vs[i].Tool = base.Tool
		}
		out = append(out, vs...)
	}
	out = append(out, devicesVerdict(base, rep.Pods), nearVerdict(base, rep.Pods), railsVerdict(base, rep.Pods))
	if v, ok := hcasVerdict(base, rep); ok {
		out = append(out, v)
	}
	return out
}

// logsVerdict: every log read, with NCCL INFO lines somewhere.
func logsVerdict(v bench.Verdict, rep *Report) bench.Verdict {
	v.Check = CheckLogs
	var failed, cut, none []string
	withLines := 0
	for _, p := range rep.Pods {
		for _, l := range p.Logs {
			if l.Error != "" {
				failed = append(failed, p.Name+"/"+l.Container+": "+l.Error)
			}
			if l.Truncated {
				cut = append(cut, p.Name+"/"+l.Container)
			}
		}
		if len(p.Hosts) > 0 {
			withLines++
		} else {
			none = append(none, p.Name)
		}
	}
	switch {
	case withLines == 0:
		v.Status = bench.StatusWarn
		v.Reason = "no pod's log holds NCCL INFO lines: nothing says which network the job used; run it with NCCL_DEBUG=INFO " +
			"NCCL_DEBUG_SUBSYS=INIT,ENV,NET (for an MPIJob, select its launcher too: its log holds every rank's lines)"
	case len(failed) > 0:
		v.Status, v.Reason = bench.StatusWarn, "logs not read: "+list(failed)
	default:
		v.Status = bench.StatusPass
		v.Reason = fmt.Sprintf("NCCL INFO lines in the logs of %d of %d pods", withLines, len(rep.Pods))
		if len(none) > 0 {
			v.Reason += " (none in " + list(none) + ")"
		}
	}
	if len(cut) > 0 {
		v.Reason += "; logs longer than the bytes read, only their head judged: " + list(cut)
	}
	if rep.MorePods > 0 {
		v.Reason += fmt.Sprintf("; %d more pods match and were not read", rep.MorePods)
	}
	return v
}

// nearHCAs says per RDMA device name whether a GPU of its pod is near it,
// where every pod that has it agrees.
func nearHCAs(pods []Pod) map[string]bool {
	out, mixed := map[string]bool{}, map[string]bool{}
	for _, p := range pods {
		for _, n := range p.NICs {
			if n.RDMA == "" || n.Class == "" {
				continue
			}
			c, err := topology.ParseClass(n.Class)
			if err != nil {
				continue
			}
			if prev, ok := out[n.RDMA]; ok && prev != c.GPUDirect() {
				mixed[n.RDMA] = true
			}
			out[n.RDMA] = c.GPUDirect()
		}
	}
	for m := range mixed {
		delete(out, m)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// devicesVerdict: every pod got RDMA devices from Railyard.
func devicesVerdict(v bench.Verdict, pods []Pod) bench.Verdict {
	v.Check = CheckDevices
	var with, hidden, without []string
	for _, p := range pods {
		switch {
		case len(p.NICs) > 0:
			with = append(with, fmt.Sprintf("%s: %s", p.Name, nicList(p.NICs)))
		case len(p.Resources) > 0:
			hidden = append(hidden, p.Name)
		default:
			without = append(without, p.Name)
		}
	}
	switch {
	case len(without) > 0 && (len(with) > 0 || len(hidden) > 0):
		v.Status = bench.StatusFail
		v.Reason = "pods without an RDMA device from Railyard: " + list(without) + "; NCCL on them falls back to TCP sockets or " +
			"fails: check their resource requests or claims (kubectl describe pod)"
	case len(without) > 0:
		v.Status = bench.StatusWarn
		v.Reason = "no pod holds an RDMA device from Railyard (a DRA claim of rdma.railyard.io, a Multus network with device-info, " +
			"or a railyard.io/ resource): is this a job on Railyard's devices?"
	case len(hidden) > 0:
		v.Status = bench.StatusInfo
		v.Reason = "devices from the device plugin not named by Multus (nearness and rails not known): " + list(hidden)
		if len(with) > 0 {
			v.Reason += "; " + list(with)
		}
	default:
		v.Status = bench.StatusPass
		v.Reason = "every pod got RDMA devices: " + list(with)
	}
	return v
}

func nicList(nics []NIC) string {
	parts := make([]string, len(nics))
	for i, n := range nics {
		s := n.RDMA
		if s == "" {
			s = n.PCI
		}
		if n.Rail != nil {
			s += " rail " + strconv.FormatInt(*n.Rail, 10)
		}
		if n.Class != "" {
			s += " " + n.Class
		}
		parts[i] = s
	}
	return strings.Join(parts, ", ")
}

// nearVerdict: each NIC is near one of its pod's GPUs and each GPU has a
// near NIC (NCCL uses GPUDirect RDMA by default only up to PXB).
func nearVerdict(v bench.Verdict, pods []Pod) bench.Verdict {
	v.Check = CheckNear
	var far, known []string
	unknown := 0
	for _, p := range pods {
		for _, n := range p.NICs {
			if n.Class == "" {
				unknown++
				continue
			}
			c, _ := topology.ParseClass(n.Class)
			name := p.Name + " " + orPCI(n)
			if !c.GPUDirect() {
				far = append(far, fmt.Sprintf("%s is %s from its nearest GPU %s", name, n.Class, n.NearGPU))
			} else {
				known = append(known, name)
			}
		}
		for _, g := range p.GPUs {
			if g.PCI == "" {
				continue
			}
			best := topology.ClassUnknown
			for _, n := range p.NICs {
				if c, ok := n.classes[g.PCI]; ok && (best == topology.ClassUnknown || c.Rank() < best.Rank()) {
					best = c
				}
			}
			if best != topology.ClassUnknown && !best.GPUDirect() {
				far = append(far, fmt.Sprintf("%s's GPU %s has no NIC nearer than %s", p.Name, g.PCI, best))
			}
		}
	}
	switch {
	case len(far) > 0:
		v.Status = bench.StatusFail
		v.Reason = "NICs far from the pod's GPUs (NCCL uses GPUDirect RDMA only up to PXB by default; beyond it the GPU's traffic " +
			"is staged through host memory): " + list(far) + "; claim GPU and NIC together on one pcieRoot (railyard rails template)"
	case len(known) == 0:
		v.Status = bench.StatusInfo
		v.Reason = "no NIC's distance to its pod's GPUs is known (GPUs not in DRA claims, or NICs without railyard.io/gpu_ class attributes): " +
			"judged from NCCL's GPUDirect lines only"
	default:
		v.Status = bench.StatusPass
		v.Reason = fmt.Sprintf("%d NICs each PIX or PXB to one of their pod's GPUs", len(known))
		if unknown > 0 {
			v.Reason += fmt.Sprintf(" (%d more of unknown distance)", unknown)
		}
	}
	return v
}

func orPCI(n NIC) string {
	if n.RDMA != "" {
		return n.RDMA
	}
	return n.PCI
}

// railsVerdict: every pod on the same rails.
func railsVerdict(v bench.Verdict, pods []Pod) bench.Verdict {
	v.Check = CheckRails
	sets := map[string][]string{}
	unknown := []string{}
	for _, p := range pods {
		if len(p.NICs) == 0 {
			continue
		}
		var rails []int
		for _, n := range p.NICs {
			if n.Rail == nil {
				rails = nil
				break
			}
			rails = append(rails, int(*n.Rail))
		}
		if rails == nil {
			unknown = append(unknown, p.Name)
			continue
		}
		slices.Sort(rails)
		key := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(rails)), ","), "[]")
		sets[key] = append(sets[key], p.Name)
	}
	switch {
	case len(sets) > 1:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(sets)) {
			parts = append(parts, "rails "+k+": "+list(sets[k]))
		}
		v.Status = bench.StatusFail
		v.Reason = "the pods are on different rails (" + strings.Join(parts, "; ") + "): on isolated rails NCCL cannot connect them " +
			"(handshake failures), elsewhere every ring crosses the spine; give the job one rail set (railyard rails template)"
	case len(sets) == 0:
		v.Status = bench.StatusInfo
		v.Reason = "no pod's rails are known (NICs without railyard.io/rail, VFs named by Multus only, or no NICs)"
	default:
		for k, names := range sets {
			v.Status = bench.StatusPass
			v.Reason = fmt.Sprintf("%d pods on rails %s", len(names), k)
		}
	}
	if len(unknown) > 0 && len(sets) > 0 {
		v.Reason += "; rails unknown for " + list(unknown)
	}
	return v
}

// hcasVerdict: on each pod whose NCCL host is known, NCCL's HCAs are the
// RDMA devices Railyard gave it. ok false when no pod can be compared.
func hcasVerdict(v bench.Verdict, rep *Report) (bench.Verdict, bool) {
	v.Check = CheckHCAs
	if rep.NCCL == nil {
		return v, false
	}
	hosts := map[string]bench.NCCLHost{}
	for _, h := range rep.NCCL.Hosts {
		hosts[h.Host] = h
	}
	var odd, same []string
	for _, p := range rep.Pods {
		h, ok := podHost(p, hosts)
		if !ok || len(h.HCAs) == 0 {
			continue
		}
		got := map[string]bool{}
		for _, n := range p.NICs {
			if n.RDMA != "" {
				got[n.RDMA] = true
			}
		}
		if len(got) == 0 {
			continue
		}
		var extra []string
		used := map[string]bool{}
		for _, a := range h.HCAs {
			if a.Name == "" {
				continue
			}
			used[a.Name] = true
			if !got[a.Name] {
				extra = append(extra, a.Name)
			}
		}
		var unused []string
		for _, n := range slices.Sorted(maps.Keys(got)) {
			if !used[n] {
				unused = append(unused, n)
			}
		}
		switch {
		case len(extra) > 0:
			odd = append(odd, fmt.Sprintf("%s: NCCL used %s, not given to the pod", p.Name, strings.Join(extra, ",")))
		case len(unused) > 0:
			odd = append(odd, fmt.Sprintf("%s: NCCL left %s unused", p.Name, strings.Join(unused, ",")))
		default:
			same = append(same, p.Name)
		}
	}
	switch {
	case len(odd) > 0:
		v.Status = bench.StatusWarn
		v.Reason = "NCCL's HCAs differ from the pod's devices: " + list(odd) + "; check NCCL_IB_HCA in the pod " +
			"(Railyard sets it to the pod's devices; the pod's own value wins on the device-plugin path)"
	case len(same) == 0:
		return v, false
	default:
		v.Status = bench.StatusPass
		v.Reason = "NCCL used exactly the RDMA devices Railyard gave " + list(same)
	}
	return v, true
}

// podHost finds a pod's NCCL host: the one host of its own log's lines,
// else the host named as the pod (NCCL prints the hostname, a pod's name
// unless spec.hostname says otherwise).
func podHost(p Pod, hosts map[string]bench.NCCLHost) (bench.NCCLHost, bool) {
	if len(p.Hosts) == 1 {
		h, ok := hosts[p.Hosts[0]]
		return h, ok
	}
	h, ok := hosts[p.Name]
	return h, ok
}

// list names at most maxListed items, and how many more.
func list(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:maxListed], "; ") + fmt.Sprintf("; and %d more", len(items)-maxListed)
}
