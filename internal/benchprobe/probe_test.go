package benchprobe

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/bench"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

type served struct {
	res ServerResult
	err error
}

func serve(ctx context.Context, ln net.Listener, o ServerOptions) <-chan served {
	ch := make(chan served, 1)
	go func() {
		res, err := Serve(ctx, ln, o)
		ch <- served{res, err}
	}()
	return ch
}

// TestProbeOverLoopback runs a real server and client over the loopback
// interface (real TCP sockets): the report is iperf3-compatible JSON that
// internal/bench reads as a TCP result of the probe (not iperf3, not
// RDMA), every byte sent was received and counted by the server.
func TestProbeOverLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln := listen(t)
	srv := serve(ctx, ln, ServerOptions{Wait: 10 * time.Second})
	rep, err := Run(ctx, ClientOptions{Addr: ln.Addr().String(), Streams: 3, Duration: 600 * time.Millisecond,
		Interval: 100 * time.Millisecond, Version: "railyard test"})
	if err != nil {
		t.Fatal(err)
	}
	s := <-srv
	if s.err != nil {
		t.Fatal(s.err)
	}
	if rep.End.SumSent == nil || rep.End.SumReceived == nil {
		t.Fatalf("end = %+v", rep.End)
	}
	sent, recv := rep.End.SumSent, rep.End.SumReceived
	if sent.Bytes <= 0 || recv.Bytes != sent.Bytes || s.res.Bytes != sent.Bytes || s.res.Streams != 3 {
		t.Errorf("sent %d, received %d (server says %d over %d streams)", sent.Bytes, recv.Bytes, s.res.Bytes, s.res.Streams)
	}
	if sent.Seconds < 0.6 || sent.Seconds > 5 || recv.Seconds <= 0 || s.res.Gbps() <= 0 {
		t.Errorf("sent over %g s, received over %g s, %g Gb/s", sent.Seconds, recv.Seconds, s.res.Gbps())
	}
	if len(rep.Start.Connected) != 3 || rep.Start.Connected[0].RemotePort != ln.Addr().(*net.TCPAddr).Port {
		t.Errorf("connected = %+v", rep.Start.Connected)
	}
	// The intervals tile the run and add up to what was sent. How many
	// there are depends on how many 100ms ticks the machine delivered (a
	// ticker drops the ticks its reader is late for under load), so only
	// their bounds are checked: at least one, at most one per tick the
	// run's length allows plus the closing one.
	var sum int64
	prev := 0.0
	for i, iv := range rep.Intervals {
		sum += iv.Sum.Bytes
		if iv.Sum.Start != prev || iv.Sum.End <= iv.Sum.Start {
			t.Errorf("interval %d covers %v-%v s after one ending at %v s", i, iv.Sum.Start, iv.Sum.End, prev)
		}
		prev = iv.Sum.End
	}
	if n := len(rep.Intervals); n == 0 || n > int(sent.Seconds/0.1)+2 || sum != sent.Bytes || prev < 0.6 {
		t.Errorf("%d intervals over %v s summing to %d bytes, want 1 to %d over at least 0.6 s summing to %d", n, prev, sum, int(sent.Seconds/0.1)+2, sent.Bytes)
	}

	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	r := bench.Parse(out)
	if !r.OK || r.Tool != bench.ToolTCPProbe || r.Kind != bench.KindIperf3 {
		t.Fatalf("parsed as %s %s ok=%v %q", r.Tool, r.Kind, r.OK, r.Error)
	}
	if got, want := r.Summary[bench.SumReceivedGbps], recv.BitsPerSecond/1e9; got <= 0 || got-want > 1e-6 || want-got > 1e-6 {
		t.Errorf("received_gbps = %g, want %g", got, want)
	}
	if len(r.Iperf) != len(rep.Intervals) {
		t.Errorf("%d rows, want %d", len(r.Iperf), len(rep.Intervals))
	}
	if !strings.HasPrefix(rep.Start.Version, "railyard-tcp-probe/1 (railyard test)") || rep.Start.TestStart.Protocol != "TCP" {
		t.Errorf("start = %+v", rep.Start)
	}
}

// A connection that does not speak the protocol (a port scan, a health
// check, garbage) is answered with an error and the server still serves
// the real client that comes next.
func TestServerIgnoresStrangers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln := listen(t)
	srv := serve(ctx, ln, ServerOptions{Wait: 10 * time.Second})
	for _, junk := range []string{"GET / HTTP/1.0\r\n\r\n", `{"probe":"railyard-tcp-probe/1","streams":100000,"seconds":1,"token":"00000000000000000000000000000000"}` + "\n", ""} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(junk))
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		buf := make([]byte, 512)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := c.Read(buf)
		c.Close()
		if junk != "" && !strings.Contains(string(buf[:n]), `"error"`) {
			t.Errorf("%q: server answered %q, want an error", junk, buf[:n])
		}
	}
	if _, err := Run(ctx, ClientOptions{Addr: ln.Addr().String(), Streams: 1, Duration: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if s := <-srv; s.err != nil || s.res.Bytes <= 0 {
		t.Fatalf("server: %+v", s)
	}
}

// The client retries until the server listens (the server pod may start
// after the client pod).
func TestClientWaitsForServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close() // nobody listens on addr for now
	type ran struct {
		rep Report
		err error
	}
	ch := make(chan ran, 1)
	go func() {
		rep, err := Run(ctx, ClientOptions{Addr: addr, Streams: 1, Duration: 200 * time.Millisecond, Wait: 20 * time.Second})
		ch <- ran{rep, err}
	}()
	time.Sleep(1500 * time.Millisecond) // at least one refused attempt
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	srv := serve(ctx, ln2, ServerOptions{})
	r := <-ch
	if r.err != nil || r.rep.End.SumReceived == nil {
		t.Fatalf("client: %v %+v", r.err, r.rep.End)
	}
	if s := <-srv; s.err != nil {
		t.Fatal(s.err)
	}
}

