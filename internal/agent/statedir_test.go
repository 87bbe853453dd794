package agent

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/cni/state/statetest"
	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

// TestFullStateDirIsReportedRootTmpfs starts the agent with a sandbox pool
// on a full state directory: the view cannot be written, and kubelet was
// told "no node view published by railyard-agent yet" by
// PreStartContainer, which reads like a start-up race. The agent's log
// and PreStartContainer's error must say "no space left on device".
// Faked: kubelet (Registration stub, PodResources stand-in, the calls).
func TestFullStateDirIsReportedRootTmpfs(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	statetest.FullTmpfs(t, filepath.Join(e.dir, "state"), "binding")
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	pr := podrestest.Start(t, e.podSock)
	r := start(t, e.args(e.writeConfig(t, sandboxConfig(e))), nil)
	reg.Wait(t)
	c := dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(vfRes)))
	list := kubelettest.Watch(t, c).Next(t, "8 tokens", 5*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 8 })
	tok := list[0].ID
	pr.Set(listed("trainer", tok, "0000:8a:00.0"))
	_, err := c.PreStartContainer(context.Background(), &pluginapi.PreStartContainerRequest{DevicesIds: []string{tok}})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("PreStartContainer on a full state directory: err = %v, want it to say no space left on device", err)
	}
	if l := grepLines(r.log.String(), "binding view"); !strings.Contains(l, "no space left on device") {
		t.Errorf("the log does not say why the view is missing:\n%s", l)
	}
}
