// Package version holds the release version and source revision of the
// Railyard binaries. Both are set at link time by `make build` and
// `make images` (internal/image), for example:
//
//	go build -ldflags "-X github.com/railyard-io/railyard/internal/version.version=0.1.0 \
//	    -X github.com/railyard-io/railyard/internal/version.revision=$(git rev-parse HEAD)"
//
// A binary built without them (a plain `go build` or `go install`) reports
// what Go's build information says, as other Go tools do: the main
// module's version (v0.1.0 from `go install ...@v0.1.0`, a pseudo-version
// from a checkout) and the VCS revision Go stamped (vcs.revision, with
// "-dirty" when vcs.modified says the tree had changes). Only a binary
// with neither reports "dev" and "unknown".
package version

import (
	"runtime/debug"
	"sync"
)

// Set by the linker (-X); never assigned by code or tests.
var (
	version  = "dev"
	revision = "unknown"
)

// The linker's defaults: what a binary built without -X has.
const (
	unsetVersion  = "dev"
	unsetRevision = "unknown"
)

// resolved is what the binary reports, worked out once.
var resolved = sync.OnceValues(func() (string, string) {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, revision, bi)
})

// Version is the release version the binary was built as: the linker's,
// else the main module's version from the build information, else "dev".
func Version() string { v, _ := resolved(); return v }

// Revision is the source revision (a git commit) the binary was built
// from: the linker's, else vcs.revision from the build information
// ("-dirty" added when vcs.modified is true), else "unknown".
func Revision() string { _, r := resolved(); return r }

// String is "<version> (<revision>)".
func String() string { v, r := resolved(); return v + " (" + r + ")" }

// resolve picks the version and revision: what the linker set (v, rev)
// wins; what it left at its default comes from bi (nil when the binary
// has no build information).
func resolve(v, rev string, bi *debug.BuildInfo) (string, string) {
	if bi == nil {
		return v, rev
	}
	if v == unsetVersion && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if rev == unsetRevision {
		var commit, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if commit != "" {
			rev = commit
			if modified == "true" {
				rev += "-dirty"
			}
		}
	}
	return v, rev
}
