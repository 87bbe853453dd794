package deviceplugin

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
)

// TestAllocateSetsNCCLSettings: Allocate's environment carries
// containerdev's NCCL settings: with nothing configured Railyard's
// defaults too (RoCE v2, AF_INET, the bootstrap off the rails), since the
// pod's own variables win over Allocate's; the operator's profile,
// socket interface and address family in their place when configured.
func TestAllocateSetsNCCLSettings(t *testing.T) {
	eth0 := "=eth0"
	for _, c := range []struct {
		name string
		nccl containerdev.NCCL
		want map[string]string
	}{
		{"nothing configured", containerdev.NCCL{}, map[string]string{
			"NCCL_IB_ROCE_VERSION_NUM": "2", "NCCL_IB_ADDR_FAMILY": "AF_INET", "NCCL_SOCKET_IFNAME": containerdev.DefaultSocketIfname}},
		{"ecmp, IPv6, eth0", containerdev.NCCL{Profile: "ecmp", IBAddrFamily: "AF_INET6", SocketIfname: &eth0}, map[string]string{
			"NCCL_IB_ROCE_VERSION_NUM": "2", "NCCL_IB_ADDR_FAMILY": "AF_INET6", "NCCL_SOCKET_IFNAME": "=eth0",
			"NCCL_IB_QPS_PER_CONNECTION": "4", "NCCL_IB_SPLIT_DATA_ON_QPS": "0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newNode(t, "roce-8gpu-4nic", 2)
			reg := kubelettest.StartRegistrar(t, n.pluginDir)
			p := newPlugin(t, n, resource, "spread", nil)
			p.cfg.NCCL = c.nccl
			refresh(t, n, p, vfPool)
			runPlugin(t, p)
			reg.Wait(t)
			resp, err := dial(t, p).Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:05:00.1", "0000:84:00.2"}}}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range resp.ContainerResponses[0].Envs {
				if strings.HasPrefix(k, "NCCL_") && k != "NCCL_IB_HCA" {
					got[k] = v
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("NCCL variables (-want +got):\n%s", diff)
			}
		})
	}
}
