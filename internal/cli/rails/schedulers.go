package rails

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/schedtopo"
)

func newKueueCommand(s iostreams.Streams, connect connectFunc) *cobra.Command {
	var f schedFlags
	name, flavor := "rail-fabric", "rail-fabric"
	var nodeLabels []string
	cmd := &cobra.Command{
		Use:   "kueue [--name NAME] [--flavor NAME] [--node-label KEY=VALUE]",
		Short: "Print Kueue's Topology and a ResourceFlavor for it (kueue.x-k8s.io/v1beta2)",
		Long: `kueue prints a Kueue Topology (` + schedtopo.KueueAPIVersion + `; Kueue v0.15 and later
serve it) whose levels are the unit, the leaf set and kubernetes.io/hostname,
and a ResourceFlavor that names it (spec.topologyName) for the nodes with
--node-label (Kueue needs at least one node label on a flavor with a
topology). Give the flavor quota in a ClusterQueue. A job then asks for one
leaf set with the pod template annotation
  kueue.x-k8s.io/podset-required-topology: <leaf-set key>
(or one unit with the unit's key; podset-preferred-topology to prefer it).`,
		Example: `  railyard rails scheduler kueue | kubectl apply -f -
  railyard rails scheduler kueue --node-label node.kubernetes.io/instance-type=gpu-h100 -l nvidia.com/gpu.present=true
  railyard rails scheduler kueue --labels topograph --from nodes.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := objectName("--name", name); err != nil {
				return err
			}
			if err := objectName("--flavor", flavor); err != nil {
				return err
			}
			sel, err := parseLabels("--node-label", nodeLabels)
			if err != nil {
				return err
			}
			d, err := f.domains(cmd.Context(), s, connect)
			if err != nil {
				return err
			}
			objs, err := schedtopo.Kueue(name, flavor, d.Keys, sel)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.ErrOut, "a job asks for one leaf set with the pod template annotation kueue.x-k8s.io/podset-required-topology: %s\n", d.Keys.LeafSet)
			return write(s, objs[0], objs[1])
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&name, "name", name, "the Topology's name")
	cmd.Flags().StringVar(&flavor, "flavor", flavor, "the ResourceFlavor's name")
	cmd.Flags().StringArrayVar(&nodeLabels, "node-label", []string{"nvidia.com/gpu.present=true"}, "a label of the flavor's nodes, KEY=VALUE (repeatable)")
	return cmd
}

func newKAICommand(s iostreams.Streams, connect connectFunc) *cobra.Command {
	var f schedFlags
	name := "rail-fabric"
	cmd := &cobra.Command{
		Use:   "kai [--name NAME]",
		Short: "Print KAI Scheduler's Topology (kai.scheduler/v1alpha1)",
		Long: `kai prints a KAI Scheduler Topology (` + schedtopo.KAIAPIVersion + `; newer KAI releases
also serve kai.scheduler/v1 with the same spec) whose levels are the unit, the
leaf set and kubernetes.io/hostname. A workload asks for it with the annotations
  kai.scheduler/topology: <name>
  kai.scheduler/topology-required-placement: <unit key>
  kai.scheduler/topology-preferred-placement: <leaf-set key>
(all its pods in one unit, as many as fit in one leaf set).`,
		Example: `  railyard rails scheduler kai | kubectl apply -f -
  railyard rails scheduler kai --name gpu-fabric -l nvidia.com/gpu.present=true`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := objectName("--name", name); err != nil {
				return err
			}
			d, err := f.domains(cmd.Context(), s, connect)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.ErrOut, "a workload asks for it with kai.scheduler/topology: %s, kai.scheduler/topology-required-placement: %s, kai.scheduler/topology-preferred-placement: %s\n",
				name, d.Keys.Unit, d.Keys.LeafSet)
			return write(s, schedtopo.KAI(name, d.Keys))
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&name, "name", name, "the Topology's name")
	return cmd
}

func newVolcanoCommand(s iostreams.Streams, connect connectFunc) *cobra.Command {
	var f schedFlags
	namespace, topologyType, prefix := "volcano-system", "railyard-rail-fabric", "railyard-"
	var hyperNodes bool
	cmd := &cobra.Command{
		Use:   "volcano [--namespace NS] [--hypernodes [--prefix P]]",
		Short: "Print Volcano's HyperNode discovery from the labels, or the HyperNodes (topology.volcano.sh/v1alpha1)",
		Long: `volcano prints Volcano's controller ConfigMap (volcano-controller-configmap,
key volcano-controller.conf) with HyperNode discovery from node labels
(networkTopologyDiscovery, source: label; Volcano's label discoverer, v1.13 and
later): one network topology type whose tiers are the unit and the leaf set over
kubernetes.io/hostname, so the controller keeps HyperNodes in step with the
labels. The ConfigMap holds only that: where volcano-controller.conf has other
settings, merge the networkTopologyDiscovery entry in rather than replace it.

--hypernodes prints the HyperNodes themselves (` + schedtopo.VolcanoTopologyAPIVersion + `) from the
labels' values now: a tier-1 HyperNode per leaf set (its nodes selected by the
leaf-set label, labelMatch: Volcano v1.12 and later) and a tier-2 HyperNode per
unit over its leaf sets. It refuses labels that do not nest (a leaf set in two
units). Use one or the other, not both. A Volcano Job asks for one leaf set
with spec.networkTopology {mode: hard, highestTierAllowed: 1} (2: one unit).`,
		Example: `  railyard rails scheduler volcano | kubectl apply -f -
  railyard rails scheduler volcano --hypernodes -l nvidia.com/gpu.present=true | kubectl apply -f -
  railyard rails scheduler volcano --hypernodes --from nodes.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
				return fmt.Errorf("--namespace %q: %s", namespace, strings.Join(errs, "; "))
			}
			if err := objectName("--prefix", prefix+"x"); err != nil {
				return err
			}
			if errs := validation.IsDNS1123Label(topologyType); len(errs) > 0 {
				return fmt.Errorf("--type %q: %s", topologyType, strings.Join(errs, "; "))
			}
			d, err := f.domains(cmd.Context(), s, connect)
			if err != nil {
				return err
			}
			if hyperNodes {
				objs, err := schedtopo.HyperNodes(d, prefix)
				if err != nil {
					return err
				}
				out := make([]any, len(objs))
				for i := range objs {
					out[i] = objs[i]
				}
				fmt.Fprintf(s.ErrOut, "%d HyperNodes\n", len(objs))
				return write(s, out...)
			}
			cm, err := schedtopo.VolcanoDiscovery(namespace, topologyType, d.Keys)
			if err != nil {
				return err
			}
			return write(s, cm)
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&namespace, "namespace", "n", namespace, "Volcano's namespace (the ConfigMap's)")
	fl.StringVar(&topologyType, "type", topologyType, "the network topology type's name in the discovery configuration")
	fl.BoolVar(&hyperNodes, "hypernodes", false, "print HyperNodes built from the labels' values instead of the discovery configuration")
	fl.StringVar(&prefix, "prefix", prefix, "HyperNode name prefix (then ls-<leaf set> or unit-<unit>)")
	return cmd
}

