// Package podresources finds the GPUs that kubelet has allocated to the
// containers on this node, through kubelet's PodResources API (v1, the
// unix socket /var/lib/kubelet/pod-resources/kubelet.sock, read with
// package podlist), and maps GPU device IDs to PCI addresses.
//
// Kubelet names NVIDIA GPUs by UUID ("GPU-8f6c..."). This package reads
// the UUID -> PCI mapping from the NVIDIA driver's
// /proc/driver/nvidia/gpus/<pci>/information files (ReadNVIDIAProc), and
// from a file (the agent's --gpu-map, the output of `nvidia-smi
// --query-gpu=uuid,pci.bus_id --format=csv,noheader`) that overrides them
// (NewResolver); device IDs that already are PCI addresses (amd.com/gpu)
// need no mapping.
package podresources
