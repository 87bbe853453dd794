// Package podresources finds the GPUs that kubelet has allocated to the
// containers on this node, through kubelet's PodResources API (v1, the
// unix socket /var/lib/kubelet/pod-resources/kubelet.sock), and maps GPU
// device IDs to PCI addresses.
//
// Kubelet names NVIDIA GPUs by UUID ("GPU-8f6c..."); on a real node the
// UUID -> PCI mapping comes from NVML or `nvidia-smi --query-gpu=uuid,pci.bus_id
// --format=csv,noheader`. This package reads that mapping from a file (the
// agent's --gpu-map), or any GPUResolver; device IDs that already are PCI
// addresses (amd.com/gpu) need no mapping.
package podresources
