package iostreams

import (
	"io"
	"os"
)

// Streams are the input and output streams of one command invocation.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Std returns the process's standard streams.
func Std() Streams {
	return Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}
