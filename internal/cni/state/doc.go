// Package state keeps railyard-cni's on-disk record of each attached device
// and the per-device lock that serialises ADD, DEL and GC on one device
// across processes.
//
// Layout below the state directory:
//
//	devices/<key>.json   one Record per device in use (key: PCI address or
//	                     "netdev-<name>"); written atomically (temp + rename)
//	locks/<key>.lock     flock(2) target for the device; removed on unlock
//	                     when the device has no record
//
// A record is written before the first change to a device and removed only
// once the device is back on the host, so a crash at any point leaves enough
// to finish the job on the next DEL, GC or ADD. Put and Delete are durable
// when they return (fsync of the file and the directory); Stage, for ADD's
// first record, puts it in place at once and makes it durable in the
// background, for ADD to wait on before anything that outlives a power loss.
package state
