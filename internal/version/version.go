// Package version holds the release version and source revision of the
// Railyard binaries. Both are set at link time by `make build` and
// `make images` (internal/image), for example:
//
//	go build -ldflags "-X github.com/railyard-io/railyard/internal/version.version=0.1.0 \
//	    -X github.com/railyard-io/railyard/internal/version.revision=$(git rev-parse HEAD)"
//
// A binary built without them reports "dev" and "unknown".
package version

// Set by the linker (-X); never assigned by code or tests.
var (
	version  = "dev"
	revision = "unknown"
)

// Version is the release version the binary was built as ("dev" when not
// set at link time).
func Version() string { return version }

// Revision is the source revision (a git commit) the binary was built from
// ("unknown" when not set at link time).
func Revision() string { return revision }

// String is "<version> (<revision>)".
func String() string { return version + " (" + revision + ")" }
