package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What the linker set wins; what it left at its default comes from Go's
// build information (go install ...@v0.1.0: the module version; a plain
// go build in a checkout: a pseudo-version and vcs.revision, dirty when
// vcs.modified); a binary with neither says dev (unknown).
func TestResolveFallsBackToBuildInfo(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name   string
		v, rev string
		bi     *debug.BuildInfo
		want   [2]string
	}{
		{name: "no build information", v: "dev", rev: "unknown", want: [2]string{"dev", "unknown"}},
		{name: "nothing in it", v: "dev", rev: "unknown", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: [2]string{"dev", "unknown"}},
		{name: "go install @v0.1.0", v: "dev", rev: "unknown", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, want: [2]string{"v0.1.0", "unknown"}},
		{name: "go build in a clean checkout", v: "dev", rev: "unknown",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101120000-0123456789ab"}, Settings: vcs("0123456789abcdef", "false")},
			want: [2]string{"v0.0.0-20260101120000-0123456789ab", "0123456789abcdef"}},
		{name: "go build in a changed checkout", v: "dev", rev: "unknown",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef", "true")},
			want: [2]string{"dev", "0123456789abcdef-dirty"}},
		{name: "the linker's flags win", v: "1.2.3", rev: "abc123",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: vcs("fff", "true")},
			want: [2]string{"1.2.3", "abc123"}},
		{name: "only a version linked", v: "1.2.3", rev: "unknown",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: vcs("fff", "false")},
			want: [2]string{"1.2.3", "fff"}},
	} {
		v, rev := resolve(tc.v, tc.rev, tc.bi)
		if diff := cmp.Diff(tc.want, [2]string{v, rev}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// build builds testdata/printversion with ldflags (and -buildvcs=true
// when vcs is set: GOFLAGS may turn stamping off) and returns what it
// prints.
func build(t *testing.T, ldflags string, vcs bool) (bin, out string) {
	t.Helper()
	bin = filepath.Join(t.TempDir(), "v")
	args := []string{"build", "-o", bin, "-ldflags", ldflags}
	if vcs {
		args = append(args, "-buildvcs=true")
	}
	cmd := exec.Command("go", append(args, "./testdata/printversion")...)
	// Go stamps the VCS state with git status: no optional index refresh.
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		if vcs && strings.Contains(string(b), "VCS") {
			t.Skipf("no VCS state to stamp here: %s", b)
		}
		t.Fatalf("go build: %v\n%s", err, b)
	}
	b, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	return bin, strings.TrimSpace(string(b))
}

// TestLinkerFlagsSetVersionAndRevision builds a tiny program with the -X
// flags internal/image uses and checks what it prints: a renamed variable
// would make -X silently do nothing.
func TestLinkerFlagsSetVersionAndRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	const pkg = "github.com/railyard-io/railyard/internal/version"
	if _, got := build(t, "-X "+pkg+".version=1.2.3 -X "+pkg+".revision=abc123", false); got != "1.2.3 (abc123)" {
		t.Fatalf("printed %q, want %q", got, "1.2.3 (abc123)")
	}
}

// A plain go build (no -X) of a checkout reports the version and
// revision Go stamped into the binary, as `go version -m` shows them,
// instead of dev (unknown).
func TestPlainGoBuildReportsBuildInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin, got := build(t, "", true)
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rev, modified, mod string
	for _, l := range strings.Split(string(info), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			mod = f[2]
		case len(f) >= 2 && strings.HasPrefix(f[1], "vcs.revision="):
			rev = strings.TrimPrefix(f[1], "vcs.revision=")
		case len(f) >= 2 && f[1] == "vcs.modified=true":
			modified = "-dirty"
		}
	}
	if rev == "" {
		t.Skipf("go build stamped no VCS revision here (no git, or not a checkout):\n%s", info)
	}
	want := "dev"
	if mod != "" && mod != "(devel)" {
		want = mod
	}
	want += " (" + rev + modified + ")"
	if got != want {
		t.Errorf("printed %q, want %q (go version -m:\n%s)", got, want, info)
	}
}
