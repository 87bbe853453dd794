package nodefabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/ibneighbor"
	"github.com/railyard-io/railyard/internal/lldp"
)

// Publisher writes one node's fabric ports and labels on its Node.
type Publisher struct {
	Client kubernetes.Interface
	Node   string
	// Keys names the leaf set's key (fabric.LabelKeys; the zero value is
	// Railyard's). The publisher writes and removes only the keys it owns
	// (fabric.LabelKeys.PublisherOwns) and the ports annotation.
	Keys fabric.LabelKeys
}

// Publish sets the node's ports annotation and fabric labels from ports
// (fabric.LabelKeys.Labels) and removes fabric labels that no longer
// hold. It reports whether it changed the Node. It writes what it is
// given: holding neighbors not heard is Watch's (Hold).
func (p Publisher) Publish(ctx context.Context, ports []fabric.Port) (bool, error) {
	node, err := p.Client.CoreV1().Nodes().Get(ctx, p.Node, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading node %s: %w", p.Node, err)
	}
	ann, err := fabric.EncodePorts(ports)
	if err != nil {
		return false, err
	}
	want := p.Keys.Labels(ports)
	labels := map[string]any{}
	for k := range node.Labels {
		if p.Keys.PublisherOwns(k) {
			if _, keep := want[k]; !keep {
				labels[k] = nil // a JSON merge patch removes a key set to null
			}
		}
	}
	for k, v := range want {
		if node.Labels[k] != v {
			labels[k] = v
		}
	}
	meta := map[string]any{}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if node.Annotations[fabric.PortsAnnotation] != ann {
		meta["annotations"] = map[string]any{fabric.PortsAnnotation: ann}
	}
	if len(meta) == 0 {
		return false, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return false, fmt.Errorf("encoding the node patch: %w", err)
	}
	if _, err := p.Client.CoreV1().Nodes().Patch(ctx, p.Node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "railyard-agent"}); err != nil {
		return false, fmt.Errorf("patching node %s: %w", p.Node, err)
	}
	return true, nil
}

// Previous returns the ports the node's annotation holds: what the last
// round published, which Watch holds neighbors from (so a restarted
// publisher carries on where its predecessor stopped). A node without
// the annotation, or with one that does not decode (the publisher then
// overwrites it), has none.
func (p Publisher) Previous(ctx context.Context) ([]fabric.Port, error) {
	node, err := p.Client.CoreV1().Nodes().Get(ctx, p.Node, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", p.Node, err)
	}
	v, ok := node.Annotations[fabric.PortsAnnotation]
	if !ok {
		return nil, nil
	}
	if ports, err := fabric.DecodePorts(v); err == nil {
		return ports, nil
	}
	return nil, nil // what does not decode holds nothing: Publish replaces it
}

// Watch listens and publishes every Interval until its context ends.
type Watch struct {
	// Ports returns the node's current ports without neighbors
	// (fabric.PortsOf of the agent's latest topology).
	Ports func() []fabric.Port
	// Listen hears LLDP on the named netdevs until ctx ends
	// (lldp.ReceiveAll in the agent; a fake in tests).
	Listen func(ctx context.Context, netdevs []string) []lldp.Result
	// InfiniBand runs smpquery for the InfiniBand ports' neighbors
	// (ibneighbor.Exec; ibneighbortest.Fake in tests); nil leaves them
	// unasked.
	InfiniBand ibneighbor.Runner
	// Publish writes the ports (Publisher.Publish).
	Publish func(ctx context.Context, ports []fabric.Port) (bool, error)
	// HoldRounds is how many rounds in a row a neighbor not heard stays
	// published before its rail counts as dead (Hold); 0 holds none.
	HoldRounds int
	// Previous returns the ports last published (Publisher.Previous: the
	// Node's annotation); nil keeps each round's ports in memory for the
	// next.
	Previous func(ctx context.Context) ([]fabric.Port, error)
	// Wait bounds one listen: longer than the switches' LLDP transmit
	// interval (30 s by default on most switches).
	Wait time.Duration
	// Interval is the time between two listens.
	Interval time.Duration
	// Report receives each round's ports and error (logging, metrics); may
	// be nil.
	Report func(ports []fabric.Port, changed bool, err error)

	// last is the ports of the last round published, when Previous is nil.
	last []fabric.Port
}

