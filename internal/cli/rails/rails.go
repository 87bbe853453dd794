package rails

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/kubeclient"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/jobrails"
)

// maxFile bounds a --from file (a cluster's slices and claims).
const maxFile = 256 << 20

// requestTimeout bounds each API request.
const requestTimeout = 30 * time.Second

type flags struct {
	namespace, kubeconfig, from, rails string
	pods, gpus                         int
	gpuDriver, gpuClass                string
}

// NewCommand returns `railyard rails`.
func NewCommand(s iostreams.Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rails",
		Short: "Give every pod of a job the same rails (DRA claim templates)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newTemplateCommand(s, kubeclient.New))
	return cmd
}

type connectFunc func(kubeconfig string, timeout time.Duration) (kubernetes.Interface, error)

func newTemplateCommand(s iostreams.Streams, connect connectFunc) *cobra.Command {
	f := flags{namespace: "default", gpuDriver: jobrails.DefaultGPUClass, gpuClass: jobrails.DefaultGPUClass}
	cmd := &cobra.Command{
		Use:   "template NAME --pods N --gpus G [--rails 4,6] [--from FILE]",
		Short: "Print a ResourceClaimTemplate that puts every pod of a job on one rail set",
		Long: `template chooses one rail set for a job of N pods of G GPUs each and prints
the ResourceClaimTemplate its pods use (resourceClaims[].resourceClaimTemplateName):
each GPU request takes a GPU of its rail, each NIC request Railyard's device of
that rail (railyard.io/rail), both on one PCIe root. Every pod then gets the
same rails, so its peers on other nodes reach it through the same leaves.

The rail set is, of the sets of whole rails giving a pod exactly G GPUs, the one
with room for a pod on the most nodes (free GPUs and NIC devices), read from
the cluster's ResourceSlices and ResourceClaims (or --from a saved
'kubectl get resourceslices,resourceclaims -A -o json'). --rails picks the
set yourself. The choice goes to stderr, the template to stdout.

Needs resource.k8s.io/v1 (Kubernetes 1.34+), Railyard's DRA pool on the
nodes, and a GPU DRA driver publishing resource.kubernetes.io/pciBusID and
pcieRoot (NVIDIA's, gpu.nvidia.com). docs/alloc.md explains the mechanism.`,
		Example: `  railyard rails template llama-70b --pods 16 --gpus 4 | kubectl apply -f -
  railyard rails template job-a --pods 2 --gpus 4 --rails 4,6 -n training
  kubectl get resourceslices,resourceclaims -A -o json > cluster.json
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
	fl.StringVar(&f.rails, "rails", "", "the rail set, comma-separated (default: the set with room on the most nodes)")
	fl.StringVar(&f.from, "from", "", "read slices and claims from this file (a JSON or YAML List) instead of the cluster")
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
	var rs []*resourceapi.ResourceSlice
	var claims []*resourceapi.ResourceClaim
	if f.from != "" {
		rs, claims, err = readFile(f.from)
	} else {
		rs, claims, err = listCluster(ctx, connect, f.kubeconfig)
	}
	if err != nil {
		return err
	}
	nodes := jobrails.Inventory(rs, f.gpuDriver, allocated(claims))
	gpus := 0
	for _, n := range nodes {
		for _, r := range n.Rails {
			gpus += r.GPUs
		}
	}
	if gpus == 0 {
		return fmt.Errorf("no node publishes both Railyard's NIC devices with rails and GPUs of driver %s (--gpu-driver): is a Railyard pool on delivery: dra, and the GPU driver's ResourceSlices there?", f.gpuDriver)
	}
	var choice jobrails.Choice
	if want == nil {
		choice, err = jobrails.Choose(nodes, f.pods, f.gpus)
	} else {
		choice, err = jobrails.ChooseSet(nodes, f.pods, f.gpus, want)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(s.ErrOut, "rails %s: room for a pod on %d of %d nodes (%s)\n", choice.Set, len(choice.Nodes), len(nodes), strings.Join(choice.Nodes, ", "))
	tmpl, err := jobrails.ClaimTemplate(name, f.namespace, choice.Set, jobrails.Options{GPUClass: f.gpuClass})
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

func parseRails(s string) ([]int64, error) {
	if s == "" {
		return nil, nil
	}
	var out []int64
	for _, p := range strings.Split(s, ",") {
		r, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || r < 0 {
			return nil, fmt.Errorf("--rails %q: want rail numbers like 4,6", s)
		}
		out = append(out, r)
	}
	slices.Sort(out)
	if len(slices.Compact(slices.Clone(out))) != len(out) {
		return nil, fmt.Errorf("--rails %q names a rail twice", s)
	}
	return out, nil
}

// allocated is every device a claim's allocation holds.
func allocated(claims []*resourceapi.ResourceClaim) map[jobrails.Device]bool {
	out := map[jobrails.Device]bool{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			out[jobrails.Device{Driver: r.Driver, Pool: r.Pool, Name: r.Device}] = true
		}
	}
	return out
}

// readFile reads a List (JSON or YAML) of ResourceSlices and
// ResourceClaims; other kinds are ignored.
func readFile(path string) ([]*resourceapi.ResourceSlice, []*resourceapi.ResourceClaim, error) {
	b, err := inputfile.Read(path, maxFile)
	if err != nil {
		return nil, nil, err
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(b, &list); err != nil {
		return nil, nil, fmt.Errorf("%s: want a List of ResourceSlices and ResourceClaims: %w", path, err)
	}
	var rs []*resourceapi.ResourceSlice
	var claims []*resourceapi.ResourceClaim
	for i, item := range list.Items {
		var meta metav1.TypeMeta
		if err := json.Unmarshal(item, &meta); err != nil {
			return nil, nil, fmt.Errorf("%s: item %d: %w", path, i, err)
		}
		switch meta.Kind {
		case "ResourceSlice":
			var s resourceapi.ResourceSlice
			if err := json.Unmarshal(item, &s); err != nil {
				return nil, nil, fmt.Errorf("%s: item %d: %w", path, i, err)
			}
			rs = append(rs, &s)
		case "ResourceClaim":
			var c resourceapi.ResourceClaim
			if err := json.Unmarshal(item, &c); err != nil {
				return nil, nil, fmt.Errorf("%s: item %d: %w", path, i, err)
			}
			claims = append(claims, &c)
		}
	}
	return rs, claims, nil
}

func listCluster(ctx context.Context, connect connectFunc, kubeconfig string) ([]*resourceapi.ResourceSlice, []*resourceapi.ResourceClaim, error) {
	cs, err := connect(kubeconfig, requestTimeout)
	if err != nil {
		return nil, nil, err
	}
	sl, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing ResourceSlices (resource.k8s.io/v1, Kubernetes 1.34+): %w", err)
	}
	cl, err := cs.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	rs := make([]*resourceapi.ResourceSlice, len(sl.Items))
	for i := range sl.Items {
		rs[i] = &sl.Items[i]
	}
	claims := make([]*resourceapi.ResourceClaim, len(cl.Items))
	for i := range cl.Items {
		claims[i] = &cl.Items[i]
	}
	return rs, claims, nil
}
