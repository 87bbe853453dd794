package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/version"
)

func runRoot(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut strings.Builder
	if err := Run(context.Background(), args, iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

func TestVersion(t *testing.T) {
	want := "railyard " + version.String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if got := runRoot(t, args...); got != want {
			t.Errorf("%v: %q, want %q", args, got, want)
		}
	}
}

// Every command a user runs shows examples in its --help.
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && !c.Hidden && strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no Example in --help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(iostreams.Streams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}))
	if help := runRoot(t, "bench", "report", "--help"); !strings.Contains(help, "Examples:\n  railyard bench report --result") {
		t.Errorf("bench report --help:\n%s", help)
	}
}
