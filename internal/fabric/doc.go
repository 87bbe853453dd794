// Package fabric is Railyard's view of the cluster's rail fabric: which
// leaf switch each node's NIC of each rail is cabled to, and what is
// wrong with that wiring.
//
// A node reports its ports (Port: its in-node rail, the NIC, and the
// neighbor the agent heard on it: the LLDP neighbor of a RoCE port,
// internal/lldp, or the switch GUID of an InfiniBand port). Analyze
// learns the fabric from them (units.go): units, groups of nodes cabled
// to the same leaves (a scalable unit of a rail-optimized cluster, a
// rack of a top-of-rack one), each unit's leaf per rail and its design
// (rail-optimized, top-of-rack or mixed). It then judges every port
// against its own unit (judge.go): swapped and rotated cables, cables
// on another rail's leaf, dark ports, nodes and rails, cables into
// another unit's leaf or a switch no peer uses, a rail-optimized unit's
// leaf carrying two rails, ports hearing several neighbors, mixed speeds
// or MTUs on a rail of a unit, and firmware off its model's release
// (firmware.go). Layout generates clusters cabled by design and is the
// one place that numbers a node's unit, for the tests and for the
// simulator (internal/sim). The node labels topology-aware schedulers
// (Kueue TAS levels, Volcano, KEP-5732) read come at two levels that nest
// (labels.go): LabelKeys.Labels derives a node's rail labels, leaf set and
// degraded rails from its own ports, and UnitLabels (unitlabels.go) each
// node's unit from every node's, for the cluster's one unit writer; a
// port's last switch (Port.LastSwitch) keeps a node with a dead rail in
// both. The keys are Railyard's or Topograph's (SchemeKeys).
//
// It is pure: no cluster access, no sysfs; the agent and `railyard
// fabric` feed it.
package fabric
