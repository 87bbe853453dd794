package cni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

// serveEnv is the environment of a CNI call for Serve.
func serveEnv(command, cid, netns, ifname string) func(string) string {
	env := map[string]string{"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns, "CNI_IFNAME": ifname, "CNI_PATH": "/opt/cni/bin"}
	return func(k string) string { return env[k] }
}

// deep is a JSON array nested n deep: encoding/json gives up at 10000.
func deep(n int) []byte {
	return append(bytes.Repeat([]byte("["), n), bytes.Repeat([]byte("]"), n)...)
}

// badStdins are configurations the skel refused before the plugin saw
// them, and one larger than MaxConfig.
func badStdins() map[string][]byte {
	return map[string][]byte{
		"empty":                    nil,
		"not JSON":                 []byte("not json at all"),
		"cniVersion a number":      []byte(`{"cniVersion":123,"name":"rdma-net","type":"railyard-cni"}`),
		"name a number":            []byte(`{"cniVersion":"1.1.0","name":5,"type":"railyard-cni"}`),
		"unknown cniVersion":       []byte(`{"cniVersion":"9.9.9","name":"rdma-net","type":"railyard-cni"}`),
		"no name":                  []byte(`{"cniVersion":"1.1.0","type":"railyard-cni"}`),
		"a 100k-deep array":        deep(100_000),
		"larger than MaxConfig":    append([]byte(`{"cniVersion":"1.1.0","name":"rdma-net","x":"`), bytes.Repeat([]byte("a"), MaxConfig)...),
		"an invalid network name":  []byte(`{"cniVersion":"1.1.0","name":"a b/c","type":"railyard-cni"}`),
		"trailing data after JSON": []byte(`{"cniVersion":"1.1.0","name":"rdma-net"} {}`),
	}
}

// TestServeDelSucceedsOnAnyStdinFakeVF: DEL through the plugin's entry
// point succeeds with nothing on stdout whatever its configuration. The
// skel refused these before the plugin ran (code 6, 1 or 7), and the pod
// stayed Terminating. (A configuration naming no state directory has DEL
// look in the default one, read-only.)
func TestServeDelSucceedsOnAnyStdinFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for name, stdin := range badStdins() {
		var out bytes.Buffer
		if err := w.plugin().Serve(ctx, serveEnv("DEL", "c1", pod1, "net1"), bytes.NewReader(stdin), &out, io.Discard); err != nil {
			t.Errorf("%s: DEL: %v (stdout %q)", name, err, out.String())
		}
		if out.Len() != 0 {
			t.Errorf("%s: DEL wrote %q on stdout, want nothing", name, out.String())
		}
	}
	w.assertPristine()
}

