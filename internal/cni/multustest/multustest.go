package multustest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// Pod names the pod a delegate is called for.
type Pod struct {
	Namespace, Name, UID string
	// SandboxID is the pod's sandbox (infra) container ID, also the CNI
	// container ID.
	SandboxID string
	Netns     string
}

// Delegate returns conf (a network config or a conflist) as Multus hands it
// to the delegate of a network whose resource allocated device pci:
// decoded into a map, "deviceID" and "pciBusID" set to pci (in every
// plugin of a conflist), and marshalled again (delegateAddDeviceID and
// addDeviceIDInConfList).
func Delegate(conf []byte, pci string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(conf, &m); err != nil {
		return nil, fmt.Errorf("network config: %w", err)
	}
	if plugins, ok := m["plugins"].([]any); ok {
		for i, p := range plugins {
			pm, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("plugin %d is not an object", i)
			}
			pm["deviceID"], pm["pciBusID"] = pci, pci
		}
	} else {
		m["deviceID"], m["pciBusID"] = pci, pci
	}
	return json.Marshal(m)
}

// RuntimeConf is the libcni RuntimeConf Multus builds for pod's interface
// ifName of the delegate named delegate (DelegateName: "<NAD
// namespace>/<NAD name>" for a NetworkAttachmentDefinition), as
// createRuntimeConf, newCNIRuntimeConf and delegateRuntimeConfig do: CNI_ARGS
// IgnoreUnknown, K8S_POD_NAMESPACE, K8S_POD_NAME,
// K8S_POD_INFRA_CONTAINER_ID and K8S_POD_UID in that order; capability
// args deviceID and the auto-generated CNIDeviceInfoFile under devInfoDir
// (Multus's is /var/run/k8s.cni.cncf.io/devinfo/cni), which libcni passes
// in runtimeConfig for the capabilities the config declares.
func RuntimeConf(delegate, ifName string, pod Pod, pci, devInfoDir string) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{
		ContainerID: pod.SandboxID, NetNS: pod.Netns, IfName: ifName,
		Args: [][2]string{
			{"IgnoreUnknown", "true"},
			{"K8S_POD_NAMESPACE", pod.Namespace},
			{"K8S_POD_NAME", pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", pod.SandboxID},
			{"K8S_POD_UID", pod.UID},
		},
	}
	if pci != "" {
		rt.CapabilityArgs = map[string]any{
			"deviceID":          pci,
			"CNIDeviceInfoFile": DeviceInfoPath(devInfoDir, delegate, pod.SandboxID, ifName),
		}
	}
	return rt
}

// DeviceInfoPath is where Multus asks a delegate to write its device-info
// file: <dir>/<delegate>-<containerID>_<ifName> (delegateRuntimeConfig),
// with any "/" replaced by "-" (network-attachment-definition-client's
// GetCNIDeviceInfoPath), delegate being DelegateName's.
func DeviceInfoPath(dir, delegate, containerID, ifName string) string {
	return filepath.Join(dir, strings.ReplaceAll(fmt.Sprintf("%s-%s_%s", delegate, containerID, ifName), "/", "-"))
}
