package multus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/skel"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/railyard-io/railyard/internal/cni/multustest"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// BinaryName is the name the stand-in runs under in a node's CNI bin dir:
// a test binary started under it is the plugin (Main).
const BinaryName = "multus-standin"

// Annotation keys Multus reads and writes (network-attachment-definition-client's
// NetworkAttachmentAnnot, NetworkStatusAnnot, and the resourceName key).
const (
	NetworksAnnotation      = "k8s.v1.cni.cncf.io/networks"
	NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
	ResourceNameAnnotation  = "k8s.v1.cni.cncf.io/resourceName"
)

// DeviceInfoDir is where Multus asks delegates to write device-info files
// (GetCNIDeviceInfoPath's baseDevInfoPath/cni).
const DeviceInfoDir = "/var/run/k8s.cni.cncf.io/devinfo/cni"

var nadResource = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}

// Conf is the stand-in's own network configuration.
type Conf struct {
	cnitypes.PluginConf
	Kubeconfig         string `json:"kubeconfig"`
	PodResourcesSocket string `json:"podResourcesSocket"`
	// BinDir holds the delegates (railyard-cni, its IPAM plugins).
	BinDir string `json:"binDir"`
	// CacheDir keeps each ADD's delegates for its DEL.
	CacheDir string `json:"cacheDir"`
}

// delegateCall is one delegate of one pod, as ADD called it.
type delegateCall struct {
	Conf    json.RawMessage      `json:"conf"`
	Runtime *libcni.RuntimeConf  `json:"runtime"`
	Status  multustest.NetStatus `json:"status"`
}

// Main runs the plugin (skel reads the CNI environment) and returns the
// exit code.
func Main() int {
	err := skel.PluginMainFuncsWithError(skel.CNIFuncs{Add: add, Del: del, Check: check, Status: func(*skel.CmdArgs) error { return nil }},
		version.All, "Multus thin plugin stand-in (tests)")
	if err != nil {
		_ = err.Print()
		return 1
	}
	return 0
}

func load(args *skel.CmdArgs) (*Conf, error) {
	var c Conf
	if err := json.Unmarshal(args.StdinData, &c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if c.Kubeconfig == "" || c.BinDir == "" || c.CacheDir == "" {
		return nil, errors.New("config: kubeconfig, binDir and cacheDir are required")
	}
	return &c, nil
}

// cniArg returns one K8S_* argument of CNI_ARGS.
func cniArg(args, key string) string {
	for _, kv := range strings.Split(args, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

func add(args *skel.CmdArgs) error {
	c, err := load(args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ns, name := cniArg(args.Args, "K8S_POD_NAMESPACE"), cniArg(args.Args, "K8S_POD_NAME")
	pod, err := kc.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", ns, name, err)
	}
	empty := &current.Result{CNIVersion: c.CNIVersion}
	annotation := pod.Annotations[NetworksAnnotation]
	if annotation == "" {
		return cnitypes.PrintResult(empty, c.CNIVersion)
	}
	sels, err := multustest.ParseNetworks(annotation, pod.Namespace)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	var pods []podlist.Pod
	if c.PodResourcesSocket != "" {
		pl := podlist.New(c.PodResourcesSocket)
		defer pl.Close()
		if pods, err = pl.List(ctx); err != nil {
			return fmt.Errorf("PodResources: %w", err)
		}
	}
	used := map[string]int{} // device IDs taken per resource (Multus's resourceMap index)
	cni := libcni.NewCNIConfigWithCacheDir([]string{c.BinDir}, filepath.Join(c.CacheDir, "libcni"), nil)
	var calls []delegateCall
	for i, sel := range sels {
		nad, err := dc.Resource(nadResource).Namespace(sel.Namespace).Get(ctx, sel.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("network %s/%s: %w", sel.Namespace, sel.Name, err)
		}
		config, _, _ := unstructured.NestedString(nad.Object, "spec", "config")
		resource := nad.GetAnnotations()[ResourceNameAnnotation]
		device := ""
		if resource != "" {
			ids := deviceIDs(pods, pod.Namespace, pod.Name, resource)
			if used[resource] >= len(ids) {
				return fmt.Errorf("network %s/%s: pod has no device of %s left (PodResources: %v)", sel.Namespace, sel.Name, resource, ids)
			}
			device = ids[used[resource]]
			used[resource]++
		}
		conf := []byte(config)
		if device != "" {
			if conf, err = multustest.Delegate(conf, device); err != nil {
				return err
			}
		}
		delegate, err := multustest.DelegateName(conf, &sel)
		if err != nil {
			return err
		}
		ifName := sel.InterfaceRequest
		if ifName == "" {
			ifName = fmt.Sprintf("net%d", i+1) // Multus: "net" + index from 1
		}
		rt := multustest.RuntimeConf(delegate, ifName, multustest.Pod{
			Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), SandboxID: args.ContainerID, Netns: args.Netns,
		}, device, DeviceInfoDir)
		res, err := addDelegate(ctx, cni, conf, rt)
		if err != nil {
			// Multus undoes the delegates it added (delPlugins) and fails.
			_ = delAll(ctx, cni, calls)
			return fmt.Errorf("error adding container to network %q: %w", delegate, err)
		}
		st, err := multustest.NetworkStatus(res, delegate, readDeviceInfo(rt))
		if err != nil {
			_ = delAll(ctx, cni, append(calls, delegateCall{Conf: conf, Runtime: rt}))
			return err
		}
		calls = append(calls, delegateCall{Conf: conf, Runtime: rt, Status: st})
	}
	if err := saveCache(c.CacheDir, args.ContainerID, calls); err != nil {
		_ = delAll(ctx, cni, calls)
		return err
	}
	statuses := make([]multustest.NetStatus, len(calls))
	for i, call := range calls {
		statuses[i] = call.Status
	}
	b, err := json.Marshal(statuses)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{NetworkStatusAnnotation: string(b)}}})
	if err != nil {
		return err
	}
	if _, err := kc.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, ktypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting network-status: %w", err)
	}
	return cnitypes.PrintResult(empty, c.CNIVersion)
}

