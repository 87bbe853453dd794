// Package rails is `railyard rails`: `template`, the ResourceClaimTemplate
// that gives every pod of a job the same rails (internal/jobrails), with
// the rail set chosen from the cluster's ResourceSlices, claims and
// DeviceTaintRules as the scheduler's allocator would; and `scheduler`,
// the objects topology-aware schedulers (Kueue, Volcano, KAI,
// kube-scheduler's PodGroups) need to keep a job under one leaf set or
// unit, from the nodes' fabric labels (internal/schedtopo).
package rails
