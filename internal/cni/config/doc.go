// Package config parses and validates railyard-cni network configuration:
// a strict decode (internal/strictjson: one object and nothing after it,
// no key twice, unknown top-level fields named, runtimeConfig and ipam
// keeping the runtime's and the IPAM plugin's own keys), defaults, then a
// validation that reports every invalid field by its JSON path, one
// function per group of fields. Host paths (stateDir, bindingDir,
// logFile, sysfsRoot, podResourcesSocket) are accepted only where
// railyard-cni owns them, or below a test root named in railyard-cni's own
// environment (paths.go). Parse never panics on any input (it is fuzzed).
package config
