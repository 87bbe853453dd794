package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/containerdev"
)

// putGIDRecord writes railyard-cni's attachment record of device key in
// sandbox cid with its HCA's RoCE v2 GID index (pod nil: a record
// without the pod, as railyard-cni wrote before it recorded it).
func putGIDRecord(t *testing.T, dir, key, cid, hca, ifname string, index int, pod *state.PodRef) {
	t.Helper()
	r := &state.Record{Key: key, Network: "rail", ContainerID: cid, IfName: ifname, Phase: state.PhaseAttached,
		PCI: key, RDMA: hca, Pod: pod, Config: []byte("{}"),
		GID: &containerdev.HCAGID{HCA: hca, Netdev: ifname, Addr: "192.168.50.10", Port: 1, Index: index}}
	if err := (state.Store{Dir: dir}).Put(r); err != nil {
		t.Fatal(err)
	}
}

func newGIDEvents(dir string, kube *fake.Clientset) (*gidEvents, *bytes.Buffer) {
	var log bytes.Buffer
	// A clock that moves a second at every reading: two Events are two
	// objects, never one name created twice.
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	g := &gidEvents{dirs: []string{dir}, log: slog.New(slog.NewTextHandler(&log, nil)), node: "gpu-1",
		now: func() time.Time { t0 = t0.Add(time.Second); return t0 }}
	if kube != nil {
		g.kube = kube
	}
	return g, &log
}

func podEvents(t *testing.T, kube *fake.Clientset, ns string) []corev1.Event {
	t.Helper()
	l, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// TestGIDMismatchIsAnEventOnThePodOnceFakeClientset: a sandbox whose two
// HCAs have their RoCE v2 GIDs at 3 and 5 gets one Warning Event on its
// pod (reason, the pod by name and UID, each HCA's index and the fix) and
// one log line, however often the records are read; a sandbox whose
// HCAs agree gets neither; a new sandbox of the same pod (a restarted
// sandbox) is told again.
func TestGIDMismatchIsAnEventOnThePodOnceFakeClientset(t *testing.T) {
	dir := t.TempDir()
	pod := &state.PodRef{Namespace: "ml", Name: "trainer-0", UID: "uid-1"}
	putGIDRecord(t, dir, "0000:03:00.2", "sb1", "mlx5_3", "net1", 3, pod)
	putGIDRecord(t, dir, "0000:03:00.3", "sb1", "mlx5_4", "net2", 5, pod)
	ok := &state.PodRef{Namespace: "ml", Name: "trainer-1", UID: "uid-2"}
	putGIDRecord(t, dir, "0000:04:00.2", "sb2", "mlx5_5", "net1", 3, ok)
	putGIDRecord(t, dir, "0000:04:00.3", "sb2", "mlx5_6", "net2", 3, ok)
	kube := fake.NewClientset()
	g, log := newGIDEvents(dir, kube)
	for range 3 {
		g.check(context.Background())
	}
	evs := podEvents(t, kube, "ml")
	if len(evs) != 1 {
		t.Fatalf("%d events after three checks, want 1: %+v", len(evs), evs)
	}
	e := evs[0]
	want := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "ml", Name: "trainer-0", UID: "uid-1"}
	if e.InvolvedObject != want {
		t.Errorf("involvedObject %+v, want %+v", e.InvolvedObject, want)
	}
	if e.Reason != ReasonGIDIndexMismatch || e.Type != corev1.EventTypeWarning || e.Source.Component != "railyard-agent" || e.Source.Host != "gpu-1" {
		t.Errorf("event reason %q type %q source %+v", e.Reason, e.Type, e.Source)
	}
	for _, s := range []string{"mlx5_3 port 1: index 3", "mlx5_4 port 1: index 5", "leave NCCL_IB_GID_INDEX unset"} {
		if !strings.Contains(e.Message, s) {
			t.Errorf("event message lacks %q: %s", s, e.Message)
		}
	}
	if n := strings.Count(log.String(), "RoCE GID indexes differ"); n != 1 {
		t.Errorf("%d log lines of the mismatch, want 1:\n%s", n, log)
	}
	for _, s := range []string{"pod=ml/trainer-0", "sandbox=sb1", `gids="mlx5_3=3,mlx5_4=5"`, "leave NCCL_IB_GID_INDEX unset"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
	if strings.Contains(log.String(), "trainer-1") {
		t.Errorf("the sandbox whose HCAs agree is logged:\n%s", log)
	}
	// The sandbox goes (DEL) and the pod's next one mismatches again.
	for _, k := range []string{"0000:03:00.2", "0000:03:00.3"} {
		if err := (state.Store{Dir: dir}).Delete(k); err != nil {
			t.Fatal(err)
		}
	}
	g.check(context.Background())
	putGIDRecord(t, dir, "0000:03:00.2", "sb3", "mlx5_3", "net1", 3, pod)
	putGIDRecord(t, dir, "0000:03:00.3", "sb3", "mlx5_4", "net2", 5, pod)
	g.check(context.Background())
	g.check(context.Background())
	if n := len(podEvents(t, kube, "ml")); n != 2 {
		t.Errorf("%d events after the pod's second sandbox, want 2", n)
	}
}

// TestGIDMismatchWithoutPodIsLoggedOnlyFakeClientset: records without
// the pod (an older railyard-cni, or no K8S_POD_* in CNI_ARGS) are
// logged once, saying that no Event can be recorded, and create none.
func TestGIDMismatchWithoutPodIsLoggedOnlyFakeClientset(t *testing.T) {
	dir := t.TempDir()
	putGIDRecord(t, dir, "0000:03:00.2", "sb1", "mlx5_3", "net1", 3, nil)
	putGIDRecord(t, dir, "0000:03:00.3", "sb1", "mlx5_4", "net2", 5, nil)
	kube := fake.NewClientset()
	g, log := newGIDEvents(dir, kube)
	g.check(context.Background())
	g.check(context.Background())
	if n := len(kube.Actions()); n != 0 {
		t.Errorf("%d API calls, want none: %v", n, kube.Actions())
	}
	if n := strings.Count(log.String(), "RoCE GID indexes differ"); n != 1 {
		t.Errorf("%d log lines of the mismatch, want 1:\n%s", n, log)
	}
	for _, s := range []string{"sandbox=sb1", "event=\"none: the pod is unknown\"", `gids="mlx5_3=3,mlx5_4=5"`} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
}

// TestGIDMismatchWithoutAPIServerIsLoggedOnly: without a Kubernetes
// client the mismatch is one log line that says why there is no Event.
func TestGIDMismatchWithoutAPIServerIsLoggedOnly(t *testing.T) {
	dir := t.TempDir()
	pod := &state.PodRef{Namespace: "ml", Name: "trainer-0"}
	putGIDRecord(t, dir, "0000:03:00.2", "sb1", "mlx5_3", "net1", 3, pod)
	putGIDRecord(t, dir, "0000:03:00.3", "sb1", "mlx5_4", "net2", 5, pod)
	g, log := newGIDEvents(dir, nil)
	g.check(context.Background())
	g.check(context.Background())
	if n := strings.Count(log.String(), "RoCE GID indexes differ"); n != 1 || !strings.Contains(log.String(), "no API server") {
		t.Errorf("want one line saying there is no API server:\n%s", log)
	}
}

// TestGIDEventRetriedAfterAnAPIErrorFakeClientset: an Event the API
// server fails to create (not a refusal) is tried again at the next
// check, and then recorded once; a refusal (forbidden: the chart without
// cni.podEvents) is not tried again.
func TestGIDEventRetriedAfterAnAPIErrorFakeClientset(t *testing.T) {
	dir := t.TempDir()
	pod := &state.PodRef{Namespace: "ml", Name: "trainer-0", UID: "uid-1"}
	putGIDRecord(t, dir, "0000:03:00.2", "sb1", "mlx5_3", "net1", 3, pod)
	putGIDRecord(t, dir, "0000:03:00.3", "sb1", "mlx5_4", "net2", 5, pod)
	kube := fake.NewClientset()
	fail := 1
	kube.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail > 0 {
			fail--
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	g, log := newGIDEvents(dir, kube)
	g.check(context.Background())
	if n := len(podEvents(t, kube, "ml")); n != 0 {
		t.Fatalf("%d events after a failed create", n)
	}
	g.check(context.Background())
	g.check(context.Background())
	if n := len(podEvents(t, kube, "ml")); n != 1 {
		t.Errorf("%d events after the retry, want 1", n)
	}
	if n := strings.Count(log.String(), "RoCE GID indexes differ"); n != 1 {
		t.Errorf("%d log lines of the mismatch, want 1:\n%s", n, log)
	}

	denied := fake.NewClientset()
	creates := 0
	denied.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("RBAC"))
	})
	g, _ = newGIDEvents(dir, denied)
	for range 3 {
		g.check(context.Background())
	}
	if creates != 1 {
		t.Errorf("%d creates when forbidden, want 1", creates)
	}
}

