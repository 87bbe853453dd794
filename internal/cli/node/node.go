package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/nodesetup"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// NewCommand returns the `railyard node` command.
func NewCommand(s iostreams.Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Set up this node's SR-IOV VFs from a node policy",
	}
	cmd.AddCommand(newApplyCommand(s, nil))
	return cmd
}

// MinInterval is the shortest --interval of --watch: every tick reads and
// hashes the policy file, and a node's SR-IOV setup changes far more
// rarely than that.
const MinInterval = time.Second

// applierFunc builds the Applier for a policy (tests pass fakes).
type applierFunc func(p *v1alpha1.NodePolicy) (*nodesetup.Applier, func(), error)

// realApplier writes sysfs and netlink, and asks every usage source the
// policy enables.
func realApplier(p *v1alpha1.NodePolicy) (*nodesetup.Applier, func(), error) {
	fs := sysfs.New(p.SysfsRoot)
	a := &nodesetup.Applier{FS: fs, SRIOV: netops.SRIOVSysfs{Root: p.SysfsRoot}, VF: netops.Linux{},
		DCB: netops.Linux{}, ECN: netops.ECNSysfs{Root: p.SysfsRoot},
		Usage: []nodesetup.UsageSource{nodesetup.SysfsUsage{FS: fs}}}
	if p.CNIStateDir != "" {
		a.Usage = append(a.Usage, nodesetup.CNIStateUsage{Dir: p.CNIStateDir})
	}
	done := func() {}
	if p.PodResourcesSocket != "" {
		lister := podlist.New(p.PodResourcesSocket)
		a.Usage = append(a.Usage, nodesetup.PodResourcesUsage{Lister: lister, Socket: p.PodResourcesSocket})
		done = lister.Close
	}
	return a, done, nil
}

func newApplyCommand(s iostreams.Streams, build applierFunc) *cobra.Command {
	if build == nil {
		build = realApplier
	}
	var path string
	var watch bool
	var interval time.Duration
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "apply --policy FILE [--watch]",
		Short: "Make the node's VFs match a node policy; print what changed",
		Long: `apply reads a node policy (apiVersion railyard.io/v1alpha1, kind NodePolicy) and
makes every PF it names match it: the number of VFs (changed through 0, as the
kernel requires), the VFs' driver (the PF's kernel driver or vfio-pci), and
deterministic InfiniBand GUIDs or RoCE MACs derived from the PF's node GUID,
and, for a RoCE PF with a qos, PFC, trust and ECN (DCB netlink, ecn/ files).
PFs the policy does not name are never touched. A change that would destroy
VFs in use by pods is refused, naming them. Running it again changes nothing;
after a failure it completes what was left half-done.

With --watch it keeps running (as a DaemonSet container does), re-reading the
policy every --interval and applying it again when its content changed. The
RDMA netns mode is reported: exclusive mode must be set before any namespace
uses RDMA (see docs/nodesetup.md).`,
		Example: `  # Apply once; print one "changed:" line per change
  railyard node apply --policy /etc/railyard/node-policy.yaml

  # The same as JSON (changes[].pf/vf/pci/what/from/to, notes, partitions)
  railyard node apply --policy /etc/railyard/node-policy.yaml --json

  # Keep running (a DaemonSet container): apply again when the file changes
  railyard node apply --policy /etc/railyard/node-policy.yaml --watch --interval 1m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return fmt.Errorf("--policy is required")
			}
			if interval < MinInterval {
				return fmt.Errorf("--interval %s is below the minimum of %s", interval, MinInterval)
			}
			if !watch {
				_, err := applyOnce(cmd.Context(), s.Out, path, build, jsonOut)
				return err
			}
			return watchLoop(cmd.Context(), s, path, interval, build, jsonOut)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&path, "policy", "", "node policy file")
	fl.BoolVar(&watch, "watch", false, "keep running and apply again when the policy file changes")
	fl.DurationVar(&interval, "interval", 30*time.Second, "with --watch: how often the policy file is read (at least "+MinInterval.String()+")")
	fl.BoolVar(&jsonOut, "json", false, "print the result as JSON")
	return cmd
}

// applyOnce loads and applies the policy; it returns the file's digest.
func applyOnce(ctx context.Context, out io.Writer, path string, build applierFunc, jsonOut bool) ([32]byte, error) {
	data, err := v1alpha1.ReadFile(path)
	if err != nil {
		return [32]byte{}, err
	}
	sum := sha256.Sum256(data)
	p, err := v1alpha1.Parse(data)
	if err != nil {
		return sum, fmt.Errorf("%s: %w", path, err)
	}
	a, done, err := build(p)
	if err != nil {
		return sum, err
	}
	defer done()
	res, applyErr := a.Apply(ctx, p)
	if werr := writeResult(out, res, jsonOut); werr != nil {
		return sum, werr
	}
	return sum, applyErr
}

func writeResult(w io.Writer, res nodesetup.Result, jsonOut bool) error {
	if jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	var b bytes.Buffer
	if len(res.Changes) == 0 {
		b.WriteString("no changes\n")
	}
	for _, c := range res.Changes {
		fmt.Fprintf(&b, "changed: %s\n", c)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, l := range res.Partitions {
		fmt.Fprintf(&b, "subnet manager (OpenSM partitions.conf): %s\n", l)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// watchLoop applies at start, then again whenever the file's content
// changes (a ConfigMap update swaps its symlink, so the content is what is
// compared). A failed apply is retried at the next tick. The caller checks
// interval against MinInterval.
func watchLoop(ctx context.Context, s iostreams.Streams, path string, interval time.Duration, build applierFunc, jsonOut bool) error {
	if interval <= 0 {
		return fmt.Errorf("--interval must be positive")
	}
	var last [32]byte
	ok := false
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		data, err := v1alpha1.ReadFile(path)
		if err != nil {
			fmt.Fprintf(s.ErrOut, "railyard node: %v\n", err)
		} else if sum := sha256.Sum256(data); !ok || sum != last {
			fmt.Fprintf(s.Out, "%s applying %s\n", time.Now().UTC().Format(time.RFC3339), path)
			sum, err := applyOnce(ctx, s.Out, path, build, jsonOut)
			if err != nil {
				fmt.Fprintf(s.ErrOut, "railyard node: %v\n", err)
			}
			last, ok = sum, err == nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
