package exectest

import (
	"bytes"
	"os/exec"
	"testing"
)

// WriteExecutable writes data to path with mode 0755, through a child sh
// (see the package documentation for why). The test fails if it cannot.
func WriteExecutable(t testing.TB, path string, data []byte) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `umask 022 && cat >"$1" && chmod 0755 "$1"`, "sh", path)
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing executable %s: %v: %s", path, err, out)
	}
}

// WriteScript writes a shell script: "#!/bin/sh\n" followed by body.
func WriteScript(t testing.TB, path, body string) {
	t.Helper()
	WriteExecutable(t, path, []byte("#!/bin/sh\n"+body))
}
