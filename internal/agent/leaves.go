package agent

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/railyard-io/railyard/internal/fabric"
)

// warningFabricPorts counts the times this node's railyard.io/fabric-ports
// annotation could not be read (the NICs' leaves were taken off).
const warningFabricPorts = "fabric_ports_unreadable"

// leafWatch keeps the DRA pools' railyard.io/leaf attributes on what this
// node's railyard.io/fabric-ports annotation says (written by `railyard
// fabric publish`, the chart's fabric DaemonSet): each NIC's leaf switch,
// so a claim can ask for NICs under one leaf. Only its event handler's
// goroutine touches last.
type leafWatch struct {
	a    *Agent
	last map[string]string
}

// watchLeaves starts watching this node's Node object (a field selector on
// its name: list and watch on nodes, the chart's DRA role) and returns the
// function that stops the watch and waits for it.
func (a *Agent) watchLeaves(ctx context.Context) (stop func()) {
	f := informers.NewSharedInformerFactoryWithOptions(a.dra.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", a.cfg.NodeName).String()
	}))
	inf := f.Core().V1().Nodes().Informer()
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		a.log.Error("watching this node's fabric ports (the NICs' leaves)", "err", err)
	})
	w := &leafWatch{a: a}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.node(ctx, obj) },
		UpdateFunc: func(_, obj any) { w.node(ctx, obj) },
		DeleteFunc: func(any) { w.set(ctx, nil, "node deleted") },
	})
	f.Start(ctx.Done())
	return f.Shutdown
}

// node reads the leaves of a Node event. Another node's event (a client
// that ignores the field selector) changes nothing; an annotation that does
// not decode takes the leaves off, loudly: a leaf the node no longer
// vouches for must not keep steering claims.
func (w *leafWatch) node(ctx context.Context, obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok || n.Name != w.a.cfg.NodeName {
		return
	}
	s, ok := n.Annotations[fabric.PortsAnnotation]
	if !ok {
		w.set(ctx, nil, "no "+fabric.PortsAnnotation+" annotation")
		return
	}
	ports, err := fabric.DecodePorts(s)
	if err != nil {
		w.a.metrics.Warning(warningFabricPorts)
		w.a.log.Error("this node's fabric ports do not decode: the NICs' leaves are off until they do", "err", err)
		w.set(ctx, nil, "annotation unreadable")
		return
	}
	w.set(ctx, fabric.Leaves(ports), "annotation "+fabric.PortsAnnotation)
}

// set hands new leaves to the DRA driver when they changed.
func (w *leafWatch) set(ctx context.Context, leaves map[string]string, why string) {
	if maps.Equal(w.last, leaves) {
		return
	}
	if _, err := w.a.dra.driver.SetLeaves(ctx, leaves); err != nil {
		w.a.log.Error("DRA pools not republished with the NICs' leaves", "why", why, "err", err)
		return
	}
	w.last = leaves
	w.a.log.Info("NIC leaves changed", "why", why, "nics_with_a_leaf", len(leaves))
}
