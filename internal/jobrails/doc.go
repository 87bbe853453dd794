// Package jobrails gives every pod of a job the same rails.
//
// In a rail-optimized cluster NIC i of every node is cabled to leaf i: a
// pod on rails 0-3 reaches a peer on rails 4-7 only through the spine, and
// not at all where rails are isolated. Per-pod DRA claims (a GPU and a NIC
// on one resource.kubernetes.io/pcieRoot, as dranet documents) pick each
// pod's rails on its own node, so two pods of one job can land on
// different rails (ai-dynamo/dynamo#13596).
//
// jobrails chooses one rail set for the whole job and writes it into a
// ResourceClaimTemplate: each GPU request is paired with a NIC request
// whose CEL selector pins the NIC's railyard.io/rail, and a matchAttribute
// constraint on pcieRoot keeps each GPU on the NIC of its rail. Every pod
// made from the template gets a claim for exactly those rails, so the
// scheduler places each pod on a node where they are free, and every pod
// of the job is on the same leaves. The rail set is the one with room for
// a pod on the most nodes (Choose), the rule internal/sim's job-rails
// policy measured (docs/alloc.md).
//
// Room is the scheduler's allocator's answer, not a count of devices
// (Inventory, fits): only the newest generation of each pool, nothing from
// an incomplete pool, nothing a claim holds (a shared NIC's capacity left
// in default shares), nothing with a NoSchedule or NoExecute device taint
// (the device's own or a DeviceTaintRule's) the template does not
// tolerate, and a GPU and a NIC of its rail on one pcieRoot for every GPU
// of the set. The tests run k8s.io/dynamic-resource-allocation/structured
// on the same slices and claims and compare, node by node.
//
// Rails are numbered as Railyard numbers them (the first GPU a NIC
// serves); NICOrder translates from NIC order, NVIDIA's operators' rail
// numbering (nicorder.go).
//
// Needs: resource.k8s.io/v1 (Kubernetes 1.34 or later, DRA on by default),
// a GPU DRA driver that publishes resource.kubernetes.io/pcieRoot on its
// GPUs, and Railyard's DRA driver (railyard.io/rail on each NIC device).
package jobrails
