package benchprobe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Timeouts of the server side.
const (
	helloTimeout  = 10 * time.Second // a client sends its hello at once
	streamsWithin = 30 * time.Second // every data connection arrives within this
	idleTimeout   = 15 * time.Second // a stream that sends nothing this long failed
	replyTimeout  = 10 * time.Second
)

// ServerOptions configure Serve.
type ServerOptions struct {
	// Wait is how long to wait for a client; 0 means DefaultWait.
	Wait time.Duration
}

// ServerResult is what the server received in its one test.
type ServerResult struct {
	Client  string // the control connection's remote address
	Streams int
	Bytes   int64
	Seconds float64
}

// Gbps is the received bandwidth in Gb/s (10^9 bits per second).
func (r ServerResult) Gbps() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / r.Seconds / 1e9
}

// Serve accepts one test on ln and returns what it received; it closes ln.
// Connections that do not speak the probe's protocol (a port scan, a
// health check) are answered with an error and the server keeps waiting,
// until Wait runs out or ctx is done.
func Serve(ctx context.Context, ln net.Listener, o ServerOptions) (ServerResult, error) {
	defer ln.Close()
	wait := o.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() }) // unblocks Accept
	defer stop()
	deadline := time.Now().Add(wait)
	for {
		setAcceptDeadline(ln, deadline)
		ctrl, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ServerResult{}, fmt.Errorf("tcp probe server: %w", ctx.Err())
			}
			return ServerResult{}, fmt.Errorf("tcp probe server: no client within %v: %w", wait, err)
		}
		res, err := serveTest(ctx, ln, ctrl)
		if errors.Is(err, ErrProtocol) {
			continue // not a probe client: keep waiting for one
		}
		return res, err
	}
}

func setAcceptDeadline(ln net.Listener, t time.Time) {
	if d, ok := ln.(interface{ SetDeadline(time.Time) error }); ok {
		_ = d.SetDeadline(t)
	}
}

// serveTest runs one test whose control connection is ctrl.
func serveTest(ctx context.Context, ln net.Listener, ctrl net.Conn) (ServerResult, error) {
	defer ctrl.Close()
	stop := context.AfterFunc(ctx, func() { ctrl.Close() })
	defer stop()
	_ = ctrl.SetDeadline(time.Now().Add(helloTimeout))
	line, err := readLine(bufio.NewReaderSize(ctrl, maxLine))
	if err != nil {
		return ServerResult{}, fmt.Errorf("%w: hello from %s: %v", ErrProtocol, ctrl.RemoteAddr(), err)
	}
	h, err := decodeHello(line)
	if err != nil {
		_ = writeJSONLine(ctrl, reply{Error: err.Error()})
		if !errors.Is(err, ErrProtocol) {
			err = fmt.Errorf("%w: %v", ErrProtocol, err) // a bad request: wait for another client
		}
		return ServerResult{}, err
	}
	if err := writeJSONLine(ctrl, reply{OK: true}); err != nil {
		return ServerResult{}, fmt.Errorf("tcp probe server: %w", err)
	}
	res := ServerResult{Client: ctrl.RemoteAddr().String(), Streams: h.Streams}
	start := time.Now()
	bytes, last, err := receive(ctx, ln, h, start)
	if err != nil {
		_ = ctrl.SetDeadline(time.Now().Add(replyTimeout))
		_ = writeJSONLine(ctrl, reply{Error: err.Error()})
		return res, fmt.Errorf("tcp probe server: %w", err)
	}
	res.Bytes, res.Seconds = bytes, last.Sub(start).Seconds()
	_ = ctrl.SetDeadline(time.Now().Add(replyTimeout))
	if err := writeJSONLine(ctrl, reply{Bytes: res.Bytes, Seconds: res.Seconds}); err != nil {
		return res, fmt.Errorf("tcp probe server: send the result: %w", err)
	}
	return res, nil
}

// receive accepts h.Streams data connections carrying h.Token and counts
// their bytes until each ends; it returns the total and when the last
// stream ended.
func receive(ctx context.Context, ln net.Listener, h hello, start time.Time) (int64, time.Time, error) {
	var (
		mu    sync.Mutex
		total int64
		last  time.Time
		errs  []error
		conns []net.Conn
		wg    sync.WaitGroup
	)
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
	stop := context.AfterFunc(ctx, closeAll)
	defer stop()
	end := start.Add(time.Duration(h.Seconds*float64(time.Second)) + streamsWithin + idleTimeout)
	setAcceptDeadline(ln, start.Add(streamsWithin))
	for accepted := 0; accepted < h.Streams; {
		c, err := ln.Accept()
		if err != nil {
			closeAll()
			wg.Wait()
			return 0, time.Time{}, fmt.Errorf("%d of %d streams connected: %w", accepted, h.Streams, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
		tok := make([]byte, tokenLen)
		if _, err := io.ReadFull(c, tok); err != nil || string(tok) != h.Token {
			c.Close() // a stray connection, not this test's
			continue
		}
		accepted++
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			n, err := count(c, end)
			mu.Lock()
			defer mu.Unlock()
			total += n
			if now := time.Now(); now.After(last) {
				last = now
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return total, last, err
	}
	return total, last, nil
}

// count reads c until EOF; a stream idle for idleTimeout, or still
// sending at end, fails.
func count(c net.Conn, end time.Time) (int64, error) {
	buf := make([]byte, blockSize)
	var n int64
	for {
		dl := time.Now().Add(idleTimeout)
		if dl.After(end) {
			dl = end
		}
		_ = c.SetReadDeadline(dl)
		k, err := c.Read(buf)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("stream from %s: %w", c.RemoteAddr(), err)
		}
	}
}
