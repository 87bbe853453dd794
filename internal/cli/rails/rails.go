package rails

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/kubeclient"
	"github.com/railyard-io/railyard/internal/jobrails"
)

// maxFile bounds a --from file (a cluster's slices and claims, or nodes).
const maxFile = 256 << 20

// requestTimeout bounds each API request.
const requestTimeout = 30 * time.Second

type flags struct {
	namespace, kubeconfig, from, rails string
	pods, gpus                         int
	gpuDriver, gpuClass                string
	tolerations                        []string
}

// NewCommand returns `railyard rails`.
func NewCommand(s iostreams.Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rails",
		Short: "Give every pod of a job the same rails (DRA claim templates) and hand the fabric to schedulers",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newTemplateCommand(s, kubeclient.New), newSchedulerCommand(s, kubeclient.New), newControllerCommand(s, kubeclient.New))
	return cmd
}

type connectFunc func(kubeconfig string, timeout time.Duration) (kubernetes.Interface, error)

func newTemplateCommand(s iostreams.Streams, connect connectFunc) *cobra.Command {
	f := flags{namespace: "default", gpuDriver: jobrails.DefaultGPUClass, gpuClass: jobrails.DefaultGPUClass}
	cmd := &cobra.Command{
		Use:   "template NAME --pods N --gpus G [--rails 4,6 | --rails nic:2,3] [--toleration KEY[=VALUE][:EFFECT]] [--from FILE]",
		Short: "Print a ResourceClaimTemplate that puts every pod of a job on one rail set",
		Long: `template chooses one rail set for a job of N pods of G GPUs each and prints
the ResourceClaimTemplate its pods use (resourceClaims[].resourceClaimTemplateName):
each GPU request takes a GPU of its rail, each NIC request Railyard's device of
that rail (railyard.io/rail), both on one PCIe root. Every pod then gets the
same rails, so its peers on other nodes reach it through the same leaves.

The rail set is, of the sets of whole rails giving a pod exactly G GPUs, the one
with room for a pod on the most nodes, read from the cluster's ResourceSlices,
ResourceClaims and DeviceTaintRules (or --from a saved
'kubectl get resourceslices,resourceclaims,devicetaintrules -A -o json'). Room
is what kube-scheduler's DRA allocator finds: the newest generation of each
pool only, nothing from a pool whose slices are not all published yet,
nothing a claim holds (a shared NIC: its shares left), nothing with a
NoSchedule or NoExecute device taint the template does not tolerate
(--toleration; Railyard taints NICs it judges unhealthy with
rdma.railyard.io/unhealthy), and for every GPU a NIC of its rail on its PCIe
root. --rails picks the set yourself, in Railyard's numbering (a rail is the
first GPU its NIC serves: an 8-GPU/4-NIC node has rails 0,2,4,6) or, with
"nic:", in NIC order as NVIDIA's operators number rails (railPciAddresses,
eth_r<i>: the 8-GPU/4-NIC node's NICs are nic:0-3). The choice, and why nodes
have no room, go to stderr; the template to stdout.

Needs resource.k8s.io/v1 (Kubernetes 1.34+), Railyard's DRA pool on the
nodes, and a GPU DRA driver publishing resource.kubernetes.io/pciBusID and
pcieRoot (NVIDIA's, gpu.nvidia.com). docs/alloc.md explains the mechanism.`,
		Example: `  railyard rails template llama-70b --pods 16 --gpus 4 | kubectl apply -f -
  railyard rails template job-a --pods 2 --gpus 4 --rails 4,6 -n training
  railyard rails template job-a --pods 2 --gpus 4 --rails nic:2,3      # the same rails on an 8-GPU/4-NIC node
  railyard rails template job-a --pods 2 --gpus 4 --toleration rdma.railyard.io/unhealthy:NoSchedule
  kubectl get resourceslices,resourceclaims,devicetaintrules -A -o json > cluster.json
  railyard rails template job-a --pods 2 --gpus 4 --from cluster.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTemplate(cmd.Context(), s, connect, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.pods, "pods", 0, "pods of the job (required)")
	fl.IntVar(&f.gpus, "gpus", 0, "GPUs per pod (required)")
	fl.StringVarP(&f.namespace, "namespace", "n", f.namespace, "namespace of the template (the job's)")
	fl.StringVar(&f.rails, "rails", "", "the rail set, comma-separated; nic:... in NIC order (default: the set with room on the most nodes)")
	fl.StringArrayVar(&f.tolerations, "toleration", nil, "a device taint the job tolerates, KEY[=VALUE][:EFFECT] (repeatable; on every request of the template)")
	fl.StringVar(&f.from, "from", "", "read slices, claims and DeviceTaintRules from this file (a JSON or YAML List) instead of the cluster")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&f.gpuDriver, "gpu-driver", f.gpuDriver, "DRA driver name of the GPUs' ResourceSlices")
	fl.StringVar(&f.gpuClass, "gpu-class", f.gpuClass, "DeviceClass the GPU requests name")
	return cmd
}

func runTemplate(ctx context.Context, s iostreams.Streams, connect connectFunc, name string, f flags) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("template name %q: %s", name, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(f.namespace); len(errs) > 0 {
		return fmt.Errorf("--namespace %q: %s", f.namespace, strings.Join(errs, "; "))
	}
	if f.pods < 1 || f.gpus < 1 {
		return errors.New("--pods and --gpus are required, each at least 1")
	}
	want, err := parseRails(f.rails)
	if err != nil {
		return err
	}
	tols, err := parseTolerations(f.tolerations)
	if err != nil {
		return err
	}
	var c jobrails.Cluster
	var warnings []string
	if f.from != "" {
		c, err = readFile(f.from)
	} else {
		c, warnings, err = listCluster(ctx, connect, f.kubeconfig)
	}
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(s.ErrOut, "warning:", w)
	}
	nodes := jobrails.Inventory(c, jobrails.InventoryOptions{GPUDriver: f.gpuDriver, Tolerations: tols})
	gpus := 0
	for _, n := range nodes {
		for _, r := range n.Rails {
			gpus += r.GPUs
		}
	}
	if gpus == 0 {
		return fmt.Errorf("no node publishes both Railyard's NIC devices with rails and GPUs of driver %s (--gpu-driver): is a Railyard pool on delivery: dra, and the GPU driver's ResourceSlices there?", f.gpuDriver)
	}
	order, orderErr := jobrails.NICOrder(nodes) // nil on a cluster of mixed models
	if want.nicOrder {
		if orderErr != nil {
			return fmt.Errorf("--rails %s: %w", f.rails, orderErr)
		}
		if want.rails, err = jobrails.FromNICOrder(order, want.rails); err != nil {
			return fmt.Errorf("--rails %s: %w", f.rails, err)
		}
	}
	var choice jobrails.Choice
	if want.rails == nil {
		choice, err = jobrails.Choose(nodes, f.pods, f.gpus)
	} else {
		choice, err = jobrails.ChooseSet(nodes, f.pods, f.gpus, want.rails)
	}
	var toNIC map[int64]int64
	if orderErr == nil {
		toNIC = jobrails.RailToNIC(order)
	}
	explain(s, nodes, choice, toNIC)
	if err != nil {
		return err
	}
	tmpl, err := jobrails.ClaimTemplate(name, f.namespace, choice.Set, jobrails.Options{GPUClass: f.gpuClass, Tolerations: tols, NICRails: toNIC})
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(tmpl)
	if err != nil {
		return fmt.Errorf("writing the template: %w", err)
	}
	_, err = s.Out.Write(b)
	return err
}
