//go:build e2e

package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// MultiConfig describes a multi-node cluster: a control plane on the host
// (etcd, kube-apiserver, kube-scheduler, kube-controller-manager), a
// control-plane node and GPU nodes, each node a kubelet and a containerd in
// namespaces of its own, and a rail fabric. See docs/e2e.md.
type MultiConfig struct {
	// Dir is the cluster's directory (absolute; not below a path a node
	// binds over, such as /run). Its state.json lets DownMulti clean up.
	Dir string
	// K8sBinDir holds kube-apiserver, kube-scheduler,
	// kube-controller-manager, kubelet and kubectl.
	K8sBinDir string
	// CNIBinDir holds the bridge, host-local and loopback plugins; each
	// node gets copies in a CNI bin dir of its own.
	CNIBinDir string
	// ContainerdBinDir holds containerd v2 (CDI); "" runs the host's.
	ContainerdBinDir string
	// CoreDNSBinDir holds a static coredns: the cluster DNS (kube-dns,
	// 10.0.0.10) runs it on the control-plane node and every kubelet
	// points its pods at it; "" starts no cluster DNS.
	CoreDNSBinDir string
	// WhereaboutsBinDir holds the whereabouts IPAM plugin, copied into
	// every node's CNI bin dir, and WhereaboutsCRDs the directory of its
	// CRDs, applied at the start; its networks name
	// ClusterInfo.WhereaboutsConfig. "" installs no whereabouts.
	WhereaboutsBinDir, WhereaboutsCRDs string
	// BusyboxPath is the static busybox of the test image (default
	// /bin/busybox).
	BusyboxPath string
	// Machines is the built-in machine model of each GPU node (its fake
	// sysfs tree, device nodes and NICs); one entry per GPU node.
	Machines []string
	// NodeInit is the command line of each node's PID 1 (a program that
	// calls NodeInit); the node's directory is appended.
	NodeInit []string
	// GPUDRA is the command line of the STAND-IN GPU DRA driver
	// (ServeStandinGPUDRA), started on every GPU node with its node's
	// StandinGPUDRAOptions.Args appended; nil starts none.
	GPUDRA []string
	// GroupScheduling turns on Kubernetes 1.37's group scheduling
	// (GroupSchedulingGates on the apiserver, scheduler and controller
	// manager, and the scheduling.k8s.io/v1beta1 API: PodGroups and
	// Workloads with topology constraints, KEP-4671 and KEP-5732).
	GroupScheduling bool
	// Bridge is the cluster bridge (default ry-mn0); Subnet its network
	// (default 10.216.0.0/24): .1 is the host (the API server), .10 the
	// control-plane node, .10+i GPU node i.
	Bridge, Subnet string
	// PodCIDR is split into a /24 per node (default 10.244.0.0/16);
	// RailCIDR into a /24 per rail (default 10.60.0.0/16).
	PodCIDR, RailCIDR string
	// Logf receives progress messages (default: none).
	Logf func(format string, args ...any)
}

