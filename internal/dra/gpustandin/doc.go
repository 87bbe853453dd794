// Package gpustandin is a STAND-IN for NVIDIA's DRA driver for GPUs
// (driver gpu.nvidia.com, kubernetes-sigs/dra-driver-nvidia-gpu, formerly
// NVIDIA/k8s-dra-driver-gpu): it publishes the NVIDIA GPUs of a Railyard
// topology model as that driver's ResourceSlices are shaped — devices
// "gpu-<minor>", attributes type, uuid, productName, brand, architecture,
// cudaComputeCapability, driverVersion, cudaDriverVersion, the standard
// resource.kubernetes.io/pciBusID, pcieRoot and numaNode, and a memory
// capacity — so tests and simulations can run the scheduler's allocator
// over GPUs and Railyard's NICs together on a machine without GPUs.
//
// Everything but the PCI placement is made up: the UUIDs are derived from
// the PCI address, product names come from a small table of the built-in
// machines' device IDs, versions are fixed. Nothing here talks to a GPU,
// and Railyard never publishes GPUs in production: NVIDIA's driver does.
package gpustandin
