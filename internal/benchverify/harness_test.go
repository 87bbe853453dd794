package benchverify

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	fakerest "k8s.io/client-go/rest/fake"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/fabric"
)

const (
	ns        = "ml"
	selector  = "job-name=train"
	gpuDriver = "gpu.nvidia.com"
)

// ncclLog is a saved NCCL INFO log of internal/bench's tests (real
// format strings of the NCCL release its name gives), its # SOURCE line
// stripped.
func ncclLog(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "nccldebug", name))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if !bytes.HasPrefix(first, []byte("# SOURCE:")) {
		t.Fatalf("%s: first line is not a # SOURCE: comment", name)
	}
	return rest
}

// byHost splits a log of several hosts into each host's lines, as each
// pod's own log holds them; lines with no host prefix (the bare "NCCL
// version" line rank 0 prints) go to first.
func byHost(data []byte, first string) map[string][]byte {
	out := map[string][]byte{}
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		host, _, ok := bytes.Cut(l, []byte(":"))
		h := string(host)
		if !ok || strings.ContainsAny(h, " []") {
			h = first
		}
		out[h] = append(out[h], l...)
	}
	return out
}

// fakeCluster is client-go's fake clientset with the pods' logs served
// as the API server serves them (LimitBytes applied, unless ignoreLimit
// plays a server that does not), recording each log request's limit.
// The fake's own GetLogs tells its reactors no pod name, so Pods(ns)
// answers GetLogs itself, through client-go's fake REST client as the
// fake clientset does.
type fakeCluster struct {
	*fake.Clientset
	mu          sync.Mutex
	logs        map[string][]byte // by pod name
	logErr      map[string]error
	ignoreLimit bool
	limits      []int64
}

func newFakeCluster(t *testing.T, logs map[string][]byte, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	return &fakeCluster{Clientset: fake.NewClientset(objs...), logs: logs, logErr: map[string]error{}}
}

// CoreV1 serves the pods' logs.
func (f *fakeCluster) CoreV1() typedcorev1.CoreV1Interface {
	return logCore{f.Clientset.CoreV1(), f}
}

type logCore struct {
	typedcorev1.CoreV1Interface
	f *fakeCluster
}

func (c logCore) Pods(namespace string) typedcorev1.PodInterface {
	return logPods{c.CoreV1Interface.Pods(namespace), c.f}
}

type logPods struct {
	typedcorev1.PodInterface
	f *fakeCluster
}

func (p logPods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	f := p.f
	f.mu.Lock()
	err := f.logErr[name]
	data := f.logs[name]
	if opts.LimitBytes != nil {
		f.limits = append(f.limits, *opts.LimitBytes)
		if !f.ignoreLimit && int64(len(data)) > *opts.LimitBytes {
			data = data[:*opts.LimitBytes]
		}
	}
	f.mu.Unlock()
	c := &fakerest.RESTClient{
		Client: fakerest.CreateHTTPClient(func(*http.Request) (*http.Response, error) {
			if err != nil {
				return nil, err
			}
			return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(data))}, nil
		}),
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		GroupVersion:         corev1.SchemeGroupVersion,
		VersionedAPIPath:     "/api/v1/namespaces/" + ns + "/pods/" + name + "/log",
	}
	return c.Request()
}

// jobPod is a running pod of the job on node, with its claims (made
// from templates: listed in its status).
func jobPod(name, node string, claims ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"job-name": "train"}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "worker"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, c := range claims {
		p.Status.ResourceClaimStatuses = append(p.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: c, ResourceClaimName: &c})
	}
	return p
}

// nic is one rdma.railyard.io device: its PCI address, RDMA device, rail
// and class to each GPU (by the GPU's PCI address).
type nic struct {
	pci, rdma string
	rail      int64
	classes   map[string]string
}

type gpu struct{ name, pci string }

func strAttr(s string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: &s}
}