func (c *MultiConfig) defaults() {
	if c.BusyboxPath == "" {
		c.BusyboxPath = "/bin/busybox"
	}
	if c.Bridge == "" {
		c.Bridge = "ry-mn0"
	}
	if c.Subnet == "" {
		c.Subnet = "10.216.0.0/24"
	}
	if c.PodCIDR == "" {
		c.PodCIDR = "10.244.0.0/16"
	}
	if c.RailCIDR == "" {
		c.RailCIDR = "10.60.0.0/16"
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// NodeInfo is one node of a multi-node cluster, as cluster.json records it.
type NodeInfo struct {
	Name    string `json:"name"`
	Index   int    `json:"index"`
	Role    string `json:"role"` // "control-plane" or "gpu"
	IP      string `json:"ip"`
	PodCIDR string `json:"podCIDR"`
	// Machine is a GPU node's model; Rails its NIC netdev per rail index.
	Machine string   `json:"machine,omitempty"`
	Rails   []string `json:"rails,omitempty"`
	// Dir is the node's directory on the host; CNIConfDir and CNIBinDir
	// are its containerd's CNI directories (the bin dir is seen inside
	// the node at ClusterInfo.CNIBinDir).
	Dir              string `json:"dir"`
	CNIConfDir       string `json:"cniConfDir"`
	CNIBinDir        string `json:"cniBinDir"`
	ContainerdSocket string `json:"containerdSocket"`
	HostLink         string `json:"hostLink"`
	PID              int    `json:"pid"`
}

// ClusterInfo is what <dir>/cluster.json says of a running cluster.
type ClusterInfo struct {
	Dir        string `json:"dir"`
	Kubeconfig string `json:"kubeconfig"`
	K8sBinDir  string `json:"k8sBinDir"`
	APIServer  string `json:"apiServer"`
	// KubernetesVersion is the release the cluster runs, as its
	// kube-apiserver reports it (/version's gitVersion, e.g. v1.37.2).
	KubernetesVersion string `json:"kubernetesVersion"`
	// MachineDir, CNIBinDir and CDIDir are the same paths on every node,
	// each a bind mount of the node's own directory: the fake machine
	// (sysfs/, dev/), the CNI bin dir and the CDI spec directory its
	// containerd reads (a DaemonSet's one cdiSpecDir serves every node).
	MachineDir string `json:"machineDir"`
	CNIBinDir  string `json:"cniBinDir"`
	CDIDir     string `json:"cdiDir"`
	// WhereaboutsConfig is whereabouts' flat configuration file (its
	// datastore and kubeconfig) that a network's ipam names as
	// configuration_path; "" without whereabouts.
	WhereaboutsConfig string `json:"whereaboutsConfig,omitempty"`
	// GPUDRA: every GPU node runs the stand-in GPU DRA driver
	// (gpu.nvidia.com, its DeviceClass created; up.sh --gpu-dra).
	GPUDRA bool `json:"gpuDRA,omitempty"`
	// GroupScheduling: the group-scheduling gates and API are on
	// (MultiConfig.GroupScheduling; up.sh --group-scheduling).
	GroupScheduling bool       `json:"groupScheduling,omitempty"`
	Nodes           []NodeInfo `json:"nodes"`
	Rails           []RailInfo `json:"rails"`
	FabricPID       int        `json:"fabricPID"`
	// ServerPID is the process that runs the cluster (StartMulti's
	// caller); Bridge and Cgroups are what it made on the host.
	ServerPID int      `json:"serverPID"`
	Bridge    string   `json:"bridge"`
	Cgroups   []string `json:"cgroups"`
	// Timings of the start, by step.
	Timings []Timing `json:"timings"`
}

// GPUNodes returns the GPU nodes.
func (i *ClusterInfo) GPUNodes() []NodeInfo {
	var out []NodeInfo
	for _, n := range i.Nodes {
		if n.Role == RoleGPU {
			out = append(out, n)
		}
	}
	return out
}

// Node roles.
const (
	RoleControlPlane = "control-plane"
	RoleGPU          = "gpu"
)

const clusterInfoFile = "cluster.json"

// LoadClusterInfo reads <dir>/cluster.json.
func LoadClusterInfo(dir string) (*ClusterInfo, error) {
	data, err := os.ReadFile(filepath.Join(dir, clusterInfoFile))
	if err != nil {
		return nil, fmt.Errorf("cluster info: %w", err)
	}
	var info ClusterInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("cluster info %s: %w", dir, err)
	}
	return &info, nil
}

// MultiCluster is a running multi-node cluster. Its Cluster gives the API
// helpers (CreatePod, Exec, Kubectl...) of the single-node framework.
type MultiCluster struct {
	*Cluster
	Info  ClusterInfo
	cfg   MultiConfig
	state *multiState
	nodes []*nsNode

	mu    sync.Mutex
	procs []*Process // in start order
	done  bool
}

// AttachMulti connects to the running cluster in dir (up.sh's) for tests.
func AttachMulti(dir string) (*MultiCluster, error) {
	info, err := LoadClusterInfo(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: Config{K8sBinDir: info.K8sBinDir}, dir: dir, Kubeconfig: info.Kubeconfig, stopped: true}
	if c.RESTConfig, err = clientcmd.BuildConfigFromFlags("", info.Kubeconfig); err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	c.RESTConfig.QPS, c.RESTConfig.Burst = 100, 200
	if c.Client, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	return &MultiCluster{Cluster: c, Info: *info, done: true}, nil
}

func sleepShort() { time.Sleep(20 * time.Millisecond) }

// refusedPrefixes are where a cluster directory may not be: a node binds
// its own directory over them and would no longer see the cluster's.
var refusedPrefixes = []string{"/run", "/var/run", "/var/lib/kubelet", "/var/lib/cni", "/var/log"}

// StartMulti starts the cluster and waits until every node is Ready. On
// error it tears down what it started.
func StartMulti(ctx context.Context, cfg MultiConfig) (_ *MultiCluster, err error) {
	cfg.defaults()
	if os.Geteuid() != 0 {
		return nil, errors.New("cluster: must run as root")
	}
	if !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("cluster: directory %q is not absolute", cfg.Dir)
	}
	for _, p := range refusedPrefixes {
		if cfg.Dir == p || strings.HasPrefix(cfg.Dir, p+"/") {
			return nil, fmt.Errorf("cluster: directory %s is below %s, which every node replaces with its own", cfg.Dir, p)
		}
	}
	if len(cfg.Machines) == 0 || len(cfg.NodeInit) == 0 {
		return nil, errors.New("cluster: needs at least one GPU node (Machines) and a NodeInit")
	}
	for _, b := range []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubelet", "kubectl"} {
		if _, err := os.Stat(filepath.Join(cfg.K8sBinDir, b)); err != nil {
			return nil, fmt.Errorf("cluster: %w (run hack/cluster/build.sh k8s)", err)
		}
	}
	if s, err := loadMultiState(cfg.Dir); err == nil {
		if processAlive(s.OwnerPID, s.OwnerCmdline) {
			return nil, fmt.Errorf("cluster: %s is already up (server pid %d); hack/cluster/down.sh %s first", cfg.Dir, s.OwnerPID, cfg.Dir)
		}
		cfg.Logf("cluster: removing what a killed run left in %s", cfg.Dir)
		if err := teardownMulti(s); err != nil {
			return nil, err
		}
	}
	bridge, err := newBridgeNetwork(cfg.Bridge, cfg.Subnet)
	if err != nil {
		return nil, err
	}
	_, podNet, err := net.ParseCIDR(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("cluster: pod CIDR: %w", err)
	}
	_, railNet, err := net.ParseCIDR(cfg.RailCIDR)
	if err != nil {
		return nil, fmt.Errorf("cluster: rail CIDR: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	m := &MultiCluster{cfg: cfg, state: &multiState{Dir: cfg.Dir, OwnerPID: os.Getpid()}}
	if m.state.OwnerCmdline, err = procCmdline(os.Getpid()); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	m.Info = ClusterInfo{
		Dir: cfg.Dir, K8sBinDir: cfg.K8sBinDir, GroupScheduling: cfg.GroupScheduling,
		Kubeconfig: filepath.Join(cfg.Dir, "admin.kubeconfig"),
		MachineDir: filepath.Join(cfg.Dir, "machine"),
		CDIDir:     filepath.Join(cfg.Dir, "cdi"),
		CNIBinDir:  filepath.Join(cfg.Dir, "cni-bin"),
	}
	defer func() {
		if err != nil {
			if terr := m.Stop(); terr != nil {
				err = errors.Join(err, fmt.Errorf("teardown after failed start: %w", terr))
			}
		}
	}()
	if err := m.state.save(); err != nil {
		return nil, err
	}
	step := func(name string, f func() error) error {
		start := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("cluster: %s: %w", name, err)
		}
		d := time.Since(start)
		m.Info.Timings = append(m.Info.Timings, Timing{Step: name, Duration: d})
		cfg.Logf("cluster: %s took %v", name, d.Round(time.Millisecond))
		return nil
	}
	logPath := func(name string) string { return filepath.Join(cfg.Dir, "logs", name+".log") }

	// The nodes and rails, all addresses decided up front.
	gw := bridge.NodeIP.String()
	nodeIP := func(i int) string {
		ip := make(net.IP, 4)
		copy(ip, bridge.Subnet.IP.To4())
		ip[3] = byte(10 + i)
		return ip.String()
	}
	names := []string{"control-plane"}
	for i := range cfg.Machines {
		names = append(names, "gpu-"+strconv.Itoa(i+1))
	}
	for i, name := range names {
		p := podNet.IP.To4()
		nd := filepath.Join(cfg.Dir, "nodes", name)
		n := &nsNode{NodeInfo: NodeInfo{
			Name: name, Index: i, Role: RoleGPU, IP: nodeIP(i),
			PodCIDR: fmt.Sprintf("%d.%d.%d.0/24", p[0], p[1], i), Dir: nd,
			CNIConfDir: filepath.Join(nd, "containerd", "cni-conf"), CNIBinDir: filepath.Join(nd, "cni-bin"),
			HostLink: fmt.Sprintf("%s-%d", cfg.Bridge, i),
		}}
		if i == 0 {
			n.Role = RoleControlPlane
		} else {
			n.Machine = cfg.Machines[i-1]
		}
		if len(n.HostLink) > 15 {
			return nil, fmt.Errorf("cluster: bridge name %q too long for its links", cfg.Bridge)
		}
		m.nodes = append(m.nodes, n)
	}
	if err := step("machines", func() error { return m.writeMachines(ctx, railNet) }); err != nil {
		return nil, err
	}

	if err := step("network", func() error {
		if err := bridge.create(); err != nil {
			return err
		}
		m.state.Bridge = cfg.Bridge
		if err := m.state.save(); err != nil {
			return err
		}
		return pinBridgeMAC(cfg.Bridge)
	}); err != nil {
		return nil, err
	}
	var p *pki
	if err := step("pki", func() error {
		p, err = writePKI(filepath.Join(cfg.Dir, "pki"), []net.IP{net.IPv4(127, 0, 0, 1), bridge.NodeIP, net.ParseIP(kubernetesServiceIP)})
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("control plane", func() error { return m.startControlPlane(ctx, p, gw) }); err != nil {
		return nil, err
	}
	v, err := m.Client.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("cluster: the apiserver's version: %w", err)
	}
	m.Info.KubernetesVersion = v.GitVersion
	cfg.Logf("cluster: Kubernetes %s (kube-apiserver's /version; binaries from %s)", v.GitVersion, cfg.K8sBinDir)
	if err := step("fabric", func() error {
		proc, err := startFabric(ctx, m.Info.Rails, logPath("fabric"))
		if err := m.track(proc, err); err != nil {
			return err
		}
		m.Info.FabricPID = proc.PID()
		return nil
	}); err != nil {
		return nil, err
	}
	for _, n := range m.nodes {
		if err := step("node "+n.Name, func() error { return m.startNode(ctx, n, gw, bridge) }); err != nil {
			return nil, err
		}
	}
	if err := step("nodes ready", func() error { return m.waitNodes(ctx) }); err != nil {
		return nil, err
	}
	if len(cfg.GPUDRA) > 0 {
		if err := step("stand-in GPU DRA drivers", func() error { return m.startGPUDRA(ctx) }); err != nil {
			return nil, err
		}
		m.Info.GPUDRA = true
	}
	if cfg.WhereaboutsCRDs != "" {
		if err := step("whereabouts CRDs", func() error { return m.applyCRDs(ctx, cfg.WhereaboutsCRDs) }); err != nil {
			return nil, err
		}
		// whereabouts v0.9.2 refuses to run without a flat configuration
		// file ("config file not found"), whatever the network's ipam
		// says: the networks name this one (configuration_path).
		m.Info.WhereaboutsConfig = filepath.Join(cfg.Dir, "whereabouts.conf")
		conf := fmt.Sprintf(`{"datastore": "kubernetes", "kubernetes": {"kubeconfig": %q}}`, filepath.Join(cfg.Dir, "whereabouts.kubeconfig"))
		if err := os.WriteFile(m.Info.WhereaboutsConfig, []byte(conf+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	if cfg.CoreDNSBinDir != "" {
		if err := step("cluster DNS", func() error {
			return deployCoreDNS(ctx, m.Cluster.Client, cfg.CoreDNSBinDir, m.nodes[0].Name)
		}); err != nil {
			return nil, err
		}
	}
	for _, n := range m.nodes {
		m.Info.Nodes = append(m.Info.Nodes, n.NodeInfo)
	}
	m.Info.ServerPID, m.Info.Bridge, m.Info.Cgroups = os.Getpid(), cfg.Bridge, m.state.Cgroups
	data, err := json.MarshalIndent(m.Info, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, clusterInfoFile), data, 0o644); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return m, nil
}

// track records a started process (in memory and in the state file).
func (m *MultiCluster) track(p *Process, err error) error {
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.procs = append(m.procs, p)
	args, cerr := procCmdline(p.PID())
	if cerr != nil {
		return fmt.Errorf("track %s: %w", p.Name, cerr)
	}
	m.state.Processes = append(m.state.Processes, trackedProcess{PID: p.PID(), Cmdline: args})
	return m.state.save()
}

// Stop stops every process (newest first: kubelets and containerds, then
// the nodes' PID 1s, the fabric, the control plane) and removes by path
// what the cluster left on the host. Calling it twice is harmless.
func (m *MultiCluster) Stop() error {
	m.mu.Lock()
	if m.done {
		m.mu.Unlock()
		return nil
	}
	m.done = true
	procs := m.procs
	m.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := teardownMulti(m.state); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ImportImage imports an image archive (OCI layout or docker-archive, as
// `make images` writes) into every node's containerd.
func (m *MultiCluster) ImportImage(ctx context.Context, archive string) error {
	for _, n := range m.nodes {
		if _, err := n.ctrd.ctr(ctx, "images", "import", archive); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return nil
}

func (m *MultiCluster) waitNodes(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, n := range m.nodes {
		name := n.Name
		err := poll(wctx, 200*time.Millisecond, "node "+name+" Ready", func(ctx context.Context) (bool, error) {
			node, err := m.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return NodeReady(node), nil
		})
		if err != nil {
			return err
		}
		// No node lifecycle controller: nothing else removes it.
		if err := removeNotReadyTaint(wctx, m.Client, name); err != nil {
			return err
		}
	}
	// Pods need their namespace's service account (ServiceAccount
	// admission) and the CA config map their token volume projects.
	return poll(wctx, 200*time.Millisecond, "default service account and kube-root-ca.crt", func(ctx context.Context) (bool, error) {
		if _, err := m.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, err
		}
		_, err := m.Client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, err
	})
}

// controlPlaneTaint keeps ordinary pods off the control-plane node.
var controlPlaneTaint = corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}
