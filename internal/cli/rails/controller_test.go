package rails

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

func TestControllerRefusesBadFlagsBeforeConnecting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--namespace=", "--identity=pod-1"}, "--namespace and --identity are required"},
		{[]string{"--namespace=ns", "--identity=pod-1", "--rechoose-after=0s"}, "must be positive"},
		{[]string{"--namespace=ns", "--identity=pod-1", "--toleration=bad key"}, "toleration"},
	} {
		connected := false
		connect := func(string, time.Duration) (kubernetes.Interface, error) { connected = true; return nil, nil }
		var out, errOut bytes.Buffer
		cmd := newControllerCommand(iostreams.Streams{Out: &out, ErrOut: &errOut}, connect)
		cmd.SetArgs(tc.args)
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
		if connected {
			t.Errorf("%v: connected before checking its flags", tc.args)
		}
	}
}
