package image

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// SourceFlags are the flags every command that builds images from source
// shares (hack/image and hack/release): what is built, which revision it
// is, when it was made and where the Debian packages come from. One
// definition, so the two commands cannot drift apart.
type SourceFlags struct {
	Dir      string
	Version  string
	Revision string
	Source   string
	created  string
	Debian   DebianOptions
}

// AddSourceFlags defines the shared flags on fs; versionUsage describes
// --version for that command.
func AddSourceFlags(fs *pflag.FlagSet, s *SourceFlags, versionUsage, createdUsage string) {
	fs.StringVar(&s.Dir, "dir", ".", "module root to build from")
	fs.StringVar(&s.Version, "version", "", versionUsage)
	fs.StringVar(&s.Revision, "revision", "", "source revision, the git commit (required)")
	fs.StringVar(&s.Source, "source", "https://github.com/railyard-io/railyard", "OCI source label")
	fs.StringVar(&s.created, "created", "", createdUsage)
	fs.StringVar(&s.Debian.Mirror, "debian-mirror", DefaultDebianMirror, "Debian archive of the infiniband-diags packages (checked against pinned SHA256 sums)")
	fs.StringVar(&s.Debian.CacheDir, "debian-cache", filepath.Join("_output", "debs"), "directory keeping the verified .deb files between builds")
}

// ParseSourceFlags parses args into fs and checks the shared flags. ok is
// false (with a nil error) when --help was asked for. With
// createdRequired, a missing --created and SOURCE_DATE_EPOCH is an error;
// otherwise the time defaults to the Unix epoch.
func ParseSourceFlags(fs *pflag.FlagSet, s *SourceFlags, args []string, env func(string) (string, bool), createdRequired bool) (created time.Time, ok bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return time.Time{}, false, nil
		}
		return time.Time{}, false, err
	}
	if fs.NArg() > 0 {
		return time.Time{}, false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if s.Version == "" || s.Revision == "" {
		return time.Time{}, false, fmt.Errorf("--version and --revision are required")
	}
	c := s.created
	if c == "" {
		c, _ = env("SOURCE_DATE_EPOCH")
	}
	if c == "" {
		if createdRequired {
			return time.Time{}, false, fmt.Errorf("--created or SOURCE_DATE_EPOCH is required (the commit's time: git log -1 --format=%%ct)")
		}
		c = "0"
	}
	secs, err := strconv.ParseInt(c, 10, 64)
	if err != nil || secs < 0 {
		return time.Time{}, false, fmt.Errorf("--created / SOURCE_DATE_EPOCH %q: want Unix seconds", c)
	}
	return time.Unix(secs, 0).UTC(), true, nil
}
