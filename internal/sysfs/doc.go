// Package sysfs reads the Linux sysfs attributes Railyard needs (PCI
// functions, network interfaces, RDMA devices and their ports) below a root
// directory that stands for /sys, so tests can point it at a generated tree.
// It only reads; the parsers of attribute values are pure and fuzzed.
//
// Every path is resolved within the root, symlinks included (openat2's
// RESOLVE_BENEATH, else os.Root): a symlink that leads out of it, absolute
// or with too many "..", fails with ErrOutsideRoot, so a captured or
// hand-made tree is never read past its root.
//
// Attributes are read from regular files only (a non-blocking open and
// fstat, so a FIFO or a device in a fake tree fails at once instead of
// hanging) and at most MaxAttrSize bytes. Values quoted in errors are cut
// short (Quote); Printable and Clip make names and messages read from a
// tree safe to print.
package sysfs
