package image

import (
	"io"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

func streams(out, errOut io.Writer) iostreams.Streams {
	return iostreams.Streams{Out: out, ErrOut: errOut}
}
