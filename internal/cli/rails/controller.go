package rails

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/jobrails"
	"github.com/railyard-io/railyard/internal/railctl"
)

type controllerFlags struct {
	kubeconfig, namespace, identity       string
	lease, webhookConfig, service, listen string
	gpuDriver, gpuClass                   string
	tolerations                           []string
	rechooseAfter, grace, resync          time.Duration
}

func newControllerCommand(s iostreams.Streams, connect connectFunc) *cobra.Command {
	f := controllerFlags{
		namespace: os.Getenv("POD_NAMESPACE"), identity: os.Getenv("POD_NAME"),
		lease: "railyard-rails-controller", webhookConfig: "railyard-rails", service: "railyard-rails-controller", listen: ":8443",
		gpuDriver: jobrails.DefaultGPUClass, gpuClass: jobrails.DefaultGPUClass,
		rechooseAfter: 2 * time.Minute, grace: 2 * time.Minute, resync: 30 * time.Second,
	}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Choose each job's rails when its first pod is admitted (a mutating webhook and a re-choosing loop)",
		Long: `controller gives every pod labelled railyard.io/rails=same the rail set of its
job without a 'rails template' step: at the job's first pod its webhook chooses
the set as 'rails template' does, creates the job's ResourceClaimTemplate
(owned by the job) and adds the claim railyard-rails to every pod of the job.
The leader (a coordination.k8s.io Lease) re-chooses a job whose pods stay
unschedulable for --rechoose-after while another set has room, before any pod
is bound. It serves HTTPS with a CA it makes at start and writes into the
caBundle of --webhook-config. The chart runs it (rails.controller.enabled);
docs/alloc.md, "Rails chosen at admission".`,
		Example: `  # as the chart runs it (rails.controller.enabled=true), in its pod:
  railyard rails controller --namespace railyard-system --identity "$POD_NAME"
  # a job asks for it on its pods' template:
  #   labels:      {railyard.io/rails: same}
  #   annotations: {railyard.io/rails-gpus: "4", railyard.io/rails-pods: "2"}
  # tolerating one device taint, re-choosing after 5 minutes:
  railyard rails controller --toleration rdma.railyard.io/unhealthy=probe:NoSchedule --rechoose-after 5m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(cmd.Context(), s, connect, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, KUBECONFIG, ~/.kube/config)")
	fl.StringVar(&f.namespace, "namespace", f.namespace, "the controller's namespace: its Lease and Service (default $POD_NAMESPACE)")
	fl.StringVar(&f.identity, "identity", f.identity, "this replica's name in the Lease (default $POD_NAME)")
	fl.StringVar(&f.lease, "lease", f.lease, "the leader election Lease")
	fl.StringVar(&f.webhookConfig, "webhook-config", f.webhookConfig, "the MutatingWebhookConfiguration whose caBundle is set")
	fl.StringVar(&f.service, "service", f.service, "the Service the API server calls the webhook through")
	fl.StringVar(&f.listen, "listen", f.listen, "HTTPS address of the webhook")
	fl.StringVar(&f.gpuDriver, "gpu-driver", f.gpuDriver, "DRA driver name of the GPUs' ResourceSlices")
	fl.StringVar(&f.gpuClass, "gpu-class", f.gpuClass, "DeviceClass the GPU requests name")
	fl.StringArrayVar(&f.tolerations, "toleration", nil, "a device taint every job tolerates, KEY[=VALUE][:EFFECT] (repeatable)")
	fl.DurationVar(&f.rechooseAfter, "rechoose-after", f.rechooseAfter, "how long a job's pods stay unschedulable on its set before another set is tried")
	fl.DurationVar(&f.grace, "grace", f.grace, "how long a template no pod claims is kept after it is made")
	fl.DurationVar(&f.resync, "resync", f.resync, "time between two passes of the leader's loop")
	return cmd
}

func runController(ctx context.Context, s iostreams.Streams, connect connectFunc, f controllerFlags) error {
	if f.namespace == "" || f.identity == "" {
		return errors.New("--namespace and --identity are required (or POD_NAMESPACE and POD_NAME)")
	}
	if f.rechooseAfter <= 0 || f.resync <= 0 || f.grace < 0 {
		return errors.New("--rechoose-after and --resync must be positive, --grace not negative")
	}
	tols, err := parseTolerations(f.tolerations)
	if err != nil {
		return err
	}
	cs, err := connect(f.kubeconfig, requestTimeout)
	if err != nil {
		return err
	}
	log := logr.FromSlogHandler(slog.NewJSONHandler(s.ErrOut, nil))
	ch := &railctl.Chooser{Client: cs, GPUDriver: f.gpuDriver, GPUClass: f.gpuClass, Tolerations: tols}
	err = railctl.Run(ctx, railctl.Config{
		Client: cs, Namespace: f.namespace, LeaseName: f.lease, Identity: f.identity,
		WebhookConfig: f.webhookConfig, Service: f.service, Listen: f.listen, Resync: f.resync, Log: log,
		Controller: &railctl.Controller{Client: cs, Chooser: ch, RechooseAfter: f.rechooseAfter, Grace: f.grace, Log: log},
		Webhook:    &railctl.Webhook{Client: cs, Chooser: ch},
	})
	if err != nil {
		return fmt.Errorf("rails controller: %w", err)
	}
	return nil
}
