// Package atomicfile replaces and removes small state files durably: a
// reader, or a process restarted after a crash or a power loss, sees the
// old content or the new one, never a part. It is renameio (temporary file
// beside the target, fsync, rename) plus the directory's fsync that makes
// the rename itself durable. The DRA driver's checkpoint and CDI specs and
// the DRA view railyard-cni reads use it; the binding store and the CNI
// installer keep their own write steps (the store's crash tests inject a
// fault between them; the installer names its temporary files for its
// own clean-up) and share SyncDir.
package atomicfile
