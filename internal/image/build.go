package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// VersionPackage is the package whose version and revision variables the
// builds set with -X.
const VersionPackage = "github.com/railyard-io/railyard/internal/version"

// DefaultPackages are the commands in the image, all under /usr/local/bin:
// the agent, the CNI plugin, its installer and the CLI (railyard doctor
// runs from the same image).
func DefaultPackages() []string {
	return []string{"./cmd/railyard-agent", "./cmd/railyard-cni", "./cmd/railyard-cni-install", "./cmd/railyard"}
}

// BinDir is where the binaries are in the image.
const BinDir = "usr/local/bin"

var stampRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// BuildOptions are the inputs of GoBuild.
type BuildOptions struct {
	// Dir is the module root the packages are relative to.
	Dir string
	// Packages to build ("./cmd/railyard-agent"); each becomes a file named
	// after its last element.
	Packages []string
	Arch     string // GOARCH
	Version  string
	Revision string
	// OutDir receives the binaries.
	OutDir string
}

// GoBuildArgs returns the go command's arguments and the environment
// overrides GoBuild uses; exported so docs and the Dockerfile can be checked
// against them.
func GoBuildArgs(o BuildOptions) (args, env []string, err error) {
	for what, v := range map[string]string{"version": o.Version, "revision": o.Revision} {
		if !stampRE.MatchString(v) {
			return nil, nil, fmt.Errorf("build: %s %q: want letters, digits and ._+- only", what, v)
		}
	}
	if len(o.Packages) == 0 {
		return nil, nil, fmt.Errorf("build: no packages")
	}
	ldflags := strings.Join([]string{
		"-s", "-w", "-buildid=",
		"-X", VersionPackage + ".version=" + o.Version,
		"-X", VersionPackage + ".revision=" + o.Revision,
	}, " ")
	args = []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", o.OutDir + string(filepath.Separator)}
	args = append(args, o.Packages...)
	env = []string{
		"CGO_ENABLED=0",
		"GOOS=linux",
		"GOARCH=" + o.Arch,
		// The user's GOFLAGS (-race, -cover, -tags) and microarchitecture
		// levels would change the bytes: builds ignore them.
		"GOFLAGS=",
		"GOAMD64=v1",
		"GOARM64=v8.0",
	}
	return args, env, nil
}

// GoBuild builds static binaries for the image and returns them as layer
// files under BinDir, mode 0755, in Packages order.
func GoBuild(ctx context.Context, o BuildOptions) ([]File, error) {
	args, env, err := GoBuildArgs(o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("build: go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	files := make([]File, 0, len(o.Packages))
	for _, p := range o.Packages {
		base := path.Base(p)
		data, err := os.ReadFile(filepath.Join(o.OutDir, base))
		if err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
		files = append(files, File{Path: BinDir + "/" + base, Mode: 0o755, Data: data})
	}
	return files, nil
}
