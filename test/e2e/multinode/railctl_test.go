//go:build e2e

package multinode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/jobrails"
	"github.com/railyard-io/railyard/internal/railctl"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// The rails controller's release: its names follow the chart's fullname.
const (
	railsRelease    = "railyard-rails"
	railsNS         = "railyard-rails"
	railsController = railsRelease + "-rails-controller"
	railsWebhook    = railsRelease + "-rails"
)

// TestRailsChosenAtAdmissionStandInGPUDRA: the chart with rails.controller.enabled (and
// every rail's pool delivered by DRA) on the multi-node cluster, whose GPU
// nodes run the STAND-IN GPU DRA driver (up.sh --gpu-dra). A plain batch
// Job of two pods, each wanting 4 GPUs and their NICs in the documented
// form (label railyard.io/rails: same, annotations railyard.io/rails-gpus
// and railyard.io/rails-pods; no resourceClaims, no Railyard command
// run): the real kube-apiserver calls the controller's webhook at each
// pod's CREATE (at the webhook pod's address: --enable-aggregator-routing,
// docs/e2e.md), the controller makes the Job's ResourceClaimTemplate and
// patches both pods to claim it, the real resourceclaim controller and
// scheduler allocate, and both pods run on two nodes with their NICs on
// one rail set. Deleting the Job, the garbage collector deletes the
// template. Then one NIC of that set on one node goes port DOWN; the
// agent taints it NoSchedule; the next Job of the same shape gets a set
// without that rail, and runs on two nodes. Then a PodGroup's pods
// (testPodGroupRails) and a re-chosen job (testRechoose).
func TestRailsChosenAtAdmissionStandInGPUDRA(t *testing.T) {
	c := mc(t)
	needRelease(t, "1.37", "the rail controller's test (its taint case needs device taints, DRADeviceTaints: GA in 1.37; the 1.35 API server drops them)")
	if !c.Info.GPUDRA {
		t.Fatal("the cluster runs no stand-in GPU DRA driver (up.sh --gpu-dra)")
	}
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 {
		t.Skip("needs two GPU nodes")
	}
	ctx := framework.Context(t, 5*time.Minute)
	start := time.Now()
	installRailsChart(ctx, t, c)
	t.Logf("chart with rails.controller.enabled applied, controller ready and its caBundle in %s: %v", railsWebhook, time.Since(start).Round(time.Millisecond))
	checkWebhookRoute(ctx, t, c)

	start = time.Now()
	setA, podsA := runRailsJob(ctx, t, c, "rails-a")
	t.Logf("job rails-a: rails %v, pods %v; created to both Running in %v", setA, podsA, time.Since(start).Round(time.Millisecond))

	// Deleting the Job deletes its template (the garbage collector,
	// through the template's ownerReference).
	tmplA := jobTemplate(ctx, t, c, "rails-a")
	deleteJob(ctx, t, c, "rails-a")
	poll(ctx, t, "template "+tmplA+" deleted with its Job", func(ctx context.Context) (bool, string) {
		_, err := c.Client.ResourceV1().ResourceClaimTemplates("default").Get(ctx, tmplA, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
	poll(ctx, t, "rails-a's pods and claims gone", func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=rails-a"})
		if err != nil {
			return false, err.Error()
		}
		claims, err := c.Client.ResourceV1().ResourceClaims("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0 && len(claims.Items) == 0, fmt.Sprintf("%d pods, %d claims", len(pods.Items), len(claims.Items))
	})

	// One NIC of rails-a's set on gpus[0] port DOWN: its agent taints it.
	rail := setA[0]
	taintRailNIC(ctx, t, c, gpus[0], int(rail))
	start = time.Now()
	setB, podsB := runRailsJob(ctx, t, c, "rails-b")
	t.Logf("job rails-b with rail %d's NIC on %s tainted: rails %v, pods %v, in %v", rail, gpus[0].Name, setB, podsB, time.Since(start).Round(time.Millisecond))
	if slices.Contains(setB, rail) {
		t.Errorf("rails-b got rails %v, which hold rail %d, whose NIC on %s is tainted NoSchedule", setB, rail, gpus[0].Name)
	}
	if slices.Equal(setA, setB) {
		t.Errorf("rails-b got rails-a's set %v", setB)
	}

	deleteJob(ctx, t, c, "rails-b")
	poll(ctx, t, "rails-b's claims gone", func(ctx context.Context) (bool, string) {
		claims, err := c.Client.ResourceV1().ResourceClaims("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(claims.Items) == 0, fmt.Sprintf("%d claims", len(claims.Items))
	})
	t.Run("a PodGroup's pods: the PodGroup owns the template, one leaf set, one rail set", func(t *testing.T) {
		needGroupScheduling(t, c)
		testPodGroupRails(ctx, t, c)
	})
	t.Run("a job whose set lost its room before it started is re-chosen", func(t *testing.T) {
		testRechoose(ctx, t, c)
	})
}

// installRailsChart applies the chart (release railsRelease) with up.sh's
// rail pools delivered by DRA and rails.controller.enabled, deleted when
// the test ends; it returns once every GPU node's agent published its
// NICs, the controller is ready and its CA is in the webhook's caBundle.
func installRailsChart(ctx context.Context, t *testing.T, c *framework.MultiCluster) {
	t.Helper()
	ch, vals := clusterChart(t, c)
	// A job re-chosen within seconds (testRechoose), not minutes.
	vals["rails"] = map[string]any{"controller": map[string]any{"enabled": true, "rechooseAfter": "5s", "resync": "2s"}}
	applyDRARelease(ctx, t, c, ch, vals, railsRelease, railsNS)
	// Runs before the release's deletion (cleanups run last first).
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, _ := kubectl(ctx, c, "", "-n", railsNS, "logs", "deployment/"+railsController, "--tail", "60")
			t.Logf("rails controller's log:\n%s", out)
		}
	})
	poll(ctx, t, "the rails controller ready, its CA in "+railsWebhook, func(ctx context.Context) (bool, string) {
		d, err := c.Client.AppsV1().Deployments(railsNS).Get(ctx, railsController, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		w, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, railsWebhook, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ca := len(w.Webhooks) == 1 && len(w.Webhooks[0].ClientConfig.CABundle) > 0
		return d.Status.ReadyReplicas == 1 && ca, fmt.Sprintf("ready replicas %d, caBundle set %v", d.Status.ReadyReplicas, ca)
	})
}

// checkWebhookRoute: why the cluster's apiserver runs with
// --enable-aggregator-routing (docs/e2e.md). From the host, where the
// apiserver runs, an HTTPS call to the webhook as the apiserver makes it
// (the caBundle the controller wrote, the name <service>.<namespace>.svc)
// fails at the Service's ClusterIP (no kube-proxy on the host: the
// address leaves by the host's default route, where whatever answers is
// not the controller) and succeeds at its endpoint, the controller pod's
// address (the host routes each node's pod CIDR to the node).
func checkWebhookRoute(ctx context.Context, t *testing.T, c *framework.MultiCluster) {
	t.Helper()
	svc, err := c.Client.CoreV1().Services(railsNS).Get(ctx, railsController, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, railsWebhook, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.Client.CoreV1().Pods(railsNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=rails-controller"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the controller's pod: %v (%d pods)", err, len(pods.Items))
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(w.Webhooks[0].ClientConfig.CABundle) {
		t.Fatalf("%s: caBundle holds no certificate", railsWebhook)
	}
	hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: railsController + "." + railsNS + ".svc", MinVersion: tls.VersionTLS12}}}
	get := func(hostPort string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+hostPort+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	}
	cip := net.JoinHostPort(svc.Spec.ClusterIP, "443")
	if err := get(cip); err == nil {
		t.Errorf("the host reaches the webhook at its Service's ClusterIP %s: docs/e2e.md says it cannot (no kube-proxy on the host)", cip)
	} else {
		t.Logf("from the host (the apiserver's side), the webhook at its ClusterIP %s: %v", cip, err)
	}
	ep := net.JoinHostPort(pods.Items[0].Status.PodIP, "8443")
	if err := get(ep); err != nil {
		t.Errorf("the host does not reach the webhook at its endpoint %s: %v", ep, err)
	}
}

