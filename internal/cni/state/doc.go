// Package state keeps railyard-cni's on-disk record of each attached device
// and the per-device lock that serialises ADD, DEL and GC on one device
// across processes.
//
// Layout below the state directory:
//
//	devices/<key>.json   one Record per device in use (key: PCI address or
//	                     "netdev-<name>"); written atomically (temp + rename)
//	locks/<key>.lock     flock(2) target for the device; never removed
//
// A record is written before the first change to a device and removed only
// once the device is back on the host, so a crash at any point leaves enough
// to finish the job on the next DEL, GC or ADD.
package state
