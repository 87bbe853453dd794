//go:build e2e

package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/cni/config"
)

// containerdPaths are the directories and sockets of the framework's own
// containerd; nothing of it lives in the host's /var/lib/containerd or
// /run/containerd (except the shims' abstract sockets, which containerd 1.6
// places under /run/containerd/s and teardown removes by path).
type containerdPaths struct {
	Dir        string
	Config     string
	Socket     string
	Root       string
	State      string
	RuncRoot   string
	CNIConfDir string
	CNIBinDir  string
	// CNINetworks is the CRI plugin's max_conf_num.
	CNINetworks int
	// BinDir holds containerd, containerd-shim-runc-v2 and ctr when the
	// cluster runs a containerd of its own build (Config.ContainerdBinDir,
	// containerd v2 with CDI); "" runs the host's from PATH.
	BinDir string
	// CDIDir is where the CRI plugin reads CDI specs (BinDir set only).
	CDIDir string
	// Enter prefixes containerd's command (nsenter into a node's
	// namespaces); ctr still runs on the host, through the socket.
	Enter []string
}

// bin is the path of a containerd command: in BinDir, else from PATH.
func (p containerdPaths) bin(name string) string {
	if p.BinDir == "" {
		return name
	}
	return filepath.Join(p.BinDir, name)
}

// cdiConfig is the CRI plugin's CDI section: containerd 1.7 and 2.x read
// it from a version 2 configuration (2.x migrates the file to version 3 in
// memory); 1.6 has no CDI, so nothing is written for it.
func (p containerdPaths) cdiConfig() string {
	if p.BinDir == "" {
		return ""
	}
	return fmt.Sprintf("  enable_cdi = true\n  cdi_spec_dirs = [%q]\n", p.CDIDir)
}

func newContainerdPaths(runDir, cniBinDir string) containerdPaths {
	d := filepath.Join(runDir, "containerd")
	return containerdPaths{
		Dir:        d,
		Config:     filepath.Join(d, "config.toml"),
		Socket:     filepath.Join(d, "containerd.sock"),
		Root:       filepath.Join(d, "root"),
		State:      filepath.Join(d, "state"),
		RuncRoot:   filepath.Join(d, "runc"),
		CNIConfDir: filepath.Join(d, "cni-conf"),
		CNIBinDir:  cniBinDir,
	}
}

func (p containerdPaths) writeConfig() error {
	cfg := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  # root here lacks CAP_SYS_RESOURCE: without this every pod fails with
  # "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
%[10]s  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
    max_conf_num = %[11]d
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %[9]q
        SystemdCgroup = false
`, p.Root, p.State, p.Socket, p.Socket+".ttrpc", filepath.Join(p.Dir, "opt"),
		PauseImage, p.CNIBinDir, p.CNIConfDir, p.RuncRoot, p.cdiConfig(), p.CNINetworks)
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return fmt.Errorf("containerd config: %w", err)
	}
	if err := os.WriteFile(p.Config, []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("containerd config: %w", err)
	}
	return nil
}

// ctr runs the ctr client against the framework's containerd.
func (p containerdPaths) ctr(ctx context.Context, args ...string) ([]byte, error) {
	full := append([]string{"--address", p.Socket, "--namespace", "k8s.io"}, args...)
	out, err := exec.CommandContext(ctx, p.bin("ctr"), full...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ctr %v: %w: %s", args, err, out)
	}
	return out, nil
}

// startContainerd starts containerd and waits until it answers.
func startContainerd(ctx context.Context, p containerdPaths, logPath string) (*Process, error) {
	if err := p.writeConfig(); err != nil {
		return nil, err
	}
	// railyard-cni, which containerd runs with its own environment,
	// accepts the tests' state, sysfs and log paths below the temporary
	// directory (config.TestRootEnv: the run directories live there).
	env := []string{config.TestRootEnv + "=" + os.TempDir()}
	if p.BinDir != "" {
		// containerd finds its shim through PATH: take the build's.
		env = append(env, "PATH="+p.BinDir+":"+os.Getenv("PATH"))
		if err := os.MkdirAll(p.CDIDir, 0o755); err != nil {
			return nil, fmt.Errorf("containerd CDI directory: %w", err)
		}
	}
	path, args := entered(p.Enter, p.bin("containerd"), []string{"--config", p.Config, "--log-level", "info"})
	proc, err := startProcess("containerd", path, args, env, logPath)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = proc.waitFor(wctx, "containerd ready", 100*time.Millisecond, func(ctx context.Context) error {
		_, err := p.ctr(ctx, "version")
		return err
	})
	if err != nil {
		_ = proc.Kill()
		return nil, err
	}
	return proc, nil
}

// importImages builds the busybox, pause and (where the host has iperf3)
// bench-tools images and imports them into containerd's k8s.io namespace,
// where the CRI plugin finds them.
func importImages(ctx context.Context, p containerdPaths, busyboxPath string) error {
	archive, names, err := buildImageArchive(busyboxPath)
	if err != nil {
		return err
	}
	tarPath := filepath.Join(p.Dir, "images.tar")
	if err := os.WriteFile(tarPath, archive, 0o644); err != nil {
		return fmt.Errorf("import images: %w", err)
	}
	if _, err := p.ctr(ctx, "images", "import", tarPath); err != nil {
		return fmt.Errorf("import images: %w", err)
	}
	out, err := p.ctr(ctx, "images", "ls", "-q")
	if err != nil {
		return fmt.Errorf("import images: %w", err)
	}
	for _, want := range names {
		if !containsLine(string(out), want) {
			return fmt.Errorf("import images: %s missing after import; ctr images ls: %s", want, out)
		}
	}
	return nil
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}
