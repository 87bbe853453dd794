// Package clitest runs a railyard verb in a test the way the command line
// does, with captured output streams.
package clitest
