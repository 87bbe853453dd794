package cni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runBinary execs railyard-cni directly with a CNI environment.
func runBinary(t *testing.T, command, conf string) (stdout string, err error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.cniPath, "railyard-cni"))
	cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=c1", "CNI_NETNS=/var/run/netns/none", "CNI_IFNAME=net1", "CNI_PATH=" + env.cniPath}
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
		cmd.Env = []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_NETNS=" + netns, "CNI_IFNAME=net1", "CNI_PATH=" + env.cniPath}
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
