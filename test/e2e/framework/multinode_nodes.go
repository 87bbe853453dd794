//go:build e2e

package framework

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/railyard-io/railyard/machines"
)

// writeMachines writes every GPU node's fake machine (its model's sysfs
// tree and RDMA device nodes) and works out the rails: rail r is the NIC
// the model's rails give the r-th distinct place (GPU order), as NIC r of
// every node of a rail-optimized cluster is cabled to leaf r.
func (m *MultiCluster) writeMachines(ctx context.Context, railNet *net.IPNet) error {
	rails := 0
	for _, n := range m.nodes {
		if n.Role != RoleGPU {
			continue
		}
		dir := filepath.Join(n.Dir, "machine")
		if err := machines.WriteSysfs(n.Machine, filepath.Join(dir, "sysfs"), 0); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		if err := WriteDevNodes(filepath.Join(dir, "sysfs"), filepath.Join(dir, "dev")); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		t, err := machines.Topology(ctx, n.Machine, 0)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		var seen []string
		for _, l := range t.Rails {
			if slices.Contains(seen, l.NIC) {
				continue
			}
			seen = append(seen, l.NIC)
			for _, nic := range t.NICs {
				if nic.PCI == l.NIC && nic.Netdev != "" {
					n.Rails = append(n.Rails, nic.Netdev)
				}
			}
		}
		if len(n.Rails) == 0 {
			return fmt.Errorf("node %s: model %s has no rails with netdevs", n.Name, n.Machine)
		}
		rails = max(rails, len(n.Rails))
	}
	if rails > 250 {
		return fmt.Errorf("%d rails: too many", rails)
	}
	for r := range rails {
		subnet, spine := railSubnet(railNet, r)
		m.Info.Rails = append(m.Info.Rails, RailInfo{Index: r, Leaf: "leaf" + strconv.Itoa(r), Subnet: subnet, Spine: spine})
	}
	return nil
}

// WriteDevNodes creates <devRoot>/infiniband/uverbsN (numbers from the
// dev files of the sysfs tree at sysfsDir) and rdma_cm as character
// devices that no driver backs (opening them fails; runc creates them in
// containers from their numbers).
func WriteDevNodes(sysfsDir, devRoot string) error {
	ib := filepath.Join(devRoot, "infiniband")
	if err := os.MkdirAll(ib, 0o755); err != nil {
		return err
	}
	verbs, err := os.ReadDir(filepath.Join(sysfsDir, "class/infiniband_verbs"))
	if err != nil {
		return err
	}
	mk := func(name string, major, minor uint32) error {
		if err := unix.Mknod(filepath.Join(ib, name), unix.S_IFCHR|0o666, int(unix.Mkdev(major, minor))); err != nil {
			return fmt.Errorf("mknod %s: %w", name, err)
		}
		return nil
	}
	for _, v := range verbs {
		data, err := os.ReadFile(filepath.Join(sysfsDir, "class/infiniband_verbs", v.Name(), "dev"))
		if err != nil {
			return err
		}
		var major, minor uint32
		if _, err := fmt.Sscanf(strings.TrimSpace(string(data)), "%d:%d", &major, &minor); err != nil {
			return fmt.Errorf("%s/dev: %w", v.Name(), err)
		}
		if err := mk(v.Name(), major, minor); err != nil {
			return err
		}
	}
	// The real rdma_cm is a misc device; any number works for a node
	// nothing opens. 231:255 stays inside the (absent) uverbs range.
	return mk("rdma_cm", 231, 255)
}

// pinBridgeMAC gives the bridge a fixed address: a Linux bridge otherwise
// takes its lowest port's, which changes as nodes come and go, and a node
// keeping the old ARP entry loses the API server.
func pinBridgeMAC(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", name, err)
	}
	sum := sha256.Sum256([]byte(name))
	mac := net.HardwareAddr{0x02, sum[0], sum[1], sum[2], sum[3], sum[4]}
	if err := netlink.LinkSetHardwareAddr(link, mac); err != nil {
		return fmt.Errorf("bridge %s: pin MAC %s: %w", name, mac, err)
	}
	return nil
}

