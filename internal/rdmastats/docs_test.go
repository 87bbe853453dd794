package rdmastats

import (
	"os"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/rdmacounter"
)

// docs/counters.md lists every metric on a row of its own with its
// source file, and no metric that is not exported.
func TestDocsListEveryMetricWithItsSource(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/counters.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| `"+Prefix) {
			name := strings.Trim(strings.SplitN(l, "|", 3)[1], " `")
			rows[name] = l
		}
	}
	want := map[string]bool{}
	for _, k := range rdmacounter.Counters() {
		name := MetricName(k)
		want[name] = true
		row, ok := rows[name]
		if !ok {
			t.Errorf("docs/counters.md has no row for %s", name)
			continue
		}
		if src := "`ports/N/" + string(k.Dir) + "/" + k.File + "`"; !strings.Contains(row, src) {
			t.Errorf("docs/counters.md's row for %s does not name %s", name, src)
		}
	}
	for name := range rows {
		if !want[name] {
			t.Errorf("docs/counters.md lists %s, which is not exported", name)
		}
	}
}