// TestServeDelWithTheRecordsStateDirReleasesOnAnyGarbageFakeVF: a garbled
// configuration that still names the state directory (as ADD's did)
// releases the device in that one DEL.
func TestServeDelWithTheRecordsStateDirReleasesOnAnyGarbageFakeVF(t *testing.T) {
	t.Parallel()
	for name, conf := range map[string]string{
		"cniVersion a number": `{"cniVersion":123,"name":"rdma-net","stateDir":%q,"sysfsRoot":%q}`,
		"name a number":       `{"cniVersion":"1.1.0","name":5,"stateDir":%q,"sysfsRoot":%q}`,
		"unknown cniVersion":  `{"cniVersion":"9.9.9","name":"rdma-net","stateDir":%q,"sysfsRoot":%q}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			if _, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, nil))); err != nil {
				t.Fatal(err)
			}
			stdin := strings.NewReader(fmt.Sprintf(conf, w.stateDir, w.sysfs))
			var out bytes.Buffer
			if err := w.plugin().Serve(ctx, serveEnv("DEL", "c1", pod1, "net1"), stdin, &out, io.Discard); err != nil || out.Len() != 0 {
				t.Fatalf("DEL: %v, stdout %q", err, out.String())
			}
			w.assertPristine()
		})
	}
}

// TestServeAddRefusesWhatTheSkelRefusedFakeVF: ADD keeps the skel's
// checks, each as one CNI error document on stdout.
func TestServeAddRefusesWhatTheSkelRefusedFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	want := map[string]uint{
		"empty": types.ErrDecodingFailure, "not JSON": types.ErrDecodingFailure, "cniVersion a number": types.ErrDecodingFailure,
		"name a number": types.ErrDecodingFailure, "unknown cniVersion": types.ErrIncompatibleCNIVersion,
		"no name": types.ErrInvalidNetworkConfig, "a 100k-deep array": types.ErrDecodingFailure,
		"larger than MaxConfig": types.ErrDecodingFailure, "an invalid network name": types.ErrInvalidNetworkConfig,
		"trailing data after JSON": types.ErrDecodingFailure,
	}
	for name, stdin := range badStdins() {
		var out bytes.Buffer
		err := w.plugin().Serve(ctx, serveEnv("ADD", "c1", pod1, "net1"), bytes.NewReader(stdin), &out, io.Discard)
		var e types.Error
		dec := json.NewDecoder(&out)
		if derr := dec.Decode(&e); derr != nil || dec.More() {
			t.Errorf("%s: stdout is not one error document: %q (%v)", name, out.String(), derr)
		}
		if err == nil || e.Code != want[name] {
			t.Errorf("%s: ADD %v, code %d, want code %d", name, err, e.Code, want[name])
		}
	}
	w.assertPristine()
}

// zeros is /dev/zero: endless, counting what was read.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestServeBoundsStdinFakeVF: stdin from /dev/zero is refused after
// MaxConfig bytes, for every command (it ran the plugin out of memory).
func TestServeBoundsStdinFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, cmd := range []string{"ADD", "CHECK", "DEL", "STATUS", "GC"} {
		z := &zeros{}
		var out bytes.Buffer
		done := make(chan error, 1)
		go func() { done <- w.plugin().Serve(ctx, serveEnv(cmd, "c1", pod1, "net1"), z, &out, io.Discard) }()
		select {
		case err := <-done:
			if cmd == "DEL" && err != nil {
				t.Errorf("DEL with stdin from /dev/zero: %v", err)
			}
			if cmd != "DEL" && err == nil {
				t.Errorf("%s with stdin from /dev/zero succeeded", cmd)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s with stdin from /dev/zero did not return", cmd)
		}
		if z.n > 2*MaxConfig {
			t.Errorf("%s read %d bytes of stdin, want at most about %d", cmd, z.n, MaxConfig)
		}
	}
}

// TestServeLogFileMustBeARegularFileFakeVF: a logFile that is a FIFO is
// refused at once (a note on stderr, the log going there) instead of
// blocking the call, and stdout carries the result only.
func TestServeLogFileMustBeARegularFileFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	fifo := filepath.Join(t.TempDir(), "log")
	must(t, syscall.Mkfifo(fifo, 0o600))
	// A reader keeps the FIFO open, so a blocking writer would not hang
	// on open but would write there.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	must(t, err)
	defer r.Close()
	conf := w.conf(vfPCI, map[string]any{"logFile": fifo, "logLevel": "debug"})
	var out, errOut bytes.Buffer
	if err := w.plugin().Serve(ctx, serveEnv("DEL", "c1", pod1, "net1"), bytes.NewReader(conf), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q, want nothing", out.String())
	}
	if !strings.Contains(errOut.String(), "logFile "+fifo+" refused") || !strings.Contains(errOut.String(), "railyard-cni done") {
		t.Errorf("stderr %q, want the refusal and the log line", errOut.String())
	}
	b := make([]byte, 64)
	if n, _ := r.Read(b); n != 0 {
		t.Errorf("the FIFO got %q", b[:n])
	}
}

// TestAddNetnsErrorsSayWhyFakeVF: a CNI_NETNS that is no namespace is
// refused with a message that ends in what is wrong, not in "(<nil>)".
func TestAddNetnsErrorsSayWhyFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	_, err := w.plugin().Add(ctx, args("c1", "/var/run/netns/none", "net1", w.conf(vfPCI, nil)))
	if ToCNIError(err).Code != types.ErrInvalidEnvironmentVariables || strings.Contains(err.Error(), "<nil>") || !strings.HasSuffix(err.Error(), "is not a network namespace") {
		t.Fatalf("ADD into a missing namespace: %v", err)
	}
	w.assertPristine()
}

// FuzzServeDel: DEL through the entry point never fails and never writes
// to stdout, whatever its stdin (here for an attachment never added, on a
// fake node).
func FuzzServeDel(f *testing.F) {
	for _, b := range badStdins() {
		if len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"cniVersion":"1.1.0","name":"rdma-net","type":"railyard-cni","deviceID":"0000:03:00.2"}`))
	f.Add([]byte(`{"cniVersion":"1.1.0","name":"rdma-net","type":"railyard-cni","device":"ens1f0v2","ipam":{"type":"x"}}`))
	f.Add(deep(20_000))
	f.Fuzz(func(t *testing.T, stdin []byte) {
		w := newWorld(t)
		var out bytes.Buffer
		if err := w.plugin().Serve(ctx, serveEnv("DEL", "fuzz", pod1, "net1"), bytes.NewReader(stdin), &out, io.Discard); err != nil {
			t.Fatalf("DEL: %v", err)
		}
		if out.Len() != 0 {
			t.Fatalf("DEL wrote %q on stdout", out.String())
		}
	})
}
