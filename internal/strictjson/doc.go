// Package strictjson is the one strict JSON decoder of Railyard's own
// formats: the DRA checkpoint and view, the CNI device status, the fabric
// ports annotation, the bench probe's hello, the device plugin's rail
// group state, railyard-cni's network configuration and the agent's
// configuration. A document is
// refused, with every problem named, when it has
//
//   - a key no field of the target knows, or a key that differs from a
//     field's name only in case (keys are case-sensitive, as Kubernetes
//     decodes its objects),
//   - a key twice in one object (the last would silently win),
//   - anything but white space after its one value,
//   - more bytes than the caller's limit (Read, ReadFile, UnmarshalLimit).
//
// It is sigs.k8s.io/json's UnmarshalStrict (the decoder of the Kubernetes
// API machinery) with those rules named, plus the size bound; numbers
// decoded into an interface keep integers as int64. A format that must
// accept unknown keys on purpose (a runtime's keys beside ours) says so at
// its call with AllowUnknownFields and keeps the other rules.
//
// It links no Kubernetes client (railyard-cni uses it).
package strictjson
