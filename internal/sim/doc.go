// Package sim simulates a cluster of identical GPU nodes to compare NIC
// allocation policies side by side: a seeded workload of pods arrives and
// leaves, a simple scheduler places each pod on a node, a model of the
// stock kubelet (Topology Manager over NUMA nodes) and of the NVIDIA device
// plugin chooses its GPUs, and each policy chooses its RDMA devices at its
// binding time: allocate (kubelet's GetPreferredAllocation, which knows the
// pod's GPUs only when kubelet's map order allocated them first, a seeded
// coin toss per pod), sandbox (late binding: NUMA tokens at allocate time,
// devices once the GPUs are known) or claim (with the GPUs over every free
// device: the DRA model dra-pcieroot and the optimum). Every policy sees
// the same workload and the same GPU choices; the results are the fraction
// of GPUs whose nearest allocated NIC is GPUDirect-capable (PIX or PXB), the
// class histogram, modelled bandwidth, rejected pods, stranded devices and
// the policies' decision latency, and Result.Table formats the comparison
// once for every renderer.
//
// Jobs of several pods (MixEntry.Pods) run on a rail-optimized fabric:
// rail r of every node (topology.NICRails) is cabled to leaf r of its
// scalable unit (Config.SUNodes nodes), units joined by a spine. A job is
// placed whole or not at all (but for job-rails-admission): each pod on
// its own as above (per-pod,
// today's scheduler and per-pod claims), or, for job-rails, every pod on
// one rail set on its own node (OneRailSet), waiting up to Config.MaxWait
// when the cluster has the GPUs but not on one rail set; or, for
// job-rails-admission (AdmissionRailSet, the rail controller's policy),
// on the set chosen at the job's arrival by jobrails.Choose's rule, each
// pod starting when it has room on it, the set chosen again after
// Config.RechooseAfter while no pod has started. Per policy,
// PolicyResult.MultiPod gives the share of jobs on one rail set, the
// share under one leaf layer, the waits and the GPUs they stranded, the
// re-choices and the GPUs held idle by pods started before their job's
// others, and Result.JobTable formats it.
//
// All nodes share one immutable *topology.Topology (the machine model) and
// the policies' alloc.Index of it; a node's state is only which GPUs and
// devices are free, in pointer-free slices. Pure policies' answers are
// remembered by request, so a million pods cost a few thousand decisions.
package sim
