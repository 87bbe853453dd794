package image

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestParseSourceFlags: the flags hack/image and hack/release share are
// checked in one place, with the creation time required or defaulted as
// each command asks.
func TestParseSourceFlags(t *testing.T) {
	epoch := func(k string) (string, bool) { return "1754049600", k == "SOURCE_DATE_EPOCH" }
	none := func(string) (string, bool) { return "", false }
	for _, tc := range []struct {
		args     []string
		env      func(string) (string, bool)
		required bool
		want     time.Time
		ok       bool
		err      string
	}{
		{args: []string{"--version", "1", "--revision", "abc"}, env: epoch, want: time.Unix(1754049600, 0).UTC(), ok: true},
		{args: []string{"--version", "1", "--revision", "abc", "--created", "5"}, env: epoch, want: time.Unix(5, 0).UTC(), ok: true},
		{args: []string{"--version", "1", "--revision", "abc"}, env: none, want: time.Unix(0, 0).UTC(), ok: true},
		{args: []string{"--version", "1", "--revision", "abc"}, env: none, required: true, err: "SOURCE_DATE_EPOCH is required"},
		{args: []string{"--version", "1", "--revision", "abc", "--created", "-1"}, env: none, err: "want Unix seconds"},
		{args: []string{"--version", "1"}, env: epoch, err: "required"},
		{args: []string{"--version", "1", "--revision", "abc", "x"}, env: epoch, err: "unexpected arguments"},
		{args: []string{"--help"}, env: epoch},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(&strings.Builder{})
		var s SourceFlags
		AddSourceFlags(fs, &s, "v", "c")
		got, ok, err := ParseSourceFlags(fs, &s, tc.args, tc.env, tc.required)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%q: %v %v %v, want %v %v", tc.args, got, ok, err, tc.want, tc.ok)
		}
	}
}
