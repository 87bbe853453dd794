package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// repoRoot is the module root (two levels above this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// exportCommit writes the tree of commit into a new directory (git archive),
// as a fresh checkout would have it.
func exportCommit(t *testing.T, root, commit string) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	var tarball bytes.Buffer
	archive.Stdout = &tarball
	if err := archive.Run(); err != nil {
		t.Skipf("git archive: %v", err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return dir
}

// TestTwoBuildsOfOneCommitGiveTheSameDigest builds the whole image twice
// from two separate exports of HEAD (different paths, file times and
// temporary directories) and compares the archives byte for byte.
func TestTwoBuildsOfOneCommitGiveTheSameDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary twice")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	commit := strings.TrimSpace(string(out))
	var digests []string
	var sums [][32]byte
	for i := range 2 {
		dir := exportCommit(t, root, commit)
		if i == 1 { // file times of the second checkout differ from the first's
			if err := os.Chtimes(filepath.Join(dir, "go.mod"), time.Now(), time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		o := Options{
			Dir: dir, Packages: DefaultPackages(), Arch: "amd64", Version: "0.1.0", Revision: commit,
			Source: "https://github.com/railyard-io/railyard", Created: time.Unix(1754049600, 0),
			Name: "ghcr.io/railyard-io/railyard:0.1.0", Out: filepath.Join(t.TempDir(), fmt.Sprintf("image-%d.tar", i)),
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		res, err := Build(ctx, o)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(o.Out)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, res.Digest.String())
		sums = append(sums, sha256.Sum256(b))
		t.Logf("build %d from %s: %s, archive %d bytes, sha256 %x", i, dir, res.Digest, res.Archive, sums[i])
		for _, bin := range []string{"railyard-agent", "railyard-cni", "railyard-cni-install", "railyard"} {
			if res.Sizes[bin] < 1<<20 {
				t.Errorf("%s is %d bytes", bin, res.Sizes[bin])
			}
		}
	}
	if digests[0] != digests[1] || sums[0] != sums[1] {
		t.Fatalf("two builds of %s: digests %v, archive sums differ: %v", commit, digests, sums[0] != sums[1])
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for _, args := range [][]string{
		{"--revision", "abc"},
		{"--version", "0.1.0"},
		{"--version", "0.1.0", "--revision", "abc", "--created", "yesterday"},
		{"--version", "0.1.0", "--revision", "abc", "--created", "-5"},
		{"--version", "0.1.0", "--revision", "abc", "--name", "railyard:0.1.0"},
		{"--version", "0.1.0", "--revision", "abc", "extra"},
	} {
		var out, errOut bytes.Buffer
		err := Run(t.Context(), args, none, &out, &errOut)
		if err == nil {
			t.Errorf("%q accepted", args)
		}
		if out.Len() != 0 {
			t.Errorf("%q printed %q", args, out.String())
		}
	}
	bad := func(k string) (string, bool) { return "soon", k == "SOURCE_DATE_EPOCH" }
	var out, errOut bytes.Buffer
	if err := Run(t.Context(), []string{"--version", "0.1.0", "--revision", "abc"}, bad, &out, &errOut); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
		t.Fatalf("bad SOURCE_DATE_EPOCH: %v", err)
	}
}
