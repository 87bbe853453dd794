package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/doctor"
	"github.com/railyard-io/railyard/internal/firmware"
	"github.com/railyard-io/railyard/internal/netops"
)

// NewCommand returns the `railyard doctor` command.
func NewCommand(s iostreams.Streams) *cobra.Command {
	var opt doctor.Options
	var jsonOut bool
	var policy, hostRoot string
	var fwMinimum []string
	var fwRefuse []string
	cmd := &cobra.Command{
		Use:   "doctor [--policy FILE] [--json] [--counter-window DURATION] [--profile NAME]",
		Short: "Tell whether this node is ready for GPU RDMA, and how to fix it",
		Long: `doctor checks the node, one report line per check and subject (the
check's id first); each line says what it read and how to fix what it found.
The checks:

` + checkList() + `
rdma-errors: a counter that went down in the window (a wrap or a reset) is no
rise.

--counter-window is how long doctor watches the counters (default 2s, at
most 1m); 0 reads them once, which tells their history but no rise.

--profile names the fabric, as bench report does (infiniband,
roce-lossless, roce-lossy, cloud, virtual; default roce-lossless for RoCE):
a lossless fabric wants PFC on RoCE's priority, a lossy one (roce-lossy,
cloud, virtual) expects no PFC and wants ECN on instead.

It runs unprivileged; the ACS check needs root (the kernel gives other users
only the first 64 bytes of PCI config space) and says so when skipped.

--firmware-minimum and --refuse-known-issue are the agent's firmware policy
(its config's firmware section, the chart's config.firmware): a NIC whose
firmware is older than its model's minimum, or has a known issue refused,
fails the firmware check, as the agent marks it unhealthy (the DRA driver
taints it NoSchedule). Known issues: docs/doctor.md#known-firmware-issues.

Exit status: 0 ready, 1 warnings, 2 failures. In a pod, mount the host's
/sys and / (read-only) and pass --sysfs /host/sys --host-root /host.`,
		Example: `  railyard doctor
  railyard doctor --policy node-policy.yaml --json
  # watch the NICs' error counters for 30 seconds instead of 2
  railyard doctor --counter-window 30s
  # a RoCE fabric lossy by design (ECN, no PFC)
  railyard doctor --profile roce-lossy
  # refuse ConnectX-7 firmware older than 28.39.1002, and releases with
  # NVIDIA known issue 3363753 (the link down with an MMS1V00-WM module)
  railyard doctor --firmware-minimum 15b3:1021=28.39.1002 --refuse-known-issue 3363753
  # in a pod, with the host's /sys and / mounted read-only
  railyard doctor --sysfs /host/sys --host-root /host`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := doctor.ValidateCounterWindow(opt.CounterWindow); err != nil {
				return fmt.Errorf("--counter-window: %w", err)
			}
			if opt.Profile != "" {
				if _, err := bench.ProfileNamed(opt.Profile); err != nil {
					return fmt.Errorf("--profile: %w", err)
				}
			}
			minimum, err := minimums(fwMinimum)
			if err != nil {
				return fmt.Errorf("--firmware-minimum: %w", err)
			}
			fw, err := firmware.NewPolicy(minimum, fwRefuse)
			if err != nil {
				return fmt.Errorf("--firmware-minimum, --refuse-known-issue: %w", err)
			}
			opt.Firmware = fw
			if policy != "" {
				p, err := v1alpha1.Load(policy)
				if err != nil {
					return err
				}
				opt.Policy = p
			}
			opt.Host = doctor.HostFiles{Root: hostRoot}
			opt.RDMA = netops.Linux{}
			opt.DCB = netops.Linux{}
			opt.Root = os.Geteuid() == 0
			return run(cmd.Context(), s, opt, jsonOut)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opt.SysfsRoot, "sysfs", "", "sysfs root (default /sys)")
	fl.StringVar(&hostRoot, "host-root", "/", "where the host's / is (for /proc, /etc, /lib)")
	fl.StringVar(&policy, "policy", "", "node policy (railyard.io/v1alpha1 NodePolicy) to check VF counts and link layers against")
	fl.BoolVar(&jsonOut, "json", false, "print JSON")
	fl.StringArrayVar(&fwMinimum, "firmware-minimum", nil, "MODEL=RELEASE: the oldest firmware accepted for a NIC model, vendor:device as lspci -n prints it (15b3:1021=28.39.1002); repeatable")
	fl.StringSliceVar(&fwRefuse, "refuse-known-issue", nil, "NVIDIA's reference of a known firmware issue whose releases are refused (3363753); repeatable")
	fl.DurationVar(&opt.CounterWindow, "counter-window", doctor.DefaultCounterWindow,
		"how long to watch the RDMA error counters between two readings (0: read once; at most 1m)")
	fl.StringVar(&opt.Profile, "profile", "", "the fabric's profile: "+strings.Join(bench.ProfileNames(), ", ")+" (default roce-lossless for RoCE)")
	return cmd
}

// checkList is the help's list of checks, from doctor's table: each
// check's ids, then its line, wrapped.
func checkList() string {
	var b strings.Builder
	for _, c := range doctor.Checks() {
		b.WriteString("  " + strings.Join(c.IDs, ", ") + "\n")
		line := ""
		for _, w := range strings.Fields(c.Line) {
			if line != "" && len(line)+1+len(w) > 72 {
				b.WriteString("      " + line + "\n")
				line = ""
			}
			line = strings.TrimPrefix(line+" "+w, " ")
		}
		b.WriteString("      " + line + "\n")
	}
	return b.String()
}

// minimums reads --firmware-minimum's values, MODEL=RELEASE each (or
// several, comma-separated), into the policy's map. A model given twice
// is an error whatever the case of its hexadecimal digits (15b3:1021 and
// 15B3:1021 are one model): a flag given twice never keeps one of its
// values silently. A model that does not parse is left to
// firmware.NewPolicy, which names it.
func minimums(values []string) (map[string]string, error) {
	out := map[string]string{}
	seen := map[firmware.Model]string{} // as first written
	var errs []error
	for _, v := range values {
		for _, pair := range strings.Split(v, ",") {
			k, release, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				errs = append(errs, fmt.Errorf("%q: want MODEL=RELEASE (15b3:1021=28.39.1002)", pair))
				continue
			}
			if m, err := firmware.ParseModel(k); err == nil {
				if first, dup := seen[m]; dup {
					errs = append(errs, fmt.Errorf("model %s is given twice (%s and %s)", m, first, k))
					continue
				}
				seen[m] = k
			} else if _, dup := out[k]; dup {
				errs = append(errs, fmt.Errorf("model %s is given twice", k))
				continue
			}
			out[k] = release
		}
	}
	return out, errors.Join(errs...)
}

func run(ctx context.Context, s iostreams.Streams, opt doctor.Options, jsonOut bool) error {
	r, err := doctor.Run(ctx, opt)
	if err != nil {
		return err
	}
	if jsonOut {
		err = r.WriteJSON(s.Out)
	} else {
		err = r.WriteTable(s.Out)
	}
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if code := r.ExitCode(); code != doctor.ExitOK {
		why := errors.New("the node is not ready for GPU RDMA")
		if code == doctor.ExitWarnings {
			why = errors.New("the node has warnings")
		}
		return &iostreams.ExitError{Code: code, Err: why}
	}
	return nil
}
