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
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config says where the framework finds its binaries and where it works.
type Config struct {
	// K8sBinDir holds kube-apiserver, kube-scheduler, kubelet and kubectl
	// (hack/cluster/build.sh k8s builds them into _output/k8s/bin).
	K8sBinDir string
	// CNIBinDir holds the bridge, host-local and loopback CNI plugins
	// (hack/cluster/install-cni.sh installs them into _output/k8s/cni).
	CNIBinDir string
	// ProjectBinDir holds the project's own binaries (make build puts
	// railyard, railyard-agent and railyard-cni in bin/); see ProjectBin.
	ProjectBinDir string
	// BusyboxPath is a static busybox binary for the pod image
	// (default /bin/busybox from Debian's busybox-static).
	BusyboxPath string
	// BaseDir is where the run directory is made (default os.TempDir()).
	BaseDir string
	// LogDir receives the components' logs; it survives teardown
	// (default <run dir>/logs, removed at teardown).
	LogDir string
	// NodeName is the node's name (default railyard-e2e).
	NodeName string
	// Bridge is the name of the private bridge (default ry-e2e0).
	Bridge string
	// Subnet is the bridge's IPv4 network; its first address is the node IP
	// (default 10.217.0.0/24). Start refuses a subnet the host routes.
	Subnet string
	// ContainerdBinDir, when set, holds containerd, containerd-shim-runc-v2
	// and ctr to run instead of the host's (hack/cluster/build.sh containerd
	// builds containerd v2.4.2, which has CDI, into _output/containerd/bin);
	// its CRI plugin reads CDI specs from Cluster.CDISpecDir.
	ContainerdBinDir string
	// CNINetworks is how many CNI configuration files of the conf dir
	// containerd's CRI runs for each pod (max_conf_num; default 1, the
	// framework's bridge network). More let a test add a network of its
	// own, as containerd runs several networks without Multus.
	CNINetworks int
	// Logf receives progress messages (default: none).
	Logf func(format string, args ...any)
}

