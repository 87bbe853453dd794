package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDockerfileMatchesImageBuilder: the Dockerfile cannot be built here
// (no Docker daemon), so check that it builds the same packages with the
// same flags and sets the same labels, user, PATH and command.
func TestDockerfileMatchesImageBuilder(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "\\\n", " ")), " ")
	args, env, err := GoBuildArgs(BuildOptions{Packages: DefaultPackages(), Arch: "ARCH", Version: "V", Revision: "R", OutDir: "/out"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range env {
		e = strings.Replace(e, "GOARCH=ARCH", "GOARCH=${TARGETARCH}", 1)
		if !strings.Contains(df, e+" ") {
			t.Errorf("Dockerfile lacks %s", e)
		}
	}
	ldflags := strings.NewReplacer("version=V", "version=${VERSION}", "revision=R", "revision=${REVISION}").Replace(args[4])
	want := "go build -trimpath -buildvcs=false -ldflags \"" + ldflags + "\" -o /out/ " + strings.Join(DefaultPackages(), " ")
	if !strings.Contains(df, want) {
		t.Errorf("Dockerfile's go build differs from\n%s", want)
	}
	for _, s := range []string{
		KeySource + "=\"https://github.com/railyard-io/railyard\"",
		KeyRevision + "=\"${REVISION}\"",
		KeyVersion + "=\"${VERSION}\"",
		KeyTitle + "=\"railyard\"",
		"COPY --from=build /out/ /" + BinDir + "/",
		"USER " + NonRootUser,
		"ENV PATH=/usr/local/bin",
		"FROM scratch",
		`CMD ["/usr/local/bin/railyard-agent"]`,
	} {
		if !strings.Contains(df, s) {
			t.Errorf("Dockerfile lacks %s", s)
		}
	}
}
