// Package nodesetup makes a node's SR-IOV state match a node policy
// (api/nodesetup/v1alpha1): per named PF, the number of VFs, the VFs'
// driver (the PF's kernel driver or vfio-pci), and deterministic VF
// addresses (InfiniBand node/port GUIDs, RoCE MACs) derived from the PF's
// node GUID and the VF index (DeriveGUID, DeriveMAC).
//
// Apply is idempotent and resumable: it reads the current state, changes
// only what differs, and reports each change. A run that failed half-way
// (VFs removed but not yet created, a GUID set but the VF not rebound) is
// completed by the next run, because every step is decided from what the
// node shows, never from what the last run did. A PF that no policy entry
// names is never read for changes nor touched.
//
// Changing a PF's VF count destroys all its VFs (the kernel accepts a new
// non-zero count only from 0), so Apply first asks its usage sources which
// VFs pods use and refuses, naming them. VFs in use are also never
// rebound nor readdressed; Apply notes them instead. When a source cannot
// tell (a record that does not decode, kubelet down), any VF may be in use:
// Apply destroys none and leaves the VFs that existed before the run as
// they are, failing with ErrUsageUnknown and the changes it held back;
// creating VFs from 0 goes ahead. A policy naming one PF twice (by PCI
// address and by netdev) is refused before anything changes.
//
// Side effects go through two narrow interfaces: SRIOV (sriov_numvfs and
// driver binding: netops.SRIOVSysfs on a node, fakesysfs.Kernel in tests)
// and VFOps (addresses through the PF: netops.Linux, netopstest.Fake).
// Reads go through internal/sysfs.
package nodesetup
