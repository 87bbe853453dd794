// Package cniinstall copies the railyard-cni binary from the image into the
// node's CNI bin directory (the chart's init container,
// cmd/railyard-cni-install).
//
// The copy is atomic and touches nothing else: the binary is written to a
// temporary file in the same directory (".railyard-cni.tmp-*"), fsynced,
// made 0755, renamed over the target and the directory fsynced. A runtime
// that executes railyard-cni at that moment runs either the old or the new
// file, never a partial one (writing in place would also fail with ETXTBSY
// while the old binary runs). An identical file is left as it is. The only
// other files it may remove are its own temporary files left by a run that
// died.
package cniinstall
