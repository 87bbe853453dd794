package benchprobe

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer speaks the protocol on ln for one test: it answers the hello,
// counts what the streams send and answers with that count and seconds,
// whatever they are.
func fakeServer(t *testing.T, ln net.Listener, seconds string) {
	t.Helper()
	go func() {
		defer ln.Close()
		ctrl, err := ln.Accept()
		if err != nil {
			return
		}
		defer ctrl.Close()
		br := bufio.NewReader(ctrl)
		line, err := readLine(br)
		if err != nil {
			return
		}
		var h hello
		if json.Unmarshal(line, &h) != nil {
			return
		}
		fmt.Fprintln(ctrl, `{"ok":true}`)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var total int64
		for range h.Streams {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				n, _ := io.Copy(io.Discard, c)
				mu.Lock()
				total += n - tokenLen
				mu.Unlock()
			}()
		}
		wg.Wait()
		fmt.Fprintf(ctrl, `{"bytes":%d,"seconds":%s}`+"\n", total, seconds)
	}()
}

// The client checks the server's receive time: 0, negative, denormal
// (1e-320 made the bandwidth +Inf and the report unprintable) or absurd
// seconds fail the run with a clear error, and the report still prints.
func TestClientChecksTheServersSeconds(t *testing.T) {
	t.Parallel()
	for _, seconds := range []string{"1e-320", "0", "-1", "1e9"} {
		t.Run(seconds, func(t *testing.T) {
			t.Parallel()
			ln := listen(t)
			fakeServer(t, ln, seconds)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep, err := Run(ctx, ClientOptions{Addr: ln.Addr().String(), Streams: 1, Duration: 200 * time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), "the server says it received for") {
				t.Errorf("err = %v, want: the server says it received for ...", err)
			}
			if _, err := json.Marshal(rep); err != nil {
				t.Errorf("the report does not print: %v", err)
			}
			if rep.Error == "" || rep.End.SumReceived != nil {
				t.Errorf("report error %q, received %+v: want an error and no received sum", rep.Error, rep.End.SumReceived)
			}
		})
	}
}

// Idle connections (a port scan, a health check that never speaks) ahead
// of the real client do not block it: each connection is read on its own.
func TestServerNotBlockedByIdleConnections(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ln := listen(t)
	srv := serve(ctx, ln, ServerOptions{Wait: 30 * time.Second})
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	// Served one at a time, the two would hold the client's hello past
	// its 10 s deadline: the run would fail.
	if _, err := Run(ctx, ClientOptions{Addr: ln.Addr().String(), Streams: 2, Duration: 200 * time.Millisecond}); err != nil {
		t.Fatalf("client behind two idle connections: %v", err)
	}
	if s := <-srv; s.err != nil || s.res.Bytes <= 0 {
		t.Fatalf("server: %+v", s)
	}
}

// An idle connection that arrives between the hello and the streams does
// not hold the streams up either.
func TestServerStreamsNotBlockedByAnIdleConnection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ln := listen(t)
	srv := serve(ctx, ln, ServerOptions{Wait: 30 * time.Second})
	ctrl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	tok := strings.Repeat("7", tokenLen)
	if err := writeJSONLine(ctrl, hello{Probe: protocolVersion, Streams: 1, Seconds: 1, Token: tok}); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(ctrl)
	if _, err := readReply(br); err != nil {
		t.Fatal(err)
	}
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	time.Sleep(100 * time.Millisecond) // the server has accepted the idle one first
	start := time.Now()
	data, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := data.Write([]byte(tok + "payload")); err != nil {
		t.Fatal(err)
	}
	data.Close()
	r, err := readReply(br)
	if err != nil || r.Bytes != int64(len("payload")) {
		t.Fatalf("result %+v, %v", r, err)
	}
	// Read in turn, the idle connection would hold the stream for its 10 s
	// token deadline.
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the stream was counted after %v: the idle connection held it up", d)
	}
	if s := <-srv; s.err != nil {
		t.Fatal(s.err)
	}
}