func (m *MultiCluster) startControlPlane(ctx context.Context, p *pki, host string) error {
	dir := m.cfg.Dir
	logPath := func(name string) string { return filepath.Join(dir, "logs", name+".log") }
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	etcdPort, etcdPeer, apiPort, schedPort, kcmPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	if err := m.track(startEtcd(ctx, dir, etcdPort, etcdPeer, logPath("etcd"))); err != nil {
		return err
	}
	if err := m.track(startAPIServer(ctx, apiserverOptions{
		BinDir: m.cfg.K8sBinDir, Dir: dir, PKI: p, EtcdPort: etcdPort, SecurePort: apiPort,
		LogPath: logPath("kube-apiserver"), BindAddress: host, ServiceAccountAdmission: true,
		EndpointRouting: true, Extra: m.cfg.controlPlaneFlags(true),
	})); err != nil {
		return err
	}
	apiURL := "https://" + net.JoinHostPort(host, strconv.Itoa(apiPort))
	m.Info.APIServer = apiURL
	kubeconfigs := []struct{ name, token string }{
		{"admin", p.AdminToken}, {"scheduler", p.SchedulerToken}, {"kubelet", p.KubeletToken}, {"controller-manager", p.AdminToken}, {"kube-proxy", p.AdminToken},
		{"whereabouts", p.AdminToken}, {"gpu-dra", p.AdminToken},
	}
	for _, kc := range kubeconfigs {
		if err := writeKubeconfig(filepath.Join(dir, kc.name+".kubeconfig"), apiURL, p.CAFile, kc.token); err != nil {
			return err
		}
	}
	c := &Cluster{cfg: Config{K8sBinDir: m.cfg.K8sBinDir}, dir: dir, Kubeconfig: m.Info.Kubeconfig, stopped: true}
	if c.RESTConfig, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return err
	}
	c.RESTConfig.QPS, c.RESTConfig.Burst = 100, 200
	if c.Client, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		return err
	}
	m.Cluster = c
	if err := m.track(startScheduler(ctx, m.cfg.K8sBinDir, filepath.Join(dir, "scheduler.kubeconfig"), schedPort, logPath("kube-scheduler"), m.cfg.controlPlaneFlags(false)...)); err != nil {
		return err
	}
	return m.track(startControllerManager(ctx, m.cfg.K8sBinDir, filepath.Join(dir, "controller-manager.kubeconfig"), p, kcmPort, logPath("kube-controller-manager"),
		m.cfg.moreControllers(), m.cfg.controlPlaneFlags(false)...))
}

// cgroupName is a node's kubelet cgroupRoot: unique per cluster directory
// and node, and a name teardown's cgroup walk accepts.
func (m *MultiCluster) cgroupName(node string) string {
	sum := sha256.Sum256([]byte(m.cfg.Dir))
	return runDirPrefix + "mn" + hex.EncodeToString(sum[:3]) + "-" + node
}

