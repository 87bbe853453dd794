// Package capture records what discovery and doctor read from a node
// (sysfs, and the /proc, /etc and /lib files doctor reads) and writes it as
// a gzipped tarball that `--sysfs` and `--host-root` replay: a node's
// `railyard topo --capture FILE`, for a bug report or a test fixture, as
// hwloc-gather-topology does for hwloc.
//
// What it stores comes from the readers themselves: sysfs.FS and
// doctor.HostFiles tell a Recorder every path they touch, so the capture
// follows the readers as they change, with no list of paths of its own.
// Symlinks are stored as symlinks (relative, within their tree; one that
// leads out of its tree is neither stored nor followed), each
// directory a reader lists with its entries (files it did not read are
// empty), and every regular file a reader read with its content, bounded
// as the readers bound it. No environment, no process command line: a
// /proc/<pid>/environ or cmdline is never stored, and of the kernel's
// command line (/proc/cmdline) only the IOMMU parameters doctor reads.
// The whole capture is bounded (MaxBytes, MaxEntries).
package capture