func (c *Config) defaults() {
	if c.BusyboxPath == "" {
		c.BusyboxPath = "/bin/busybox"
	}
	if c.BaseDir == "" {
		c.BaseDir = os.TempDir()
	}
	if c.NodeName == "" {
		c.NodeName = "railyard-e2e"
	}
	if c.Bridge == "" {
		c.Bridge = "ry-e2e0"
	}
	if c.Subnet == "" {
		c.Subnet = "10.217.0.0/24"
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Cluster is a running single-node cluster. Stop it with Stop.
type Cluster struct {
	cfg   Config
	dir   string
	state *runState
	pki   *pki

	// Kubeconfig is the admin kubeconfig file (token of a system:masters user).
	Kubeconfig string
	// RESTConfig is the admin client configuration.
	RESTConfig *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// NodeName and NodeIP identify the single node.
	NodeName string
	NodeIP   string
	// Subnet is the bridge's network; pods get addresses in it.
	Subnet *net.IPNet
	// ContainerdSocket is the CRI endpoint of the node's containerd.
	ContainerdSocket string
	// KubeletRootDir is the kubelet's --root-dir (pod-resources socket in
	// KubeletRootDir/pod-resources/kubelet.sock).
	KubeletRootDir string
	// CDISpecDir is where containerd reads CDI specs ("" when the host's
	// containerd runs: Debian's 1.6 has no CDI).
	CDISpecDir string
	// Timings records how long each start step took.
	Timings []Timing

	mu      sync.Mutex
	procs   map[string]*Process
	kubelet kubeletOptions
	ctrd    containerdPaths
	stopped bool
}

// Timing is the duration of one step of Start.
type Timing struct {
	Step     string
	Duration time.Duration
}

// DevicePluginDir is the kubelet's fixed device plugin directory.
const DevicePluginDir = "/var/lib/kubelet/device-plugins"

// Start starts etcd, kube-apiserver, kube-scheduler, containerd and kubelet,
// imports the busybox and pause images, waits for the node to be Ready and
// removes its not-ready taint. On error it tears down what it started.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	cfg.defaults()
	if os.Geteuid() != 0 {
		return nil, errors.New("framework: must run as root")
	}
	for _, b := range []string{"kube-apiserver", "kube-scheduler", "kubelet", "kubectl"} {
		if _, err := os.Stat(filepath.Join(cfg.K8sBinDir, b)); err != nil {
			return nil, fmt.Errorf("framework: %w (run hack/cluster/build.sh k8s)", err)
		}
	}
	for _, b := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cfg.CNIBinDir, b)); err != nil {
			return nil, fmt.Errorf("framework: %w (run hack/cluster/install-cni.sh)", err)
		}
	}
	if err := ReapStale(cfg.BaseDir, cfg.Logf); err != nil {
		return nil, err
	}
	bridge, err := newBridgeNetwork(cfg.Bridge, cfg.Subnet)
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp(cfg.BaseDir, runDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("framework: %w", err)
	}
	if cfg.LogDir == "" {
		cfg.LogDir = filepath.Join(dir, "logs")
	}
	c := &Cluster{
		cfg:            cfg,
		dir:            dir,
		procs:          map[string]*Process{},
		NodeName:       cfg.NodeName,
		NodeIP:         bridge.NodeIP.String(),
		Subnet:         bridge.Subnet,
		KubeletRootDir: filepath.Join(dir, "kubelet"),
		state: &runState{
			RunDir:     dir,
			OwnerPID:   os.Getpid(),
			CgroupName: filepath.Base(dir),
		},
	}
	if c.state.OwnerCmdline, err = procCmdline(os.Getpid()); err != nil {
		return nil, fmt.Errorf("framework: %w", err)
	}
	c.ctrd = newContainerdPaths(dir, cfg.CNIBinDir)
	c.ctrd.CNINetworks = max(cfg.CNINetworks, 1)
	// sun_path holds 108 bytes; containerd fails obscurely past that.
	if n := len(c.ctrd.Socket + ".ttrpc"); n > 107 {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("framework: run dir %s is too long for unix sockets (%d bytes); use a shorter BaseDir", dir, n)
	}
	if cfg.ContainerdBinDir != "" {
		c.ctrd.BinDir, c.ctrd.CDIDir = cfg.ContainerdBinDir, filepath.Join(dir, "cdi")
		c.CDISpecDir = c.ctrd.CDIDir
	}
	c.ContainerdSocket = c.ctrd.Socket
	c.state.ContainerdSocket = c.ctrd.Socket
	defer func() {
		if err != nil {
			if terr := c.Stop(); terr != nil {
				err = errors.Join(err, fmt.Errorf("teardown after failed start: %w", terr))
			}
		}
	}()
	if err := c.state.snapshotHostDirs(); err != nil {
		return nil, err
	}
	if err := c.state.save(); err != nil {
		return nil, err
	}

	step := func(name string, f func() error) error {
		start := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("framework: %s: %w", name, err)
		}
		d := time.Since(start)
		c.Timings = append(c.Timings, Timing{Step: name, Duration: d})
		cfg.Logf("framework: %s took %v", name, d.Round(time.Millisecond))
		return nil
	}

	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	etcdPort, etcdPeer, apiPort, schedPort, kubeletPort, kubeletHealthz := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	apiURL := "https://127.0.0.1:" + strconv.Itoa(apiPort)

	if err := step("network", func() error {
		if err := bridge.create(); err != nil {
			// Left alone at teardown: it may not be ours.
			return err
		}
		c.state.Bridge = cfg.Bridge
		if err := c.state.save(); err != nil {
			return err
		}
		return bridge.writeCNIConfig(c.ctrd.CNIConfDir, filepath.Join(dir, "cni-ipam"))
	}); err != nil {
		return nil, err
	}
	if err := step("cgroups", func() error { return createCgroups(c.state.CgroupName) }); err != nil {
		return nil, err
	}
	if err := step("pki", func() error {
		p, err := writePKI(filepath.Join(dir, "pki"), []net.IP{net.IPv4(127, 0, 0, 1), bridge.NodeIP})
		c.pki = p
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("etcd", func() error {
		p, err := startEtcd(ctx, dir, etcdPort, etcdPeer, c.logPath("etcd"))
		return c.track("etcd", p, err)
	}); err != nil {
		return nil, err
	}
	if err := step("kube-apiserver", func() error {
		p, err := startAPIServer(ctx, apiserverOptions{
			BinDir: cfg.K8sBinDir, Dir: dir, PKI: c.pki, EtcdPort: etcdPort,
			SecurePort: apiPort, LogPath: c.logPath("kube-apiserver"),
		})
		return c.track("kube-apiserver", p, err)
	}); err != nil {
		return nil, err
	}
	c.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	schedKubeconfig := filepath.Join(dir, "scheduler.kubeconfig")
	kubeletKubeconfig := filepath.Join(dir, "kubelet.kubeconfig")
	for _, kc := range []struct{ path, token string }{
		{c.Kubeconfig, c.pki.AdminToken},
		{schedKubeconfig, c.pki.SchedulerToken},
		{kubeletKubeconfig, c.pki.KubeletToken},
	} {
		if err := writeKubeconfig(kc.path, apiURL, c.pki.CAFile, kc.token); err != nil {
			return nil, err
		}
	}
	if c.RESTConfig, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return nil, fmt.Errorf("framework: %w", err)
	}
	c.RESTConfig.QPS, c.RESTConfig.Burst = 100, 200
	if c.Client, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		return nil, fmt.Errorf("framework: %w", err)
	}
	if err := step("kube-scheduler", func() error {
		p, err := startScheduler(ctx, cfg.K8sBinDir, schedKubeconfig, schedPort, c.logPath("kube-scheduler"))
		return c.track("kube-scheduler", p, err)
	}); err != nil {
		return nil, err
	}
	if err := step("containerd", func() error {
		p, err := startContainerd(ctx, c.ctrd, c.logPath("containerd"))
		return c.track("containerd", p, err)
	}); err != nil {
		return nil, err
	}
	if err := step("images", func() error { return importImages(ctx, c.ctrd, cfg.BusyboxPath) }); err != nil {
		return nil, err
	}
	c.kubelet = kubeletOptions{
		BinDir:          cfg.K8sBinDir,
		RootDir:         c.KubeletRootDir,
		Kubeconfig:      kubeletKubeconfig,
		RuntimeSocket:   c.ctrd.Socket,
		NodeName:        cfg.NodeName,
		NodeIP:          c.NodeIP,
		Port:            kubeletPort,
		HealthzPort:     kubeletHealthz,
		CgroupRoot:      "/" + c.state.CgroupName,
		VolumePluginDir: filepath.Join(dir, "volume-plugins"),
		LogPath:         c.logPath("kubelet"),
	}
	if err := step("kubelet", func() error {
		p, err := startKubelet(ctx, c.kubelet)
		return c.track("kubelet", p, err)
	}); err != nil {
		return nil, err
	}
	if err := step("node ready", func() error {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := c.WaitForNodeReady(wctx); err != nil {
			return err
		}
		return c.removeNotReadyTaint(wctx)
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) logPath(name string) string { return filepath.Join(c.cfg.LogDir, name+".log") }

// track records a started process (in memory and in the run state file).
func (c *Cluster) track(name string, p *Process, err error) error {
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs[name] = p
	args, cerr := procCmdline(p.PID())
	if cerr != nil {
		return fmt.Errorf("track %s: %w", name, cerr)
	}
	c.state.Processes = append(c.state.Processes, trackedProcess{PID: p.PID(), Cmdline: args})
	return c.state.save()
}

// RunDir is the run's private directory (removed at Stop).
func (c *Cluster) RunDir() string { return c.dir }

// LogDir is where component and helper-process logs are written.
func (c *Cluster) LogDir() string { return c.cfg.LogDir }

// ProjectBin returns the path of one of the project's binaries (e.g.
// "railyard-agent") in Config.ProjectBinDir, or an error if it is missing.
func (c *Cluster) ProjectBin(name string) (string, error) {
	p := filepath.Join(c.cfg.ProjectBinDir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("project binary %s: %w (run make build)", name, err)
	}
	return p, nil
}

// K8sBinDir is where kubectl and the other Kubernetes binaries are.
func (c *Cluster) K8sBinDir() string { return c.cfg.K8sBinDir }

// CNIBinDir is the directory of the reference CNI plugins (bridge,
// host-local, loopback) the cluster's containerd uses.
func (c *Cluster) CNIBinDir() string { return c.cfg.CNIBinDir }

// CNIConfDir is the directory containerd reads CNI configurations from
// (it notices new files; with Config.CNINetworks > 1 a test may add a
// network of its own, removed when the test ends).
func (c *Cluster) CNIConfDir() string { return c.ctrd.CNIConfDir }

// AddCNINetwork writes a CNI network list (conf: cniVersion, name,
// plugins) into containerd's conf dir after the framework's bridge
// network, so each new sandbox also gets it (as eth1, and so on; needs
// Config.CNINetworks > 1), and waits for containerd to load it. remove
// takes it out again, and waits as well.
func (c *Cluster) AddCNINetwork(conf map[string]any) (remove func(), err error) {
	name, _ := conf["name"].(string)
	if name == "" || c.ctrd.CNINetworks < 2 {
		return nil, fmt.Errorf("add CNI network %q: needs a name and Config.CNINetworks > 1 (have %d)", name, c.ctrd.CNINetworks)
	}
	b, err := json.Marshal(conf)
	if err != nil {
		return nil, fmt.Errorf("add CNI network %s: %w", name, err)
	}
	p := filepath.Join(c.ctrd.CNIConfDir, "20-"+name+".conflist")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return nil, fmt.Errorf("add CNI network %s: %w", name, err)
	}
	// containerd reloads its CNI configuration on the directory's file
	// events; give it a moment (it logs no event a test could wait for).
	time.Sleep(2 * time.Second)
	return func() {
		if os.Remove(p) == nil {
			time.Sleep(2 * time.Second) // the same reload, before the next sandbox
		}
	}, nil
}

// Stop tears the cluster down: it stops every process the cluster started
// (helpers first, then kubelet, containerd, scheduler, apiserver, etcd) and
// removes by path everything the run created. Calling it twice is harmless.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	procs := c.procs
	c.mu.Unlock()
	var errs []error
	// Helpers (agents) first so they do not see components vanish; the
	// kubelet next so it does not restart containers while they are killed.
	order := []string{"kubelet", "containerd", "kube-scheduler", "kube-apiserver", "etcd"}
	for name, p := range procs {
		if !slices.Contains(order, name) {
			if err := p.Stop(5 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, name := range order {
		if p, ok := procs[name]; ok {
			if err := p.Stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := teardown(c.state); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
