// Package config parses and validates railyard-cni network configuration:
// a strict decode that rejects unknown top-level fields, defaults, then a
// validation that reports every invalid field by its JSON path. Parse never
// panics on any input (it is fuzzed).
package config
