package agent

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

// TestCountersOnMetricsNameTheHoldingPod: the agent's /metrics exports
// the RDMA port counters of the node's devices (internal/rdmastats); a VF
// that PodResources lists as allocated to a container carries its pod,
// namespace and container, and loses them when the pod is gone. Faked:
// the sysfs tree and its counter files (mlx5's names, advanced by the
// test), kubelet's PodResources answers.
func TestCountersOnMetricsNameTheHoldingPod(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	kubelettest.StartRegistrar(t, e.pluginDir)
	pr := podrestest.Start(t, e.podSock)
	r := start(t, e.args(e.writeConfig(t, twoPools(""))), nil)

	topo := r.agent.Topology()
	nic := topo.NICs[0]
	if len(nic.VFs) == 0 || nic.VFs[0].RDMA == "" {
		t.Fatalf("the model's first NIC has no VF with an RDMA device: %+v", nic)
	}
	vf := nic.VFs[0]
	for _, rdma := range []string{nic.RDMA, vf.RDMA} {
		if err := fakesysfs.WriteCounters(e.sysfs, rdma, fakesysfs.MLX5); err != nil {
			t.Fatal(err)
		}
	}
	if err := fakesysfs.AdvanceCounters(e.sysfs, vf.RDMA, 1, fakesysfs.MLX5, map[string]uint64{"hw_counters/out_of_buffer": 7}); err != nil {
		t.Fatal(err)
	}
	pr.Set(&podresourcesapi.PodResources{Name: "trainer-0", Namespace: "ml", Containers: []*podresourcesapi.ContainerResources{{
		Name: "main", Devices: []*podresourcesapi.ContainerDevices{{ResourceName: vfRes, DeviceIds: []string{vf.PCI}}},
	}}})

	held := regexp.MustCompile(`railyard_rdma_out_of_buffer_total\{[^}]*container="main"[^}]*namespace="ml"[^}]*nic="` + regexp.QuoteMeta(vf.RDMA) + `"[^}]*pod="trainer-0"[^}]*\} 7`)
	text := metricsText(t, r)
	if !held.MatchString(text) {
		t.Fatalf("no out_of_buffer series of %s held by ml/trainer-0 with value 7 in /metrics:\n%s", vf.RDMA, grepLines(text, vf.RDMA))
	}
	if !strings.Contains(text, `nic="`+nic.RDMA+`"`) {
		t.Errorf("the PF %s's counters are not exported", nic.RDMA)
	}

	pr.Set()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(metricsText(t, r), `pod="trainer-0"`) {
		if time.Now().After(deadline) {
			t.Fatal("the pod's label outlived the pod in PodResources")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCountersCarryThePodsJob: with the agent's watch of its node's pods,
// a held VF's counters carry the holding pod's job (rdmacounter.JobName:
// its JobSet label here) as job_name, and the label empties once the pod
// is gone from the API server while kubelet still lists it. The API server is client-go's fake clientset
// (the multi-node e2e runs a real one).
func TestCountersCarryThePodsJob(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	kubelettest.StartRegistrar(t, e.pluginDir)
	pr := podrestest.Start(t, e.podSock)
	r := start(t, e.args(e.writeConfig(t, twoPools(""))), map[string]string{"RAILYARD_NODE_NAME": "node-a"})
	vf := r.agent.Topology().NICs[0].VFs[0]
	if err := fakesysfs.WriteCounters(e.sysfs, vf.RDMA, fakesysfs.MLX5); err != nil {
		t.Fatal(err)
	}
	pr.Set(&podresourcesapi.PodResources{Name: "trainer-0", Namespace: "ml", Containers: []*podresourcesapi.ContainerResources{{
		Name: "main", Devices: []*podresourcesapi.ContainerDevices{{ResourceName: vfRes, DeviceIds: []string{vf.PCI}}},
	}}})
	pod := func(name, node, job string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", Labels: map[string]string{"jobset.sigs.k8s.io/jobset-name": job}},
			Spec:       corev1.PodSpec{NodeName: node},
		}
	}
	kube := fake.NewClientset(pod("trainer-0", "node-a", "llama-70b"), pod("trainer-0-elsewhere", "node-b", "other"))
	// The fake drops what changes between an informer's list and its
	// watch: the pod is deleted only once the watch is open.
	watching := make(chan struct{})
	var once sync.Once
	kube.PrependWatchReactor("pods", func(clienttesting.Action) (bool, apiwatch.Interface, error) {
		once.Do(func() { close(watching) })
		return false, nil, nil
	})
	stop := r.agent.watchPodJobs(context.Background(), kube)
	defer stop()

	series := regexp.MustCompile(`railyard_rdma_port_transmit_bytes_total\{[^}]*job_name="([^"]*)"[^}]*nic="` + regexp.QuoteMeta(vf.RDMA) + `"[^}]*pod="trainer-0"`)
	waitJob := func(what, want string) {
		t.Helper()
		got := "no series"
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if m := series.FindStringSubmatch(metricsText(t, r)); m != nil {
				if got = m[1]; got == want {
					return
				}
			}
		}
		t.Fatalf("%s: job_name %q on %s's counters, want %q", what, got, vf.RDMA, want)
	}
	waitJob("pod watched", "llama-70b")
	select {
	case <-watching:
	case <-time.After(15 * time.Second):
		t.Fatal("the agent did not watch its node's pods within 15s")
	}
	if err := kube.CoreV1().Pods("ml").Delete(context.Background(), "trainer-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitJob("pod deleted from the API server", "")
}

// Without the permission to list pods (a chart without metrics.jobNames)
// the watch says so once and stops, instead of retrying forever.
func TestPodJobsWatchStopsWhenForbidden(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	kubelettest.StartRegistrar(t, e.pluginDir)
	r := start(t, e.args(e.writeConfig(t, twoPools(""))), map[string]string{"RAILYARD_NODE_NAME": "node-a"})
	kube := fake.NewClientset()
	var lists atomic.Int32
	kube.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: no"))
	})
	stop := r.agent.watchPodJobs(context.Background(), kube)
	defer stop()
	for end := time.Now().Add(15 * time.Second); !strings.Contains(r.log.String(), "not allowed to list this node's pods"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no log line about the refusal:\n%s", r.log)
		}
	}
	n := lists.Load()
	time.Sleep(2 * time.Second) // client-go retries a failed list after about 1 s
	if got := lists.Load(); got != n {
		t.Errorf("the watch listed pods %d more times after it was refused", got-n)
	}
}