// TestCNIStateDirs: --cni-state-dir's list without empty entries or
// repeats; "" is none.
func TestCNIStateDirs(t *testing.T) {
	if got := cniStateDirs(" /var/lib/cni/railyard, ,/var/lib/railyard/cni,/var/lib/cni/railyard"); strings.Join(got, "|") != "/var/lib/cni/railyard|/var/lib/railyard/cni" {
		t.Errorf("cniStateDirs = %q", got)
	}
	if got := cniStateDirs(""); got != nil {
		t.Errorf("cniStateDirs(\"\") = %q", got)
	}
}

// TestAgentLogsGIDMismatchOfCNIStateDir: the agent as main runs it
// (--cni-state-dir, no API server) reads railyard-cni's records at start
// and logs a sandbox's GID index mismatch once, saying why there is no
// Event.
func TestAgentLogsGIDMismatchOfCNIStateDir(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 1)
	pod := &state.PodRef{Namespace: "ml", Name: "trainer-0", UID: "uid-1"}
	putGIDRecord(t, e.cniState(), "0000:03:00.2", "sb1", "mlx5_3", "net1", 3, pod)
	putGIDRecord(t, e.cniState(), "0000:03:00.3", "sb1", "mlx5_4", "net2", 5, pod)
	r := start(t, e.args(e.writeConfig(t, twoPools(`""`))), nil)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(r.log.String(), "RoCE GID indexes differ") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	log := r.log.String()
	for _, s := range []string{"RoCE GID indexes differ across the pod's HCAs", "pod=ml/trainer-0", `gids="mlx5_3=3,mlx5_4=5"`, "no API server", "leave NCCL_IB_GID_INDEX unset"} {
		if !strings.Contains(log, s) {
			t.Errorf("agent log lacks %q:\n%s", s, log)
		}
	}
}