// Once fills every port's neighbor (Neighbors: LLDP for up to Wait,
// InfiniBand ports asked meanwhile), holds the last published neighbors
// of the ports that heard none (Hold), and publishes.
func (w *Watch) Once(ctx context.Context) ([]fabric.Port, bool, error) {
	fresh, withdrawn := neighbors(ctx, w.Ports(), w.Listen, w.InfiniBand, w.Wait)
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	prev := w.last
	if w.Previous != nil {
		var err error
		if prev, err = w.Previous(ctx); err != nil {
			return fresh, false, err
		}
	}
	ports := Hold(prev, fresh, w.HoldRounds, withdrawn)
	changed, err := w.Publish(ctx, ports)
	if err == nil {
		w.last = ports
	}
	return ports, changed, err
}

// ibPort is the RDMA port number Neighbors asks on: fabric.PortsOf gives
// one port per NIC, its first, and RDMA ports count from 1 (each port of
// a ConnectX card is its own PCI function and RDMA device).
const ibPort = 1

// Neighbors fills each port's neighbor, all ports at once: on the ports
// that hear LLDP (fabric.Port.HearsLLDP) what listen hears within wait;
// on InfiniBand ports the node at the other end of the cable, asked with
// smpquery through ib (ibneighbor.Query, bounded by ctx and ib's own
// timeout, not by wait). A port without a neighbor says why. An
// InfiniBand port's switch is the switch's node GUID, unique where its
// NodeDesc need not be (switches left unnamed share a vendor default); a
// node at hop 1 that is not a switch (a back-to-back cable) is no switch,
// and the port says what it reaches instead.
func Neighbors(ctx context.Context, ports []fabric.Port, listen func(ctx context.Context, netdevs []string) []lldp.Result, ib ibneighbor.Runner, wait time.Duration) []fabric.Port {
	out, _ := neighbors(ctx, ports, listen, ib, wait)
	return out
}

// neighbors is Neighbors, and also returns the NICs whose switch withdrew
// the neighbor (an LLDP shutdown frame, lldp.ErrShutdown), which Hold does
// not hold.
func neighbors(ctx context.Context, ports []fabric.Port, listen func(ctx context.Context, netdevs []string) []lldp.Result, ib ibneighbor.Runner, wait time.Duration) ([]fabric.Port, map[string]bool) {
	var netdevs []string
	for _, p := range ports {
		if p.HearsLLDP() {
			netdevs = append(netdevs, p.Netdev)
		}
	}
	type answer struct {
		nb  lldp.Neighbor
		err error
	}
	answers := make([]*answer, len(ports))
	var wg sync.WaitGroup
	for i, p := range ports {
		if p.LinkLayer != "InfiniBand" || ib == nil {
			continue
		}
		answers[i] = &answer{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].nb, answers[i].err = ibneighbor.Query(ctx, ib, p.NIC, ibPort)
		}()
	}
	var results []lldp.Result
	if listen != nil {
		lctx, cancel := context.WithTimeout(ctx, wait)
		results = listen(lctx, netdevs)
		cancel()
	}
	wg.Wait()

	shutdown := map[string]bool{}
	for _, r := range results {
		if errors.Is(r.Err, lldp.ErrShutdown) {
			shutdown[r.Port] = true
		}
	}
	withdrawn := map[string]bool{}
	out := fabric.WithNeighbors(ports, results)
	for i := range out {
		if p := &out[i]; p.HearsLLDP() && shutdown[p.Netdev] {
			withdrawn[p.NIC] = true
		}
	}
	for i := range out {
		p := &out[i]
		if p.LinkLayer != "InfiniBand" {
			continue
		}
		a := answers[i]
		switch {
		case a == nil:
			p.NoNeighbor = "InfiniBand: not asked (no smpquery runner)"
		case a.err != nil:
			p.NoNeighbor = a.err.Error()
		default:
			p.Switch, p.SwitchPort, p.NoNeighbor = a.nb.ChassisID, a.nb.PortID, ""
		}
	}
	return out, withdrawn
}

// Run calls Once now and then every Interval until ctx ends; a failed
// round is reported and retried at the next one.
func (w *Watch) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ports, changed, err := w.Once(ctx)
		if ctx.Err() != nil {
			return
		}
		if w.Report != nil {
			w.Report(ports, changed, err)
		}
		t.Reset(w.Interval)
	}
}
