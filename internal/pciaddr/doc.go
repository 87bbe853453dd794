// Package pciaddr is the one definition of a PCI function address
// ("DDDD:BB:DD.F") and of a PCI host bridge name ("pciDDDD:BB") in Railyard:
// every package that reads, checks, normalises, compares or prints one goes
// through it, so no two of them can disagree.
//
// The rules:
//
//   - Domain: 4 to 8 hex digits. The kernel prints it with "%04x" (four
//     digits, or more without a leading zero above 0xffff: Intel VMD puts
//     its devices in domains from 10000); NVML and nvidia-smi print eight
//     ("00000000:1B:00.0"). Both parse to the same Addr.
//   - Bus: 2 hex digits. Device: 2 hex digits, at most 0x1f. Function: one
//     digit, at most 7.
//   - Parse accepts either case; String prints the canonical form, lower
//     case with the kernel's domain width, the name sysfs gives the
//     function. ParseCanonical and IsCanonical accept only that form (sysfs
//     directory names, topology keys).
//   - ParseOptionalDomain also accepts the short "BB:DD.F" form, meaning
//     domain 0000, for inputs that use it (a CNI deviceID, NCCL bus IDs).
//   - Order is numeric (domain, bus, device, function): 10000:00:04.0 sorts
//     after ffff:ff:1f.7, where string order would put it first.
//
// Parse never panics and never reads past its input (fuzzed).
// ParseCanonical does not allocate: it is on the GetPreferredAllocation path,
// where kubelet offers thousands of device IDs per call.
package pciaddr
