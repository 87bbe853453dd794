package ibneighbor_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/exectest"
	"github.com/railyard-io/railyard/internal/ibneighbor"
)

// These run real processes (sh, and shell scripts standing in for
// smpquery); no infiniband-diags is needed.

func requireSh(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
}

func TestExecReturnsStdout(t *testing.T) {
	t.Parallel()
	requireSh(t)
	out, err := ibneighbor.Exec{}.Run(context.Background(), "sh", "-c", "printf 'Guid:x\\n'; echo ignored >&2")
	if err != nil || string(out) != "Guid:x\n" {
		t.Errorf("Run = %q, %v", out, err)
	}
}

func TestExecNotInstalled(t *testing.T) {
	t.Parallel()
	_, err := ibneighbor.Exec{}.Run(context.Background(), "railyard-no-such-smpquery", "-D", "nodeinfo", "0,1")
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Run = %v, want exec.ErrNotFound", err)
	}
}

// A failed run returns its stdout (smpquery's iberror line is there) and
// the first line of its stderr.
func TestExecFailureKeepsStdoutAndStderrsFirstLine(t *testing.T) {
	t.Parallel()
	requireSh(t)
	out, err := ibneighbor.Exec{}.Run(context.Background(), "sh", "-c",
		"echo 'smpquery: iberror: failed: x'; printf '\\nibwarn: first\\nsecond\\n' >&2; exit 255")
	if err == nil || !strings.HasSuffix(err.Error(), "exit status 255: ibwarn: first") {
		t.Errorf("Run error %v, want the exit status and stderr's first line only", err)
	}
	if string(out) != "smpquery: iberror: failed: x\n" {
		t.Errorf("Run stdout %q", out)
	}
}

// A failed run's standard error is quoted in its error: its first line
// comes out with terminal escapes made visible.
func TestExecEscapesStderr(t *testing.T) {
	t.Parallel()
	requireSh(t)
	_, err := ibneighbor.Exec{}.Run(context.Background(), "sh", "-c", "printf 'ibwarn: \\302\\23331mred \\342\\200\\256evil\\n' >&2; exit 255")
	if err == nil || !strings.HasSuffix(err.Error(), `exit status 255: ibwarn: \x9b31mred \u202eevil`) {
		t.Errorf("Run error %q, want stderr's first line escaped", err)
	}
}

func TestExecBoundsOutput(t *testing.T) {
	t.Parallel()
	requireSh(t)
	_, err := ibneighbor.Exec{MaxOutput: 1000}.Run(context.Background(), "sh", "-c", "i=0; while [ $i -lt 200 ]; do echo 0123456789; i=$((i+1)); done")
	if err == nil || !strings.Contains(err.Error(), "output over 1000 bytes") {
		t.Errorf("Run = %v, want the output refused", err)
	}
	out, err := ibneighbor.Exec{MaxOutput: 1000}.Run(context.Background(), "sh", "-c", "printf %0999d 0")
	if err != nil || len(out) != 999 {
		t.Errorf("Run of 999 bytes = %d bytes, %v", len(out), err)
	}
}

func TestExecTimesOut(t *testing.T) {
	t.Parallel()
	requireSh(t)
	start := time.Now()
	_, err := ibneighbor.Exec{Timeout: 100 * time.Millisecond}.Run(context.Background(), "sh", "-c", "exec sleep 30")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Errorf("Run = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run took %s after its 100ms timeout", d)
	}
}

// inDir runs commands from one directory through Exec: a stand-in
// smpquery there, without touching PATH.
type inDir string

func (d inDir) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return ibneighbor.Exec{}.Run(ctx, filepath.Join(string(d), name), args...)
}

// stub writes an executable smpquery script into a new directory: body
// sees the arguments as "$*".
func stub(t *testing.T, body string) inDir {
	t.Helper()
	requireSh(t)
	dir := t.TempDir()
	exectest.WriteScript(t, filepath.Join(dir, "smpquery"), body)
	return inDir(dir)
}

// Query through Exec and a script printing the hand-written outputs the
// way smpquery does (stdout, stderr, exit status -1 as 255).
func TestQueryThroughExecStubSmpquery(t *testing.T) {
	t.Parallel()
	ok := stub(t, `case "$*" in
"-C mlx5_0 -P 1 -D nodeinfo 0,1") cat <<'EOF'
`+switchNodeInfo+`EOF
;;
"-C mlx5_0 -P 1 -D nodedesc 0,1") cat <<'EOF'
`+switchNodeDesc+`EOF
;;
*) exit 2 ;;
esac
`)
	got, err := ibneighbor.Query(context.Background(), ok, "mlx5_0", 1)
	if err != nil || got != leafR3 {
		t.Errorf("Query = %+v, %v; want %+v", got, err, leafR3)
	}

	silent := stub(t, `case "$*" in
*portinfo*) cat <<'EOF'
`+strings.Replace(strings.Replace(downPortInfo, "Down", "Active", 1), "Polling\n", "LinkUp\n", 1)+`EOF
;;
*) echo 'ibwarn: [311] mad_rpc: _do_madrpc failed; dport (DR path slid 65535; dlid 65535; 0,1)' >&2
   echo 'smpquery: iberror: failed: operation nodeinfo: node info query failed'
   exit 255 ;;
esac
`)
	_, err = ibneighbor.Query(context.Background(), silent, "mlx5_0", 1)
	if !errors.Is(err, ibneighbor.ErrQuery) {
		t.Fatalf("Query = %v, want ErrQuery", err)
	}
	for _, s := range []string{"operation nodeinfo: node info query failed", "exit status 255: ibwarn: [311] mad_rpc: _do_madrpc failed"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}
