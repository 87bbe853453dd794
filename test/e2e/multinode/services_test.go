//go:build e2e

package multinode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestServicesRouteAcrossNodes: every node's kube-proxy (nftables mode)
// routes a ClusterIP Service to its endpoint, made by the real Deployment,
// ReplicaSet and EndpointSlice controllers, from a pod on another node and
// from a pod on the endpoint's own node (through the node's bridge); and
// the `kubernetes` Service takes a pod to the apiserver on the host, which
// the chart's DRA plugin and any in-cluster client need. The cluster DNS
// (CoreDNS behind kube-dns) resolves the Service's name, short and full,
// to its ClusterIP.
func TestServicesRouteAcrossNodes(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 4*time.Minute)
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 {
		t.Skip("needs two GPU nodes")
	}
	const ns, name = "default", "svc-echo"
	labels := map[string]string{"app": name}
	server := framework.BusyboxPod(ns, "", "nc", "-ll", "-p", "8080", "-e", "hostname")
	server.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": gpus[1].Name}
	server.Spec.RestartPolicy = corev1.RestartPolicyAlways // a Deployment's
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: server.Spec},
		},
	}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	svc, err := c.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })

	// The endpoint: the Deployment's pod, ready, in the Service's slice.
	var backend string
	poll(ctx, t, "an EndpointSlice with the Deployment's ready pod", func(ctx context.Context) (bool, string) {
		slices, err := c.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
		if err != nil {
			return false, err.Error()
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready && e.TargetRef != nil {
					backend = e.TargetRef.Name
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%d slices, none with a ready endpoint", len(slices.Items))
	})

	clients := map[string]string{"svc-client-1": gpus[0].Name, "svc-client-2": gpus[1].Name}
	for pod, node := range clients {
		p := framework.BusyboxPod(ns, pod, "sleep", "3600")
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
		if _, err := c.CreatePod(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.DeletePod(context.Background(), ns, pod) })
	}
	for pod, node := range clients {
		if _, err := c.WaitForPodPhase(ctx, ns, pod, corev1.PodRunning); err != nil {
			t.Fatal(err)
		}
		// kube-proxy programs the rule within a sync of the slice: poll.
		where := "another node"
		if node == gpus[1].Name {
			where = "the endpoint's node"
		}
		poll(ctx, t, fmt.Sprintf("%s on %s (%s) reaching Service %s at %s:80", pod, node, where, name, svc.Spec.ClusterIP), func(ctx context.Context) (bool, string) {
			out, err := c.Exec(ctx, ns, pod, "main", "sh", "-c", "nc -w 3 "+svc.Spec.ClusterIP+" 80 </dev/null")
			got := strings.TrimSpace(out)
			return err == nil && got == backend, fmt.Sprintf("%q, %v (want %q)", got, err, backend)
		})
		t.Logf("%s on %s reached %s through Service %s", pod, node, backend, svc.Spec.ClusterIP)
	}

	// By name: the full name through nslookup, the short one through the
	// pod's search path, both answered by the cluster DNS.
	full := name + "." + ns + ".svc.cluster.local"
	poll(ctx, t, "the cluster DNS resolving "+full, func(ctx context.Context) (bool, string) {
		out, err := c.Exec(ctx, ns, "svc-client-1", "main", "nslookup", full)
		return err == nil && strings.Contains(out, "Address: "+svc.Spec.ClusterIP), fmt.Sprintf("%q, %v", out, err)
	})
	out, err := c.Exec(ctx, ns, "svc-client-1", "main", "sh", "-c", "nc -w 3 "+name+" 80 </dev/null")
	if got := strings.TrimSpace(out); err != nil || got != backend {
		t.Errorf("svc-client-1 reaching Service %s by its short name: %q, %v (want %q)", name, got, err, backend)
	}

	// The apiserver through the `kubernetes` Service: plain HTTP sent to
	// its ClusterIP's 443 gets Go's TLS server's own answer ("Client sent
	// an HTTP request to an HTTPS server"), which only the apiserver on the
	// host gives: kube-proxy sent the connection there and the host routed
	// the answer back to the pod's own address.
	api, err := c.Client.CoreV1().Services(ns).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "svc-client-1 reaching the apiserver at "+api.Spec.ClusterIP+":443", func(ctx context.Context) (bool, string) {
		out, err := c.Exec(ctx, ns, "svc-client-1", "main", "sh", "-c",
			"(printf 'GET / HTTP/1.0\\r\\n\\r\\n'; sleep 2) | nc -w 3 "+api.Spec.ClusterIP+" 443")
		return strings.Contains(out, "HTTP request to an HTTPS server"), fmt.Sprintf("%q, %v", out, err)
	})
}