func check(args *skel.CmdArgs) error {
	_, err := load(args)
	return err
}

func del(args *skel.CmdArgs) error {
	c, err := load(args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(c.CacheDir, args.ContainerID+".json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var calls []delegateCall
	if err := json.Unmarshal(b, &calls); err != nil {
		return fmt.Errorf("delegate cache %s: %w", path, err)
	}
	cni := libcni.NewCNIConfigWithCacheDir([]string{c.BinDir}, filepath.Join(c.CacheDir, "libcni"), nil)
	if err := delAll(ctx, cni, calls); err != nil {
		return err
	}
	return os.Remove(path)
}

// isList reports whether conf is a conflist (LoadDelegateNetConf: a
// config without "type").
func isList(conf []byte) bool {
	var m struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(conf, &m) == nil && m.Type == ""
}

func addDelegate(ctx context.Context, cni *libcni.CNIConfig, conf []byte, rt *libcni.RuntimeConf) (cnitypes.Result, error) {
	if isList(conf) {
		l, err := libcni.NetworkConfFromBytes(conf)
		if err != nil {
			return nil, err
		}
		return cni.AddNetworkList(ctx, l, rt)
	}
	//lint:ignore SA1019 Multus calls single configs through it (conflistAdd/confAdd).
	nc, err := libcni.ConfFromBytes(conf)
	if err != nil {
		return nil, err
	}
	return cni.AddNetwork(ctx, nc, rt)
}

// delAll calls DEL of every delegate, last first, and returns every error.
func delAll(ctx context.Context, cni *libcni.CNIConfig, calls []delegateCall) error {
	var errs []error
	for i := len(calls) - 1; i >= 0; i-- {
		conf, rt := []byte(calls[i].Conf), calls[i].Runtime
		if isList(conf) {
			l, err := libcni.NetworkConfFromBytes(conf)
			if err == nil {
				err = cni.DelNetworkList(ctx, l, rt)
			}
			errs = append(errs, err)
			continue
		}
		//lint:ignore SA1019 as addDelegate.
		nc, err := libcni.ConfFromBytes(conf)
		if err == nil {
			err = cni.DelNetwork(ctx, nc, rt)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// readDeviceInfo is the delegate's device-info document, or nil
// (getDelegateDeviceInfo reads CNIDeviceInfoFile whatever wrote it).
func readDeviceInfo(rt *libcni.RuntimeConf) json.RawMessage {
	p, _ := rt.CapabilityArgs["CNIDeviceInfoFile"].(string)
	if p == "" {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil || !json.Valid(b) {
		return nil
	}
	return b
}

// deviceIDs are the device IDs of resource kubelet gave pod's containers,
// in container order (GetResourceMapFromClient).
func deviceIDs(pods []podlist.Pod, ns, name, resource string) []string {
	var ids []string
	for _, p := range pods {
		if p.Namespace != ns || p.Name != name {
			continue
		}
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				if d.Resource == resource {
					ids = append(ids, d.IDs...)
				}
			}
		}
	}
	return ids
}

func saveCache(dir, containerID string, calls []delegateCall) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(calls)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, containerID+".json"), b, 0o600)
}
