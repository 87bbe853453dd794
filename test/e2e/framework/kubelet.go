//go:build e2e

package framework

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

type kubeletOptions struct {
	BinDir          string
	RootDir         string // --root-dir (pods, volumes, pod-resources socket, pki)
	Kubeconfig      string
	RuntimeSocket   string
	NodeName        string
	NodeIP          string
	Port            int
	HealthzPort     int
	CgroupRoot      string // e.g. /railyard-e2e-abc; must exist in every hierarchy
	VolumePluginDir string
	LogPath         string
	// HealthzAddress is where /healthz listens (default 127.0.0.1); a
	// kubelet in a node's network namespace serves it on its node IP.
	HealthzAddress string
	// Enter prefixes the command (nsenter into a node's namespaces).
	Enter []string
	// Labels are --node-labels; Extra is appended to the configuration
	// (registerWithTaints, for example).
	Labels string
	Extra  string
}

func (o kubeletOptions) healthzAddress() string {
	if o.HealthzAddress == "" {
		return "127.0.0.1"
	}
	return o.HealthzAddress
}

func (o kubeletOptions) configPath() string { return filepath.Join(o.RootDir, "kubelet-config.yaml") }

func (o kubeletOptions) writeConfig() error {
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The host is cgroup v1; kubelet 1.35 refuses it unless told not to.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]q
failSwapOn: false
containerRuntimeEndpoint: unix://%[2]s
imageServiceEndpoint: unix://%[2]s
address: %[3]s
port: %[4]d
readOnlyPort: 0
healthzBindAddress: %[7]s
healthzPort: %[5]d
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
enforceNodeAllocatable: []
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# A new device plugin's resources reach node allocatable in ~2.5 s, not 5-6 s.
nodeStatusUpdateFrequency: 1s
nodeStatusReportFrequency: 10s
syncFrequency: 10s
# No iptables chains on the host.
makeIPTablesUtilChains: false
resolvConf: ""
volumePluginDir: %[6]q
serializeImagePulls: false
registerNode: true
`, o.CgroupRoot, o.RuntimeSocket, o.NodeIP, o.Port, o.HealthzPort, o.VolumePluginDir, o.healthzAddress()) + o.Extra
	if err := os.MkdirAll(o.RootDir, 0o755); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	if err := os.WriteFile(o.configPath(), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("kubelet config: %w", err)
	}
	return nil
}

func (o kubeletOptions) args() []string {
	var labels []string
	if o.Labels != "" {
		labels = []string{"--node-labels", o.Labels}
	}
	return append([]string{
		"--config", o.configPath(),
		"--kubeconfig", o.Kubeconfig,
		"--root-dir", o.RootDir,
		// Its default is /var/lib/kubelet/pki whatever --root-dir says.
		"--cert-dir", filepath.Join(o.RootDir, "pki"),
		"--hostname-override", o.NodeName,
		"--node-ip", o.NodeIP,
		"--v=2",
	}, labels...)
}

// startKubelet starts the kubelet and waits for its healthz endpoint.
func startKubelet(ctx context.Context, o kubeletOptions) (*Process, error) {
	if err := o.writeConfig(); err != nil {
		return nil, err
	}
	path, args := entered(o.Enter, filepath.Join(o.BinDir, "kubelet"), o.args())
	proc, err := startProcess("kubelet", path, args, nil, o.LogPath)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + o.healthzAddress() + ":" + strconv.Itoa(o.HealthzPort) + "/healthz"
	err = proc.waitFor(wctx, "kubelet healthy", 200*time.Millisecond, func(ctx context.Context) error {
		return httpOK(ctx, hc, url)
	})
	if err != nil {
		_ = proc.Kill()
		return nil, err
	}
	return proc, nil
}

// entered returns the command line that runs path with args, inside the
// namespaces enter names (nsenter ... --) when it is not empty.
func entered(enter []string, path string, args []string) (string, []string) {
	if len(enter) == 0 {
		return path, args
	}
	return enter[0], append(append(append([]string{}, enter[1:]...), path), args...)
}
