package sim

import "math/bits"

// AllPFs is the published answer to kubelet's order: every pod takes one
// device (a VF) on every rail PF of its node, whatever its GPUs (in
// practice one resource per PF, each requested once), so its GPUs' own
// NIC is always among them. No policy chooses: every pod gets the same
// devices whatever kubelet's order. What it costs is what it strands: the
// devices a pod holds that none of its GPUs uses (PolicyResult.DevicesIdle)
// and the pods the devices then run out for.
const AllPFs DeviceMode = "all-pfs"

// AllPFsPolicy names the one contender of an all-pfs run.
const AllPFsPolicy = "all-pfs"

// railPFs counts the PFs an all-pfs pod takes a device on: the PFs that
// are some GPU's rail (every PF when no GPU has one).
func (m *machine) railPFs() int {
	n, all := 0, 0
	seen := make([]bool, len(m.topo.NICs))
	for _, p := range m.devPF {
		if seen[p] {
			continue
		}
		seen[p] = true
		all++
		if m.rails.pfRail[p] >= 0 {
			n++
		}
	}
	if n == 0 {
		return all
	}
	return n
}

// onEveryPF picks, for an all-pfs pod on node, the lowest free device of
// every rail PF; errPolicy when one of them has none left.
func (r *runner) onEveryPF(node int) ([]int32, error) {
	m := r.m
	free := r.c.free(node)
	need, onRails := m.railPFs(), hasRail(m)
	taken := make([]bool, len(m.topo.NICs))
	out := make([]int32, 0, need)
	for w, word := range free {
		for ; word != 0; word &= word - 1 {
			d := int32(w*64 + bits.TrailingZeros64(word))
			p := m.devPF[d]
			if taken[p] || onRails && m.rails.pfRail[p] < 0 {
				continue
			}
			taken[p] = true
			out = append(out, d)
		}
	}
	if len(out) < need {
		return nil, errPolicy // a PF has no free device left
	}
	return out, nil
}

func hasRail(m *machine) bool {
	for _, r := range m.rails.pfRail {
		if r >= 0 {
			return true
		}
	}
	return false
}

// idleDevices counts the devices of a pod that none of its GPUs would
// use: devices on a PF farther from every one of the pod's GPUs than the
// nearest device the GPU holds (NCCL takes each GPU's nearest NIC).
func (m *machine) idleDevices(gpus uint64, devs []int32) int {
	var best [64]int // by GPU: the rank of its nearest device
	for g := range m.gpus {
		if gpus&(1<<g) != 0 {
			best[g] = m.bestClass(g, devs).Rank()
		}
	}
	idle := 0
	for _, d := range devs {
		used := false
		for k := gpus; k != 0 && !used; k &= k - 1 {
			g := bits.TrailingZeros64(k)
			used = m.ix.ClassAt(g, int(m.devPF[d])).Rank() == best[g]
		}
		if !used {
			idle++
		}
	}
	return idle
}

// allPFsPolicy is the contender of an all-pfs run: the devices are fixed
// (onEveryPF), so its allocation policy is never asked.
func allPFsPolicy() (Policy, error) {
	p, err := PolicyByName("kubelet")
	p.Name = AllPFsPolicy
	return p, err
}

// devicesOnEveryPF makes every pod of the workload ask for n devices, one
// on every rail PF (AllPFs).
func (w *workload) devicesOnEveryPF(n int) {
	for i := range w.jobs {
		w.jobs[i].devices = int32(n)
	}
}