// runRailsJob creates batch Job name in default: two pods of 4 GPUs each
// asking for one rail set as docs/alloc.md says, no claims of their own;
// it waits until both run and checks that they are on two nodes, that
// each pod's claim comes from the Job's template (owned by the Job) and
// holds the NICs of the template's rails. It returns the rails and each
// pod's node.
func runRailsJob(ctx context.Context, t *testing.T, c *framework.MultiCluster, name string) ([]int64, map[string]string) {
	t.Helper()
	pod := framework.BusyboxPod("", "", "sleep", "3600").Spec
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{railctl.LabelRails: railctl.RailsSame},
					Annotations: map[string]string{railctl.AnnotationGPUs: "4", railctl.AnnotationPods: "2"},
				},
				Spec: pod,
			},
		},
	}
	if _, err := c.Client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteJob(context.Background(), t, c, name) })
	sel := metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name}
	var pods []corev1.Pod
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		list, err := c.Client.CoreV1().Pods("default").List(wctx, sel)
		if err == nil {
			pods = list.Items
			running := 0
			for _, p := range pods {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			if running == 2 && len(pods) == 2 {
				break
			}
		}
		if wctx.Err() != nil {
			t.Fatalf("job %s: two pods Running: %v\n%s", name, wctx.Err(), jobStory(ctx, c, name, pods))
		}
		time.Sleep(300 * time.Millisecond)
	}
	tmplName := jobTemplate(ctx, t, c, name)
	tmpl, err := c.Client.ResourceV1().ResourceClaimTemplates("default").Get(ctx, tmplName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := parseRails(tmpl.Annotations[jobrails.AnnotationRails])
	if err != nil || len(set) != 4 {
		t.Fatalf("template %s: rails %q (%v), want 4 rails", tmplName, tmpl.Annotations[jobrails.AnnotationRails], err)
	}
	j, err := c.Client.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpl.OwnerReferences) != 1 || tmpl.OwnerReferences[0].UID != j.UID {
		t.Errorf("template %s owners %+v, want the Job %s (%s)", tmplName, tmpl.OwnerReferences, name, j.UID)
	}
	nodes := map[string]string{}
	for _, p := range pods {
		rails := podClaimRails(ctx, t, c, &p, tmplName)
		if !slices.Equal(rails, set) {
			t.Errorf("pod %s on %s: NICs on rails %v, the job's template says %v", p.Name, p.Spec.NodeName, rails, set)
		}
		nodes[p.Name] = p.Spec.NodeName
	}
	if len(nodes) != 2 || pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Errorf("job %s's pods on nodes %v, want two nodes", name, nodes)
	}
	return set, nodes
}

