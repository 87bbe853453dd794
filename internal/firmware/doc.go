// Package firmware judges an RDMA NIC's firmware release: it parses and
// orders ConnectX-style versions ("28.39.1002"), holds the table of known
// issues read from NVIDIA's release notes (Issues), and applies an
// operator's Policy (a minimum release per model, known issues refused).
//
// It is the one place both judges read: `railyard doctor` fails a NIC the
// policy refuses and warns on known issues; the agent marks a refused NIC
// (topology.NIC.Refused), which the one health rule reads, so the device
// plugin advertises its devices Unhealthy and the DRA driver taints them
// NoSchedule. A version that cannot be read or parsed is never refused:
// one failed read must not take a NIC away. Nothing here reads sysfs,
// logs, or asks Kubernetes.
package firmware
