// Package cli assembles the railyard command tree. Each verb lives in its own
// package under internal/cli/ and exports NewCommand(iostreams.Streams); this
// package only wires them together.
package cli