// podClaimRails checks that pod p has its one claim from template tmpl
// (an error if not) and returns the rails of the NICs that claim holds
// on p's node.
func podClaimRails(ctx context.Context, t *testing.T, c *framework.MultiCluster, p *corev1.Pod, tmpl string) []int64 {
	t.Helper()
	if len(p.Spec.ResourceClaims) != 1 || ptr.Deref(p.Spec.ResourceClaims[0].ResourceClaimTemplateName, "") != tmpl {
		t.Errorf("pod %s claims %+v, want one from %s", p.Name, p.Spec.ResourceClaims, tmpl)
	}
	if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("pod %s: claim statuses %+v", p.Name, p.Status.ResourceClaimStatuses)
	}
	claim, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rails, err := nicRails(ctx, c, claim, p.Spec.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	return rails
}

// jobTemplate is the name of the one template the controller made for
// Job name in default.
func jobTemplate(ctx context.Context, t *testing.T, c *framework.MultiCluster, name string) string {
	t.Helper()
	list, err := c.Client.ResourceV1().ResourceClaimTemplates("default").List(ctx, metav1.ListOptions{
		LabelSelector: railctl.LabelManagedBy + "=" + railctl.ManagedBy + "," + railctl.LabelJob + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("job %s: %d templates made by the controller, want 1", name, len(list.Items))
	}
	return list.Items[0].Name
}

// deleteJob deletes Job name in default with its pods (background: the
// garbage collector deletes what it owns).
func deleteJob(ctx context.Context, t *testing.T, c *framework.MultiCluster, name string) {
	err := c.Client.BatchV1().Jobs("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting job %s: %v", name, err)
	}
}

// taintRailNIC takes the port of node n's NIC of rail r DOWN in its
// generated tree (restored when the test ends) and waits until its agent
// publishes it with Railyard's NoSchedule taint.
func taintRailNIC(ctx context.Context, t *testing.T, c *framework.MultiCluster, n framework.NodeInfo, r int) {
	t.Helper()
	sysfs := filepath.Join(n.Dir, "machine", "sysfs")
	topo, err := discovery.Discover(ctx, sysfs)
	if err != nil {
		t.Fatal(err)
	}
	var pci, rdma string
	for _, x := range topo.NICs {
		if r < len(n.Rails) && x.Netdev == n.Rails[r] {
			pci, rdma = x.PCI, x.RDMA
		}
	}
	if rdma == "" {
		t.Fatalf("node %s: no RDMA NIC on rail %d (%v)", n.Name, r, n.Rails)
	}
	name, err := dra.DeviceName(pci)
	if err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.SetPortState(sysfs, rdma, 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.SetPortState(sysfs, rdma, 1, fakesysfs.PortActive) })
	start := time.Now()
	poll(ctx, t, fmt.Sprintf("%s (%s, rail %d) on %s tainted NoSchedule", name, rdma, r, n.Name), func(ctx context.Context) (bool, string) {
		list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + dra.DriverName + "," + resourceapi.ResourceSliceSelectorNodeName + "=" + n.Name})
		if err != nil {
			return false, err.Error()
		}
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				if d.Name == name {
					ok := len(d.Taints) == 1 && d.Taints[0].Key == dra.TaintKey && d.Taints[0].Effect == resourceapi.DeviceTaintEffectNoSchedule
					return ok, fmt.Sprintf("taints %+v", d.Taints)
				}
			}
		}
		return false, "not published"
	})
	t.Logf("rail %d's NIC %s on %s port DOWN: tainted NoSchedule in %v", r, rdma, n.Name, time.Since(start).Round(10*time.Millisecond))
}

// parseRails reads "0,1,2,3".
func parseRails(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("rails %q: %w", s, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// jobStory is what a stuck job shows: its pods' phases and conditions,
// and the events of the Job and its pods.
func jobStory(ctx context.Context, c *framework.MultiCluster, name string, pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "pod %s on %q: %s %+v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
	}
	evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range evs.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, name) {
				fmt.Fprintf(&b, "event %s/%s %s: %s\n", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	return b.String()
}
