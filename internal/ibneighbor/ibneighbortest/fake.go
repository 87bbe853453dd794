package ibneighbortest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/railyard-io/railyard/internal/ibneighbor"
)

// Key names one smpquery run: the CA (-C), the port (-P) and the
// operation ("nodeinfo", "nodedesc", "portinfo").
type Key struct {
	CA   string
	Port int
	Op   string
}

// Answer is what a run prints on standard output and how it fails (nil:
// it succeeds).
type Answer struct {
	Out string
	Err error
}

// Fake is a fake smpquery. A run without an answer fails as smpquery
// does when nothing answers at hop 1 (an iberror line and an exit
// status). With NotInstalled every run fails as exec does for a command
// not in PATH. It records every command line. Safe for concurrent use.
type Fake struct {
	Answers      map[Key]Answer
	NotInstalled bool

	mu    sync.Mutex
	calls []string
}

var _ ibneighbor.Runner = (*Fake)(nil)

// Run answers one smpquery command line.
func (f *Fake) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, strings.Join(append([]string{name}, args...), " "))
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.NotInstalled {
		return nil, &exec.Error{Name: name, Err: exec.ErrNotFound}
	}
	if name != ibneighbor.Tool {
		return nil, fmt.Errorf("fake smpquery: asked to run %q", name)
	}
	k, err := key(args)
	if err != nil {
		return nil, err
	}
	a, ok := f.Answers[k]
	if !ok {
		return []byte("smpquery: iberror: failed: operation " + k.Op + ": node info query failed\n"),
			fmt.Errorf("fake smpquery %s: exit status 255: ibwarn: [4242] mad_rpc: _do_madrpc failed; dport (DR path slid 65535; dlid 65535; 0,1)", strings.Join(args, " "))
	}
	return []byte(a.Out), a.Err
}

// Calls returns the command lines run so far.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// key reads -C CA -P PORT -D OP ... as Query writes them.
func key(args []string) (Key, error) {
	var k Key
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-C" && i+1 < len(args):
			i++
			k.CA = args[i]
		case a == "-P" && i+1 < len(args):
			i++
			p, err := strconv.Atoi(args[i])
			if err != nil {
				return Key{}, fmt.Errorf("fake smpquery: -P %q", args[i])
			}
			k.Port = p
		case a == "-D":
		case strings.HasPrefix(a, "-"):
			return Key{}, fmt.Errorf("fake smpquery: unexpected option %q", a)
		default:
			if k.Op == "" {
				k.Op = a
			}
		}
	}
	if k.CA == "" || k.Port == 0 || k.Op == "" {
		return Key{}, fmt.Errorf("fake smpquery: no -C, -P or operation in %q", args)
	}
	return k, nil
}
