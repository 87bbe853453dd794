//go:build e2e

package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
)

// StandinGPUDRAOptions is one GPU node's stand-in GPU DRA driver run as a
// process of its own (ServeStandinGPUDRA; up.sh --gpu-dra starts one per
// GPU node): the paths are the node's, as the process sees them.
type StandinGPUDRAOptions struct {
	Node        string // the Node's name
	Kubeconfig  string // its client's kubeconfig
	KubeletRoot string // the node kubelet's --root-dir
	CDIDir      string // where the node's containerd reads CDI specs
	Sysfs       string // the node's machine: its GPUs are published
}

// Args is the command line tail ServeStandinGPUDRA's caller parses back
// (railyard-cluster standin-gpu-dra).
func (o StandinGPUDRAOptions) Args() []string {
	return []string{"--node", o.Node, "--kubeconfig", o.Kubeconfig, "--kubelet-root", o.KubeletRoot, "--cdi-dir", o.CDIDir, "--sysfs", o.Sysfs}
}

// ServeStandinGPUDRA runs the STAND-IN GPU DRA driver of StartStandinGPUDRA
// for one node until ctx ends: it discovers the node's GPUs in its sysfs
// tree, registers with its kubelet, publishes them and prepares claims;
// at the end it unregisters and deletes the node's gpu.nvidia.com slices
// (as the kubelet would, a while after a driver unregisters).
func ServeStandinGPUDRA(ctx context.Context, o StandinGPUDRAOptions, logf func(string, ...any)) error {
	if o.Node == "" || o.Kubeconfig == "" || o.KubeletRoot == "" || o.CDIDir == "" || o.Sysfs == "" {
		return fmt.Errorf("stand-in GPU DRA: node, kubeconfig, kubelet root, CDI dir and sysfs are all needed: %+v", o)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("stand-in GPU DRA on %s: %w", o.Node, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("stand-in GPU DRA on %s: %w", o.Node, err)
	}
	topo, err := discovery.Discover(ctx, o.Sysfs)
	if err != nil {
		return fmt.Errorf("stand-in GPU DRA on %s: %w", o.Node, err)
	}
	g, err := StartStandinGPUDRA(ctx, client, o.Node, o.KubeletRoot, o.CDIDir, topo)
	if err != nil {
		return err
	}
	logf("stand-in GPU DRA driver %s on %s: %d GPUs published", gpustandin.DriverName, o.Node, len(topo.GPUs))
	<-ctx.Done()
	g.Stop()
	dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.ResourceV1().ResourceSlices().DeleteCollection(dctx, metav1.DeleteOptions{}, metav1.ListOptions{
		FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + gpustandin.DriverName + "," + resourceapi.ResourceSliceSelectorNodeName + "=" + o.Node,
	}); err != nil {
		return fmt.Errorf("stand-in GPU DRA on %s: deleting its slices: %w", o.Node, err)
	}
	logf("stand-in GPU DRA driver on %s: stopped, its slices deleted", o.Node)
	return nil
}

// startGPUDRA starts cfg.GPUDRA on every GPU node (in the node's mount,
// network and PID namespaces, as its kubelet runs) after the DeviceClass
// gpu.nvidia.com, and waits until every node's GPUs are in a slice.
func (m *MultiCluster) startGPUDRA(ctx context.Context) error {
	class := gpustandin.DeviceClass()
	if _, err := m.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("DeviceClass %s: %w", class.Name, err)
	}
	want := map[string]bool{}
	for _, n := range m.nodes {
		if n.Role != RoleGPU {
			continue
		}
		o := StandinGPUDRAOptions{
			Node: n.Name, Kubeconfig: filepath.Join(m.cfg.Dir, "gpu-dra.kubeconfig"),
			KubeletRoot: filepath.Join(n.Dir, "kubelet"), CDIDir: filepath.Join(n.Dir, "cdi"),
			Sysfs: filepath.Join(n.Dir, "machine", "sysfs"),
		}
		args := append(append([]string{}, m.cfg.GPUDRA[1:]...), o.Args()...)
		path, args := entered(n.enter("mount", "net", "pid"), m.cfg.GPUDRA[0], args)
		if err := m.track(startProcess("standin-gpu-dra", path, args, nil, filepath.Join(m.cfg.Dir, "logs", n.Name, "standin-gpu-dra.log"))); err != nil {
			return err
		}
		want[n.Name] = true
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return poll(wctx, 200*time.Millisecond, "every GPU node's gpu.nvidia.com slice", func(ctx context.Context) (bool, error) {
		list, err := m.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + gpustandin.DriverName})
		if err != nil {
			return false, err
		}
		seen := 0
		for _, s := range list.Items {
			if s.Spec.NodeName != nil && want[*s.Spec.NodeName] {
				seen++
			}
		}
		return seen >= len(want), nil
	})
}