func (m *MultiCluster) startNode(ctx context.Context, n *nsNode, gw string, bridge *bridgeNetwork) error {
	logPath := func(name string) string { return filepath.Join(m.cfg.Dir, "logs", n.Name, name+".log") }
	for _, d := range privateDirs {
		if _, err := os.Stat(d.host); os.IsNotExist(err) {
			if err := os.MkdirAll(d.host, 0o755); err != nil {
				return err
			}
			m.state.CreatedDirs = append(m.state.CreatedDirs, d.host)
		}
	}
	for _, d := range []string{m.Info.MachineDir, m.Info.CNIBinDir, m.Info.CDIDir, n.CNIBinDir, n.CNIConfDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	cg := m.cgroupName(n.Name)
	m.state.Cgroups = append(m.state.Cgroups, cg)
	if err := m.state.save(); err != nil {
		return err
	}
	if err := createCgroups(cg); err != nil {
		return err
	}
	if err := n.startInit(ctx, m.cfg.NodeInit, logPath("init")); err != nil {
		if n.init != nil {
			_ = m.track(n.init, nil)
		}
		return err
	}
	if err := m.track(n.init, nil); err != nil {
		return err
	}
	n.PID = n.pid
	if err := n.mountPrivate(ctx, map[string]string{m.Info.MachineDir: "machine", m.Info.CNIBinDir: "cni-bin", m.Info.CDIDir: "cdi"}); err != nil {
		return err
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if err := copyFile(filepath.Join(m.cfg.CNIBinDir, plugin), filepath.Join(n.CNIBinDir, plugin), 0o755); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if m.cfg.WhereaboutsBinDir != "" {
		if err := copyFile(filepath.Join(m.cfg.WhereaboutsBinDir, "whereabouts"), filepath.Join(n.CNIBinDir, "whereabouts"), 0o755); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	ones, _ := bridge.Subnet.Mask.Size()
	var all []NodeInfo
	for _, o := range m.nodes {
		all = append(all, o.NodeInfo)
	}
	if err := n.setupNetwork(ctx, bridge.Name, gw, ones, all); err != nil {
		return err
	}
	for r, netdev := range n.Rails {
		if err := cableRail(ctx, m.Info.FabricPID, n, netdev, m.Info.Rails[r]); err != nil {
			return err
		}
	}
	if err := writePodNetwork(n); err != nil {
		return err
	}

	n.ctrd = newContainerdPaths(n.Dir, m.Info.CNIBinDir)
	n.ctrd.CNIConfDir = n.CNIConfDir
	n.ctrd.CNINetworks = 1 + len(m.Info.Rails)
	n.ctrd.Enter = n.enter("mount", "net", "pid")
	if m.cfg.ContainerdBinDir != "" {
		n.ctrd.BinDir, n.ctrd.CDIDir = m.cfg.ContainerdBinDir, m.Info.CDIDir
	}
	if l := len(n.ctrd.Socket + ".ttrpc"); l > 107 {
		return fmt.Errorf("node %s: %s is too long for a unix socket (%d bytes); use a shorter directory", n.Name, n.ctrd.Socket, l)
	}
	n.ContainerdSocket = n.ctrd.Socket
	if err := m.track(startContainerd(ctx, n.ctrd, logPath("containerd"))); err != nil {
		return err
	}
	if err := importImages(ctx, n.ctrd, m.cfg.BusyboxPath); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.kubelt = kubeletOptions{
		BinDir: m.cfg.K8sBinDir,
		// The node's /var/lib/kubelet is this directory too (a bind
		// mount): device-plugins/ and pod-resources/ have both names.
		RootDir:         filepath.Join(n.Dir, "kubelet"),
		Kubeconfig:      filepath.Join(m.cfg.Dir, "kubelet.kubeconfig"),
		RuntimeSocket:   n.ctrd.Socket,
		NodeName:        n.Name,
		NodeIP:          n.IP,
		Port:            10250,
		HealthzPort:     10248,
		HealthzAddress:  n.IP,
		CgroupRoot:      "/" + cg,
		VolumePluginDir: filepath.Join(n.Dir, "volume-plugins"),
		LogPath:         logPath("kubelet"),
		Enter:           n.enter("mount", "net", "pid"),
	}
	if m.cfg.CoreDNSBinDir != "" {
		n.kubelt.Extra = kubeletDNSConfig
	}
	if n.Role == RoleControlPlane {
		n.kubelt.Extra += fmt.Sprintf("registerWithTaints:\n- key: %s\n  effect: %s\n", controlPlaneTaint.Key, controlPlaneTaint.Effect)
	} else {
		n.kubelt.Labels = "railyard.io/rdma=true,railyard.io/machine=" + n.Machine
	}
	if err := m.track(startKubelet(ctx, n.kubelt)); err != nil {
		return err
	}
	return m.track(startKubeProxy(ctx, kubeProxyOptions{
		BinDir:      m.cfg.K8sBinDir,
		Kubeconfig:  filepath.Join(m.cfg.Dir, "kube-proxy.kubeconfig"),
		NodeName:    n.Name,
		NodeIP:      n.IP,
		ClusterCIDR: m.cfg.PodCIDR,
		Dir:         n.Dir,
		LogPath:     logPath("kube-proxy"),
		Enter:       n.enter("mount", "net", "pid"),
	}))
}

// writePodNetwork writes the node's pod network: the CNI bridge plugin on
// cni0 (the pods' gateway, the node's end of its pod CIDR) with host-local
// addresses from the node's pod CIDR; the node routes the other nodes' pod
// CIDRs to them, so pods reach pods across nodes without masquerade.
func writePodNetwork(n *nsNode) error {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "pods",
		"plugins": []any{map[string]any{
			"type":             "bridge",
			"bridge":           "cni0",
			"isGateway":        true,
			"isDefaultGateway": true,
			"ipMasq":           false,
			"hairpinMode":      false,
			"ipam": map[string]any{
				"type":    "host-local",
				"dataDir": filepath.Join(n.Dir, "cni-ipam"),
				"ranges":  [][]map[string]string{{{"subnet": n.PodCIDR}}},
			},
		}},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return fmt.Errorf("node %s: pod network: %w", n.Name, err)
	}
	if err := os.WriteFile(filepath.Join(n.CNIConfDir, "10-pods.conflist"), data, 0o644); err != nil {
		return fmt.Errorf("node %s: pod network: %w", n.Name, err)
	}
	return nil
}

// applyCRDs applies the whereabouts CRDs of dir (its IPPool,
// OverlappingRangeIPReservation and NodeSlicePool: every
// whereabouts.cni.cncf.io_*.yaml) and waits until they are served.
func (m *MultiCluster) applyCRDs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "whereabouts.cni.cncf.io_*.yaml"))
	if err != nil {
		return fmt.Errorf("whereabouts CRDs: %w", err)
	}
	if len(files) == 0 {
		return fmt.Errorf("whereabouts CRDs: none in %s", dir)
	}
	args := []string{"apply"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	if out, err := m.Kubectl(ctx, args...); err != nil {
		return fmt.Errorf("whereabouts CRDs: %w: %s", err, out)
	}
	if out, err := m.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/ippools.whereabouts.cni.cncf.io",
		"crd/overlappingrangeipreservations.whereabouts.cni.cncf.io"); err != nil {
		return fmt.Errorf("whereabouts CRDs: %w: %s", err, out)
	}
	return nil
}
