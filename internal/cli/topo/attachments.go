package topo

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// maxSandboxID is how much of a sandbox (container) ID is printed, as
// crictl pods prints them.
const maxSandboxID = 13

// writeAttachments prints railyard-cni's attachments of a state
// directory, by pod sandbox: each interface's device, RDMA device, RoCE
// v2 GID index (and the address it is of) and multi-rail routing table,
// then, per sandbox whose HCAs have GIDs, whether they agree on one index
// (NCCL_IB_GID_INDEX is one index for every HCA) or, where not, the fix.
// Records that do not decode are named, the others still printed.
func writeAttachments(w io.Writer, dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("railyard-cni state: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("railyard-cni state %s: not a directory (%s)", dir, inputfile.TypeName(st.Mode()))
	}
	recs, corrupt, err := state.Store{Dir: dir}.ListAll()
	if err != nil {
		return fmt.Errorf("railyard-cni state %s: %w", dir, err)
	}
	slices.SortStableFunc(recs, func(a, b *state.Record) int {
		return cmp.Or(cmp.Compare(a.ContainerID, b.ContainerID), cmp.Compare(a.IfName, b.IfName))
	})
	fmt.Fprintf(w, "\nrailyard-cni attachments (%s): %d\n", termsafe.Escape(dir), len(recs))
	if len(recs) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SANDBOX\tIFNAME\tNETWORK\tDEVICE\tRDMA\tGID INDEX\tGID OF\tRAIL TABLE\tPHASE")
		for _, r := range recs {
			gid, of := "-", "-"
			if r.GID != nil {
				gid, of = strconv.Itoa(r.GID.Index), r.GID.Addr
			}
			table := "-"
			if r.RailTable != 0 {
				table = strconv.Itoa(r.RailTable)
			}
			rdma := r.RDMA
			if rdma == "" && r.GID != nil {
				rdma = r.GID.HCA
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.Escape(short(r.ContainerID)), termsafe.Escape(r.IfName),
				termsafe.Escape(dash(r.Network)), termsafe.Escape(dash(r.PCI)), termsafe.Escape(dash(rdma)), gid, termsafe.Escape(of), table,
				termsafe.Escape(dash(r.Phase)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, line := range gidChecks(recs) {
			fmt.Fprintln(w, termsafe.Escape(line))
		}
	}
	if len(corrupt) > 0 {
		errs := make([]error, len(corrupt))
		for i, k := range corrupt {
			errs[i] = fmt.Errorf("record of %s: %w", k, state.ErrCorrupt)
		}
		return fmt.Errorf("railyard-cni state %s: %w", dir, errors.Join(errs...))
	}
	return nil
}

// gidChecks says, per sandbox with RoCE GIDs, the one index its HCAs
// share or why NCCL_IB_GID_INDEX would be wrong for some, with the fix.
func gidChecks(recs []*state.Record) []string {
	by := map[string][]containerdev.HCAGID{}
	var order []string
	for _, r := range recs {
		if r.GID == nil {
			continue
		}
		if _, ok := by[r.ContainerID]; !ok {
			order = append(order, r.ContainerID)
		}
		by[r.ContainerID] = append(by[r.ContainerID], *r.GID)
	}
	var out []string
	for _, id := range order {
		gids := by[id]
		idx, err := containerdev.CheckGIDIndexes(gids)
		if err != nil {
			out = append(out, fmt.Sprintf("sandbox %s: %v", short(id), err))
			continue
		}
		out = append(out, fmt.Sprintf("sandbox %s: RoCE v2 GID index %d on every HCA (%s)", short(id), idx, containerdev.GIDIndexes(gids)))
	}
	return out
}

func short(id string) string {
	if len(id) > maxSandboxID {
		return id[:maxSandboxID]
	}
	return cmp.Or(id, "-")
}
