package cni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runBinary execs railyard-cni directly with a CNI environment.
func runBinary(t *testing.T, command, conf string) (stdout string, err error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.cniPath, "railyard-cni"))
	cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=c1", "CNI_NETNS=/var/run/netns/none", "CNI_IFNAME=net1", "CNI_PATH=" + env.cniPath, testRootEnv}
	cmd.Stdin = strings.NewReader(conf)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), err
}

func TestBinaryStdoutIsOnlyCNIJSON(t *testing.T) {
	require(t)
	out, err := runBinary(t, "VERSION", `{"cniVersion":"1.1.0"}`)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		CNIVersion        string   `json:"cniVersion"`
		SupportedVersions []string `json:"supportedVersions"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&v); err != nil || dec.More() || !strings.Contains(strings.Join(v.SupportedVersions, ","), "1.1.0") {
		t.Fatalf("VERSION stdout %q (%v)", out, err)
	}

	out, err = runBinary(t, "ADD", `{"cniVersion":"1.1.0","name":"n","type":"railyard-cni","deviceID":"0000:01:00.0","mtu":12,"colour":"blue"}`)
	if err == nil {
		t.Fatal("ADD with a bad config succeeded")
	}
	var e struct {
		Code uint   `json:"code"`
		Msg  string `json:"msg"`
	}
	dec = json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&e); err != nil || dec.More() {
		t.Fatalf("error stdout is not one JSON object: %q (%v)", out, err)
	}
	if e.Code != 2 || !strings.Contains(e.Msg, "colour") || !strings.Contains(e.Msg, "mtu") {
		t.Fatalf("error %+v: want code 2 naming colour and mtu", e)
	}
}

// TestBinaryRefusesTheHostsOwnNetnsVeth: CNI_NETNS=/proc/self/ns/net (the
// host's own namespace under another path) is refused with one JSON error
// document on stdout, and the host's netdev keeps its name and settings.
func TestBinaryRefusesTheHostsOwnNetnsVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"n","type":"railyard-cni","deviceID":%q,"sysfsRoot":%q,"stateDir":%q}`,
		pciA, n.sysfs.Root, n.stateDir)
	for _, netns := range []string{"/proc/self/ns/net", "/proc/thread-self/ns/net"} {
		cmd := exec.Command(filepath.Join(env.cniPath, "railyard-cni"))
		cmd.Env = []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_NETNS=" + netns, "CNI_IFNAME=net1", "CNI_PATH=" + env.cniPath, testRootEnv}
		cmd.Stdin = strings.NewReader(conf)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err == nil {
			t.Fatalf("ADD into %s succeeded: %s", netns, out.String())
		}
		var e struct {
			Code uint   `json:"code"`
			Msg  string `json:"msg"`
		}
		dec := json.NewDecoder(&out)
		if err := dec.Decode(&e); err != nil || dec.More() {
			t.Fatalf("stdout is not one JSON document: %q (%v)", out.String(), err)
		}
		if e.Code != 4 || !strings.Contains(e.Msg, "host's own") {
			t.Errorf("%s: error %+v, want code 4 (invalid environment) naming the host's namespace", netns, e)
		}
		n.assertHome(pciA)
	}
}

// runBinaryWith execs railyard-cni with command and stdin, stdout going to
// out (a regular file here: what a runtime that redirects to a file sees).
func runBinaryWith(t *testing.T, command string, stdin io.Reader, out *os.File) (exitErr error, stderr string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.cniPath, "railyard-cni"))
	cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=c1", "CNI_NETNS=/var/run/netns/none", "CNI_IFNAME=net1", "CNI_PATH=" + env.cniPath, testRootEnv}
	cmd.Stdin = stdin
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &errOut
	err := cmd.Run()
	return err, errOut.String()
}

// TestBinaryDelSucceedsOnAnyStdin: DEL exits 0 with nothing on stdout on
// configurations the CNI library's skel refused before railyard-cni saw
// them (not JSON, a numeric cniVersion or name, an unknown cniVersion, a
// 100k-deep array), on one larger than the plugin reads, and on stdin from
// /dev/zero: the pod no longer stays Terminating.
func TestBinaryDelSucceedsOnAnyStdin(t *testing.T) {
	require(t)
	state := t.TempDir()
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	for name, stdin := range map[string]string{
		"not JSON":            "not json",
		"cniVersion a number": fmt.Sprintf(`{"cniVersion":123,"name":"n","type":"railyard-cni","stateDir":%q}`, state),
		"name a number":       fmt.Sprintf(`{"cniVersion":"1.1.0","name":5,"type":"railyard-cni","stateDir":%q}`, state),
		"unknown cniVersion":  fmt.Sprintf(`{"cniVersion":"9.9.9","name":"n","type":"railyard-cni","stateDir":%q}`, state),
		"a 100k-deep array":   deep,
		"2 MiB":               `{"x":"` + strings.Repeat("a", 2<<20) + `"}`,
		"/dev/zero":           "",
	} {
		out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
		if err != nil {
			t.Fatal(err)
		}
		var in io.Reader = strings.NewReader(stdin)
		if name == "/dev/zero" {
			z, err := os.Open("/dev/zero")
			if err != nil {
				t.Fatal(err)
			}
			defer z.Close()
			in = z
		}
		exitErr, stderr := runBinaryWith(t, "DEL", in, out)
		b, _ := os.ReadFile(out.Name())
		out.Close()
		if exitErr != nil || len(b) != 0 {
			t.Errorf("%s: DEL %v, stdout %q, stderr %q; want exit 0 and nothing on stdout", name, exitErr, b, stderr)
		}
	}
}

// TestBinaryLogFileNeverStdout: logFile /dev/stdout (stdout a regular
// file, as where a runtime redirects it) is refused (no file railyard-cni
// owns, and stdout besides): the log goes to stderr, stdout carries the
// result only. The log line broke the result.
func TestBinaryLogFileNeverStdout(t *testing.T) {
	require(t)
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"n","type":"railyard-cni","stateDir":%q,"logFile":"/dev/stdout","logLevel":"debug"}`, t.TempDir())
	for _, command := range []string{"DEL", "ADD"} {
		out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
		if err != nil {
			t.Fatal(err)
		}
		exitErr, stderr := runBinaryWith(t, command, strings.NewReader(conf), out)
		b, _ := os.ReadFile(out.Name())
		out.Close()
		switch command {
		case "DEL":
			if exitErr != nil || len(b) != 0 {
				t.Errorf("DEL: %v, stdout %q; want exit 0 and nothing on stdout", exitErr, b)
			}
		case "ADD": // no device: one error document, nothing else
			var e struct{ Code uint }
			dec := json.NewDecoder(bytes.NewReader(b))
			if err := dec.Decode(&e); err != nil || dec.More() || exitErr == nil {
				t.Errorf("ADD: %v, stdout %q is not one error document", exitErr, b)
			}
		}
		if !strings.Contains(stderr, "logFile refused") || !strings.Contains(stderr, "/dev/stdout") || !strings.Contains(stderr, "railyard-cni") {
			t.Errorf("%s: stderr %q, want the refusal and the log line", command, stderr)
		}
	}
}
