// Package iostreams carries the standard streams a command writes to, so
// commands never touch os.Stdout directly and tests can capture output.
package iostreams