// nodeSlices are a node's published devices: Railyard's NICs (as
// internal/dra names and attributes them) and the GPU driver's GPUs.
func nodeSlices(t *testing.T, node string, nics []nic, gpus []gpu) []runtime.Object {
	t.Helper()
	var nd []resourceapi.Device
	for _, n := range nics {
		name, err := dra.DeviceName(n.pci)
		if err != nil {
			t.Fatal(err)
		}
		rail := n.rail
		attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			dra.AttrPCIBusID: strAttr(n.pci), dra.AttrRDMADevice: strAttr(n.rdma), dra.AttrRail: {IntValue: &rail},
			dra.AttrLeaf: strAttr("leaf-" + itoa(n.rail)), dra.AttrPCIeRoot: strAttr("pci0000:00"),
		}
		for g, c := range n.classes {
			a, err := dra.GPUClassAttribute(g)
			if err != nil {
				t.Fatal(err)
			}
			attrs[a] = strAttr(c)
		}
		nd = append(nd, resourceapi.Device{Name: name, Attributes: attrs})
	}
	var gd []resourceapi.Device
	for _, g := range gpus {
		gd = append(gd, resourceapi.Device{Name: g.name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			dra.AttrPCIBusID: strAttr(g.pci), dra.AttrPCIeRoot: strAttr("pci0000:00")}})
	}
	return []runtime.Object{
		&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-rdma"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: dra.DriverName, NodeName: &node, Devices: nd,
			Pool: resourceapi.ResourcePool{Name: node + "/rdma", Generation: 1, ResourceSliceCount: 1}}},
		&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: gpuDriver, NodeName: &node, Devices: gd,
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}},
	}
}

// allocatedClaim is a claim holding the node's NICs and GPUs, with the
// NICs' network data as railyard-cni records it.
func allocatedClaim(t *testing.T, name, node string, nics []nic, gpus []gpu) *resourceapi.ResourceClaim {
	t.Helper()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
	for i, n := range nics {
		dev, err := dra.DeviceName(n.pci)
		if err != nil {
			t.Fatal(err)
		}
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "nic-" + itoa(int64(i)), Driver: dra.DriverName, Pool: node + "/rdma", Device: dev})
		c.Status.Devices = append(c.Status.Devices, resourceapi.AllocatedDeviceStatus{Driver: dra.DriverName, Pool: node + "/rdma", Device: dev,
			NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: "net" + itoa(int64(i+1)), IPs: []string{"192.168." + itoa(n.rail) + ".10/24"}}})
	}
	for i, g := range gpus {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "gpu-" + itoa(int64(i)), Driver: gpuDriver, Pool: node, Device: g.name})
	}
	return c
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// fabricNode is a Node with its railyard.io/fabric-ports.
func fabricNode(t *testing.T, name string, ports []fabric.Port) *corev1.Node {
	t.Helper()
	data, err := json.Marshal(ports)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{fabric.PortsAnnotation: string(data)}}}
}

// statuses are the report's verdicts by check ("nccl-gdr" may repeat:
// the worst is kept).
func statuses(rep *Report) map[string]bench.Status {
	rank := map[bench.Status]int{bench.StatusSkip: 0, bench.StatusInfo: 1, bench.StatusPass: 2, bench.StatusWarn: 3, bench.StatusFail: 4}
	out := map[string]bench.Status{}
	for _, v := range rep.Verdicts {
		if prev, ok := out[v.Check]; !ok || rank[v.Status] > rank[prev] {
			out[v.Check] = v.Status
		}
	}
	return out
}

func reason(rep *Report, check string) string {
	var out []string
	for _, v := range rep.Verdicts {
		if v.Check == check {
			out = append(out, v.Reason)
		}
	}
	return strings.Join(out, " | ")
}

func metavOpts() metav1.CreateOptions   { return metav1.CreateOptions{} }
func metavGet() metav1.GetOptions       { return metav1.GetOptions{} }
func metavUpdate() metav1.UpdateOptions { return metav1.UpdateOptions{} }
func metavDelete() metav1.DeleteOptions { return metav1.DeleteOptions{} }
