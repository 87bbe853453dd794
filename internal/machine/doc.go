// Package machine reads Railyard's machine descriptions: JSON files that
// describe a real GPU server (sockets, NUMA nodes, the PCIe tree of root
// complexes, switches, GPUs and NICs, and where published the
// `nvidia-smi topo -m` classes). The files come from public sources and their
// schemas differ a little, so Parse reads them tolerantly into one normalized
// Description; fakesysfs turns a Description into a sysfs tree.
package machine
