package release

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunRefusesBadFlags(t *testing.T) {
	epoch := func(k string) (string, bool) { return "1754049600", k == "SOURCE_DATE_EPOCH" }
	none := func(string) (string, bool) { return "", false }
	for _, tc := range []struct {
		args []string
		env  func(string) (string, bool)
		want string
	}{
		{[]string{"--revision", "abc"}, epoch, "required"},
		{[]string{"--version", "0.2.0"}, epoch, "required"},
		{[]string{"--version", "v0.2.0", "--revision", "abc"}, epoch, "without the leading v"},
		{[]string{"--version", "0.2.0", "--revision", "abc"}, none, "SOURCE_DATE_EPOCH is required"},
		{[]string{"--version", "0.2.0", "--revision", "abc", "--created", "yesterday"}, none, "want Unix seconds"},
		{[]string{"--version", "0.2.0", "--revision", "abc", "extra"}, epoch, "unexpected arguments"},
		{[]string{"--version", "0.2.0", "--revision", "abc", "--out", t.TempDir(), "--arch", "amd64", "--infiniband-arch", "arm64"}, epoch, "not among the image architectures"},
	} {
		var out, errOut bytes.Buffer
		err := Run(t.Context(), tc.args, tc.env, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%q printed %q", tc.args, out.String())
		}
	}
}
