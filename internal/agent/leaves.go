package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/railyard-io/railyard/internal/fabric"
)

// warningFabricPorts counts the times this node's railyard.io/fabric-ports
// annotation could not be read (the NICs' leaves were taken off).
const warningFabricPorts = "fabric_ports_unreadable"

// watchLeaves keeps the DRA pools' railyard.io/leaf attributes on what
// this node's railyard.io/fabric-ports annotation says (written by
// `railyard fabric publish`, the chart's fabric DaemonSet): each NIC's leaf
// switch, so a claim can ask for NICs under one leaf. It watches this
// node's Node object (list and watch on nodes, the chart's DRA role) and
// returns the function that stops the watch and waits for it; the driver
// rebuilds its pools only when the leaves change.
func (a *Agent) watchLeaves(ctx context.Context) (stop func()) {
	f := ownInformers(a.kube, "metadata.name", a.cfg.NodeName)
	inf := f.Core().V1().Nodes().Informer()
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		a.log.Error("watching this node's fabric ports (the NICs' leaves)", "err", err)
	})
	node := func(obj any) {
		// Another node's event (a client that ignores the field
		// selector) changes nothing.
		if n, ok := obj.(*corev1.Node); ok && n.Name == a.cfg.NodeName {
			leaves, why := a.leavesOf(n)
			a.setLeaves(ctx, leaves, why)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    node,
		UpdateFunc: func(_, obj any) { node(obj) },
		DeleteFunc: func(any) { a.setLeaves(ctx, nil, "node deleted") },
	})
	f.Start(ctx.Done())
	return f.Shutdown
}

// leavesOf reads the leaves of this node's Node, and says where they come
// from. An annotation that does not decode gives none, loudly: a leaf the
// node no longer vouches for must not keep steering claims.
func (a *Agent) leavesOf(n *corev1.Node) (map[string]string, string) {
	s, ok := n.Annotations[fabric.PortsAnnotation]
	if !ok {
		return nil, "no " + fabric.PortsAnnotation + " annotation"
	}
	ports, err := fabric.DecodePorts(s)
	if err != nil {
		a.metrics.Warning(warningFabricPorts)
		a.log.Error("this node's fabric ports do not decode: the NICs' leaves are off until they do", "err", err)
		return nil, "annotation unreadable"
	}
	return fabric.Leaves(ports), "annotation " + fabric.PortsAnnotation
}

// setLeaves hands leaves to the DRA driver, which republishes when they
// changed.
func (a *Agent) setLeaves(ctx context.Context, leaves map[string]string, why string) {
	changed, err := a.dra.driver.SetLeaves(ctx, leaves)
	switch {
	case err != nil:
		a.log.Error("DRA pools not republished with the NICs' leaves", "why", why, "err", err)
	case changed:
		a.log.Info("NIC leaves changed", "why", why, "nics_with_a_leaf", len(leaves))
	}
}