func newPodGroupCommand(s iostreams.Streams, connect connectFunc) *cobra.Command {
	var f schedFlags
	namespace, level, template := "default", "auto", "workers"
	var pods int
	var workload bool
	cmd := &cobra.Command{
		Use:   "podgroup NAME --pods N [--level auto|leaf-set|unit] [--workload [--template T]]",
		Short: "Print kube-scheduler's PodGroup with a topology constraint (scheduling.k8s.io/v1beta1, Kubernetes 1.37)",
		Long: `podgroup prints a PodGroup (scheduling.k8s.io/v1beta1: Kubernetes 1.37's group
scheduling, KEP-5732 topology-aware workload scheduling) for a job of N pods:
gang scheduled (all N or none, minCount N) and every pod on nodes with one value
of a level's key (spec.schedulingConstraints.topology[].key). Each pod joins it
with spec.schedulingGroup.podGroupName: NAME. --workload prints a Workload
whose pod group template carries the same policy and constraint instead, for a
workload controller that makes the PodGroups.

--level auto takes the leaf set when some leaf set has N nodes (one pod per
node), else the unit; the API takes one topology key per group.

The fields are k8s.io/api v0.37's scheduling/v1beta1 types. The API needs the
GenericWorkload and TopologyAwareWorkloadScheduling feature gates and the
scheduling.k8s.io/v1beta1 API served (beta APIs are off unless the API
server's --runtime-config enables them): check with
kubectl api-resources --api-group=scheduling.k8s.io.`,
		Example: `  railyard rails scheduler podgroup llama-70b --pods 16 -n training | kubectl apply -f -
  railyard rails scheduler podgroup job-a --pods 4 --level unit
  railyard rails scheduler podgroup job-a --pods 4 --workload --template workers`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := objectName("PodGroup name", name); err != nil {
				return err
			}
			if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
				return fmt.Errorf("--namespace %q: %s", namespace, strings.Join(errs, "; "))
			}
			if pods < 1 {
				return errors.New("--pods is required, at least 1")
			}
			if errs := validation.IsDNS1123Label(template); len(errs) > 0 {
				return fmt.Errorf("--template %q: %s", template, strings.Join(errs, "; "))
			}
			d, err := f.domains(cmd.Context(), s, connect)
			if err != nil {
				return err
			}
			var key string
			switch level {
			case "auto":
				if key, err = d.Level(pods); err != nil {
					return err
				}
			case "leaf-set":
				key = d.Keys.LeafSet
			case "unit":
				key = d.Keys.Unit
			default:
				return fmt.Errorf("--level %q: want auto, leaf-set or unit", level)
			}
			if largest := d.Largest(key); largest < pods {
				fmt.Fprintf(s.ErrOut, "warning: the largest domain of %s has %d nodes, the job %d pods: it waits until one has room\n", key, largest, pods)
			}
			fmt.Fprintf(s.ErrOut, "%d pods under one value of %s\n", pods, key)
			if workload {
				return write(s, schedtopo.Workload(name, namespace, template, key, pods))
			}
			return write(s, schedtopo.PodGroup(name, namespace, key, pods))
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.IntVar(&pods, "pods", 0, "pods of the job (required): the gang's minCount")
	fl.StringVarP(&namespace, "namespace", "n", namespace, "the job's namespace")
	fl.StringVar(&level, "level", level, "the level all pods share: auto, leaf-set or unit")
	fl.BoolVar(&workload, "workload", false, "print a Workload with a pod group template instead of a PodGroup")
	fl.StringVar(&template, "template", template, "the Workload's pod group template name")
	return cmd
}
