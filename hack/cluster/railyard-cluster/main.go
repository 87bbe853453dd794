//go:build e2e

// Command railyard-cluster runs the multi-node test cluster of
// hack/cluster/up.sh and hack/cluster/down.sh (see docs/e2e.md):
//
//	railyard-cluster up DIR [flags]      start it; serve until SIGTERM, then tear down
//	railyard-cluster down DIR            stop the server of DIR and remove what is left
//	railyard-cluster spine DIR on|off    join the rails through the fabric's spine, or isolate them
//	railyard-cluster node-init NODE_DIR  a node's PID 1 (started by up)
//	railyard-cluster standin-gpu-dra --node N ...  a GPU node's STAND-IN GPU DRA driver (started by up --gpu-dra)
//
// The logic lives in test/e2e/framework; this is its command line. It only
// builds with the e2e tag.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "railyard-cluster:", err)
		os.Exit(1)
	}
}

func logf(f string, a ...any) { fmt.Printf(time.Now().Format("15:04:05 ")+f+"\n", a...) }

func run(args []string) error {
	if len(args) >= 1 && args[0] == "standin-gpu-dra" {
		return standinGPUDRA(args[1:])
	}
	if len(args) < 2 {
		return fmt.Errorf("usage: railyard-cluster up|down|spine|node-init DIR [ARGS]")
	}
	dir, err := filepath.Abs(args[1])
	if err != nil {
		return err
	}
	switch args[0] {
	case "node-init":
		return framework.NodeInit()
	case "down":
		start := time.Now()
		if err := framework.DownMulti(dir, 90*time.Second, logf); err != nil {
			return err
		}
		logf("down: %s is down (%v)", dir, time.Since(start).Round(time.Millisecond))
		return nil
	case "spine":
		if len(args) != 3 || (args[2] != "on" && args[2] != "off") {
			return fmt.Errorf("usage: railyard-cluster spine DIR on|off")
		}
		return framework.SetSpine(context.Background(), dir, args[2] == "on")
	case "up":
		return up(dir, args[2:])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func up(dir string, args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	nodes := fs.Int("nodes", 2, "GPU nodes")
	models := fs.String("machines", "dgx-h100", "built-in machine model of each GPU node, comma-separated (the last repeats)")
	k8sBin := fs.String("k8s-bin", "", "kube-apiserver, kube-scheduler, kube-controller-manager, kube-proxy, kubelet, kubectl of one release (the cluster runs that release)")
	cniBin := fs.String("cni-bin", "", "bridge, host-local, loopback CNI plugins")
	ctrdBin := fs.String("containerd-bin", "", "containerd v2 (empty: the host's)")
	dnsBin := fs.String("coredns-bin", "", "a static coredns: the cluster DNS (empty: none)")
	waBin := fs.String("whereabouts-bin", "", "the whereabouts IPAM plugin, for every node's CNI bin dir (empty: none)")
	waCRDs := fs.String("whereabouts-crds", "", "the directory of whereabouts' CRDs (its module's doc/crds)")
	image := fs.String("image", "", "Railyard's image archive (make images) to import into every node")
	tag := fs.String("image-tag", "", "the tag of that image (the chart's values)")
	spine := fs.Bool("spine", false, "start with the spine on (rails joined)")
	gpuDRA := fs.Bool("gpu-dra", false, "run the STAND-IN GPU DRA driver (gpu.nvidia.com) on every GPU node")
	groups := fs.Bool("group-scheduling", false, "turn on Kubernetes 1.37's group scheduling (feature gates "+framework.GroupSchedulingGates+", the scheduling.k8s.io/v1beta1 API)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nodes < 1 {
		return fmt.Errorf("--nodes %d: need at least one GPU node", *nodes)
	}
	list := strings.Split(*models, ",")
	var machines []string
	for i := range *nodes {
		machines = append(machines, list[min(i, len(list)-1)])
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// SIGTERM (down.sh) or SIGINT during the start cancels it; after the
	// start they stop the cluster.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	start := time.Now()
	var gpuCmd []string
	if *gpuDRA {
		gpuCmd = []string{self, "standin-gpu-dra"}
	}
	mc, err := framework.StartMulti(ctx, framework.MultiConfig{
		Dir: dir, K8sBinDir: *k8sBin, CNIBinDir: *cniBin, ContainerdBinDir: *ctrdBin, CoreDNSBinDir: *dnsBin,
		WhereaboutsBinDir: *waBin, WhereaboutsCRDs: *waCRDs,
		Machines: machines, NodeInit: []string{self, "node-init"}, GPUDRA: gpuCmd, GroupScheduling: *groups, Logf: logf,
	})
	if err != nil {
		return err
	}
	ready := func() error {
		if *image != "" {
			t := time.Now()
			if err := mc.ImportImage(ctx, *image); err != nil {
				return err
			}
			logf("cluster: image %s imported into every node in %v", filepath.Base(*image), time.Since(t).Round(time.Millisecond))
		}
		if *spine {
			if err := framework.SetSpine(ctx, dir, true); err != nil {
				return err
			}
		}
		if err := writeValues(dir, mc.Info, *tag); err != nil {
			return err
		}
		return writeEnv(dir, mc.Info)
	}
	if err := ready(); err != nil {
		return stopWith(mc, err)
	}
	logf("cluster: up in %v: %d GPU nodes, %d rails; source %s", time.Since(start).Round(time.Millisecond), *nodes, len(mc.Info.Rails), filepath.Join(dir, "env"))
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		return stopWith(mc, err)
	}
	<-ctx.Done()
	t := time.Now()
	logf("cluster: stopping")
	if err := mc.Stop(); err != nil {
		return err
	}
	logf("cluster: down in %v", time.Since(t).Round(time.Millisecond))
	return nil
}

func stopWith(mc *framework.MultiCluster, err error) error {
	if serr := mc.Stop(); serr != nil {
		return fmt.Errorf("%w (and at teardown: %w)", err, serr)
	}
	return err
}

// writeEnv writes DIR/env, a file to source: KUBECTL is the cluster's own
// release's kubectl and KUBERNETES_VERSION the release its apiserver
// reports.
func writeEnv(dir string, info framework.ClusterInfo) error {
	env := fmt.Sprintf(`# hack/cluster/up.sh %[1]s: source this file.
export KUBECONFIG=%[2]s
export KUBECTL=%[3]s
export TEST_IMAGE=%[4]s
export RAILYARD_CLUSTER_DIR=%[1]s
export RAILYARD_VALUES=%[1]s/railyard-values.yaml
export KUBERNETES_VERSION=%[5]s
`, dir, info.Kubeconfig, filepath.Join(info.K8sBinDir, "kubectl"), framework.BusyboxImage, info.KubernetesVersion)
	return os.WriteFile(filepath.Join(dir, "env"), []byte(env), 0o644)
}

// standinGPUDRA runs one GPU node's STAND-IN GPU DRA driver until SIGTERM
// (framework.ServeStandinGPUDRA).
func standinGPUDRA(args []string) error {
	fs := flag.NewFlagSet("standin-gpu-dra", flag.ContinueOnError)
	var o framework.StandinGPUDRAOptions
	fs.StringVar(&o.Node, "node", "", "the Node's name")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "the driver's kubeconfig")
	fs.StringVar(&o.KubeletRoot, "kubelet-root", "", "the node kubelet's --root-dir")
	fs.StringVar(&o.CDIDir, "cdi-dir", "", "the node's CDI spec directory")
	fs.StringVar(&o.Sysfs, "sysfs", "", "the node's sysfs tree (its GPUs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("standin-gpu-dra: unexpected arguments %q", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return framework.ServeStandinGPUDRA(ctx, o, logf)
}
