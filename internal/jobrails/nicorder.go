package jobrails

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// Two numberings of one node's rails:
//
//   - Railyard's (railyard.io/rail, topology.NICRails): a rail is the index
//     of the first GPU its NIC serves. An 8-GPU/4-NIC node has rails 0, 2,
//     4 and 6; a DGX H100 rails 0-7.
//   - NIC order, as NVIDIA's operators number rails (the Spectrum-X
//     operator's railPciAddresses lists, the eth_r<i> names of its
//     interface name template): the rail NICs in PCI address order,
//     counted from 0. The 8-GPU/4-NIC node has NIC rails 0-3.
//
// The two agree where every NIC serves one GPU and GPUs and NICs sort the
// same way; elsewhere they differ, and a rail named in one must be
// translated before the other is asked.

// NICRails numbers n's rails in NIC order: Railyard rail -> NIC rail, the
// rails sorted by their NIC's PCI address (Rail.PF; a rail without one
// after those with one, by number).
func (n Node) NICRails() map[int64]int64 {
	rails := slices.Collect(maps.Values(n.Rails))
	slices.SortFunc(rails, func(a, b *Rail) int {
		switch {
		case a.PF == "" && b.PF != "":
			return 1
		case a.PF != "" && b.PF == "":
			return -1
		}
		return cmp.Or(pciaddr.CompareStrings(a.PF, b.PF), cmp.Compare(a.Rail, b.Rail))
	})
	out := make(map[int64]int64, len(rails))
	for i, r := range rails {
		out[r.Rail] = int64(i)
	}
	return out
}

// NICOrder is the cluster's NIC numbering of rails: NIC rail -> Railyard
// rail. Every node that has a NIC rail must put it on the same Railyard
// rail: where two disagree (nodes of different models) it fails with
// ErrInput, naming them.
func NICOrder(nodes []Node) (map[int64]int64, error) {
	out := map[int64]int64{}
	from := map[int64]string{}
	for _, n := range nodes {
		for rail, nic := range n.NICRails() {
			prev, seen := out[nic]
			switch {
			case !seen:
				out[nic], from[nic] = rail, n.Name
			case prev != rail:
				return nil, fmt.Errorf("%w: NIC rail %d is rail %d on %s but rail %d on %s: name rails in Railyard's numbering on a cluster of mixed models",
					ErrInput, nic, prev, from[nic], rail, n.Name)
			}
		}
	}
	return out, nil
}

// FromNICOrder turns NIC rails into Railyard rails, sorted, by order
// (NICOrder's answer).
func FromNICOrder(order map[int64]int64, nicRails []int64) ([]int64, error) {
	out := make([]int64, 0, len(nicRails))
	for _, nic := range nicRails {
		r, ok := order[nic]
		if !ok {
			return nil, fmt.Errorf("%w: no node has NIC rail %d (NIC rails %s)", ErrInput, nic, joinRails(slices.Sorted(maps.Keys(order))))
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return out, nil
}

// RailToNIC turns NICOrder's answer around: Railyard rail -> NIC rail.
func RailToNIC(order map[int64]int64) map[int64]int64 {
	out := make(map[int64]int64, len(order))
	for nic, r := range order {
		out[r] = nic
	}
	return out
}

// InNICOrder writes s's rails in NIC order ("0,1"), by toNIC (Railyard
// rail -> NIC rail, RailToNIC of NICOrder), in the order of s.
func (s Set) InNICOrder(toNIC map[int64]int64) (string, error) {
	out := make([]int64, len(s))
	for i, r := range s {
		nic, ok := toNIC[r.Rail]
		if !ok {
			return "", fmt.Errorf("%w: rail %d has no NIC rail", ErrInput, r.Rail)
		}
		out[i] = nic
	}
	return joinRails(out), nil
}

func joinRails(rs []int64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strconv.FormatInt(r, 10)
	}
	return strings.Join(parts, ",")
}
