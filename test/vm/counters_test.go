package vm

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/rdmastats"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/test/vm/vmkernel"
)

// ibWriteBW runs a real ib_write_bw (server and client on one rxe
// device, as the VM can) of n writes of size bytes.
func ibWriteBW(t *testing.T, dev, gid, size, n, port string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	args := []string{"-d", dev, "-x", gid, "-s", size, "-n", n, "-F", "-p", port}
	srv := exec.CommandContext(c, "ib_write_bw", args...)
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	var out []byte
	var err error
	for range 20 {
		time.Sleep(500 * time.Millisecond)
		cc, ccancel := context.WithTimeout(c, time.Minute)
		out, err = exec.CommandContext(cc, "ib_write_bw", append(args, "10.77.3.1")...).CombinedOutput()
		ccancel()
		if err == nil || !bytes.Contains(out, []byte("Couldn't connect")) {
			break
		}
	}
	if err != nil {
		t.Fatalf("ib_write_bw client: %v\n%s\nserver:\n%s", err, out, srvOut.String())
	}
}

// scrapeValue gathers the collector and returns metric's value for the
// series of nic, with its labels.
func scrapeValue(t *testing.T, c prometheus.Collector, metric, nic string) (float64, map[string]string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["nic"] == nic {
				return m.GetCounter().GetValue(), labels
			}
		}
	}
	t.Fatalf("no %s for %s", metric, nic)
	return 0, nil
}

// Soft-RoCE's hw_counters, read through the one sysfs reader, move when a
// real ib_write_bw runs on the device, and the exporter reports them with
// the holder's labels.
func TestCountersMoveWithIBWriteBWRealRDMA(t *testing.T) {
	vmkernel.Require(t)
	if _, err := exec.LookPath("ib_write_bw"); err != nil {
		t.Skip("needs perftest's ib_write_bw (hack/vm/install.sh)")
	}
	dev := rxeOnVeth(t, "10.77.3.1/24")
	fs := sysfs.New("/sys")
	names, err := fs.PortCounterNames(dev, 1, sysfs.HWCounters)
	if err != nil || len(names) == 0 {
		t.Fatalf("%s has no hw_counters: %v, %v", dev, names, err)
	}
	t.Logf("%s hw_counters: %v", dev, names)

	owner := rdmacounter.Owner{Namespace: "ml", Pod: "bw-0", Container: "perftest", Job: "bw"}
	c := rdmastats.New(fs, "vm", func() []rdmacounter.Device {
		return []rdmacounter.Device{{RDMA: dev, Ports: []int{1}, Kind: rdmacounter.KindPF, Rail: 0, Owner: owner}}
	})
	const metric = "railyard_rdma_sent_packets_total"
	exported0, _ := scrapeValue(t, c, metric, dev)
	before, err := rdmacounter.Read(fs, dev, 1, true, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	const writes = 200
	ibWriteBW(t, dev, ipv4RoCEv2GID(t, dev), "65536", "200", "18778")

	after, err := rdmacounter.Read(fs, dev, 1, true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	moved := map[string]float64{}
	for _, r := range rdmacounter.Rates(&before, &after) {
		k := rdmacounter.Counters()[r.Index]
		moved[k.Name] = r.PerSecond * after.Time.Sub(before.Time).Seconds()
		if r.Event != rdmacounter.Counted {
			t.Errorf("%s %v during the run", k.Name, r.Event)
		}
	}
	t.Logf("moved during ib_write_bw: %v", moved)
	// Every write of 64 KiB is at least one packet each way (the RoCE MTU
	// cuts it into many), and both ends are this device.
	for _, name := range []string{"sent_packets", "received_packets"} {
		if moved[name] < writes {
			t.Errorf("%s moved by %v during %d RDMA writes, want at least %d", name, moved[name], writes, writes)
		}
	}

	exported1, labels := scrapeValue(t, c, metric, dev)
	if exported1-exported0 < writes {
		t.Errorf("exported %s moved by %v, want at least %d", metric, exported1-exported0, writes)
	}
	for k, want := range map[string]string{"namespace": "ml", "pod": "bw-0", "container": "perftest", "job_name": "bw", "node": "vm", "port": "1", "rail": "0", "kind": "pf"} {
		if labels[k] != want {
			t.Errorf("label %s = %q, want %q (all: %v)", k, labels[k], want, labels)
		}
	}
}