// With nobody listening the client gives up after Wait, and its report
// still prints: the parser reads it as a failed probe run.
func TestClientGivesUpWithAFailedReport(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	rep, err := Run(context.Background(), ClientOptions{Addr: addr, Duration: time.Second, Wait: 1500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "connect to "+addr) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v, want about 1.5 s", d)
	}
	out, _ := json.Marshal(rep)
	r := bench.Parse(out)
	if r.OK || r.Tool != bench.ToolTCPProbe || !strings.Contains(r.Error, "connect to") {
		t.Errorf("parsed: %s ok=%v %q", r.Tool, r.OK, r.Error)
	}
}

func TestServerWaitAndCancel(t *testing.T) {
	start := time.Now()
	_, err := Serve(context.Background(), listen(t), ServerOptions{Wait: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no client within 300ms") {
		t.Errorf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err = Serve(ctx, listen(t), ServerOptions{Wait: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestClientOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		o    ClientOptions
		want string
	}{
		{ClientOptions{Addr: "nohost"}, "want HOST:PORT"},
		{ClientOptions{Addr: "a:1", Streams: MaxStreams + 1}, "streams 129"},
		{ClientOptions{Addr: "a:1", Duration: -time.Second}, "duration -1s"},
		{ClientOptions{Addr: "a:1", Interval: time.Nanosecond}, "interval 1ns: want at least 100ms"},
		{ClientOptions{Addr: "a:1", Interval: -time.Second}, "interval -1s: want at least 100ms"},
	} {
		rep, err := Run(context.Background(), tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || rep.Error != err.Error() {
			t.Errorf("%+v: err = %v, report error %q, want %q", tc.o, err, rep.Error, tc.want)
		}
	}
}

func TestDecodeHello(t *testing.T) {
	tok := strings.Repeat("a", tokenLen)
	for _, tc := range []struct {
		line, want string
	}{
		{`{"probe":"railyard-tcp-probe/1","streams":4,"seconds":10,"token":"` + tok + `"}`, ""},
		{`{"probe":"railyard-tcp-probe/2","streams":4,"seconds":10,"token":"` + tok + `"}`, "not a railyard tcp probe peer"},
		{`{"probe":"railyard-tcp-probe/1","streams":0,"seconds":10,"token":"` + tok + `"}`, "streams 0"},
		{`{"probe":"railyard-tcp-probe/1","streams":1,"seconds":4000,"token":"` + tok + `"}`, "seconds 4000"},
		{`{"probe":"railyard-tcp-probe/1","streams":1,"seconds":1,"token":"ab"}`, "token of 2 characters"},
		{`{"probe":"railyard-tcp-probe/1","streams":1,"seconds":1,"token":"` + tok + `","x":1}`, "unknown field"},
		{`[]`, "not a railyard tcp probe peer"},
		{`{"probe":"railyard-tcp-probe/1","streams":1,"seconds":1,"token":"` + tok + `"} {"streams":64}`, "not one JSON value"},
		{`{"probe":"railyard-tcp-probe/1","streams":1,"streams":64,"seconds":1,"token":"` + tok + `"}`, "duplicate field \"streams\""},
		{`{"probe":"railyard-tcp-probe/1","Streams":1,"seconds":1,"token":"` + tok + `"}`, "unknown field \"Streams\""},
	} {
		_, err := decodeHello([]byte(tc.line))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", tc.line, err, tc.want)
		}
	}
}

// FuzzDecodeHello: whatever a peer sends as its hello, decoding never
// panics and accepts only hellos within the limits.
func FuzzDecodeHello(f *testing.F) {
	f.Add([]byte(`{"probe":"railyard-tcp-probe/1","streams":4,"seconds":10,"token":"` + strings.Repeat("a", tokenLen) + `"}`))
	f.Add([]byte(`{"probe":"railyard-tcp-probe/1","streams":4,"seconds":NaN}`))
	f.Add([]byte(`{"seconds":1e999}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		h, err := decodeHello(line)
		if err != nil {
			return
		}
		if h.Streams < 1 || h.Streams > MaxStreams || !(h.Seconds > 0) || h.Seconds > MaxDuration.Seconds() || len(h.Token) != tokenLen {
			t.Errorf("accepted %+v", h)
		}
	})
}
