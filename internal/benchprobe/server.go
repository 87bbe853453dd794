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

// greeting is a connection that sent a valid hello.
type greeting struct {
	conn  net.Conn
	hello hello
}

// Serve accepts one test on ln and returns what it received; it closes ln.
// Every connection is read on its own goroutine under its own deadline, so
// idle connections (a port scan, a health check that never speaks) cannot
// hold up the client behind them; those that do not speak the probe's
// protocol are answered with an error and the server keeps waiting, until
// Wait runs out or ctx is done.
func Serve(ctx context.Context, ln net.Listener, o ServerOptions) (ServerResult, error) {
	wait := o.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	quit := make(chan struct{})
	defer func() {
		close(quit)
		ln.Close()
	}()
	incoming, acceptErr := acceptAll(ln, quit)
	hellos := make(chan greeting)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case c, ok := <-incoming:
			if !ok {
				return ServerResult{}, fmt.Errorf("tcp probe server: %w", <-acceptErr)
			}
			go func() {
				g, err := readHello(c)
				if err != nil {
					return // not a probe client: answered and closed
				}
				select {
				case hellos <- g:
				case <-quit:
					g.conn.Close()
				}
			}()
		case g := <-hellos:
			return serveTest(ctx, g, incoming, quit)
		case <-timer.C:
			return ServerResult{}, fmt.Errorf("tcp probe server: no client within %v", wait)
		case <-ctx.Done():
			return ServerResult{}, fmt.Errorf("tcp probe server: %w", ctx.Err())
		}
	}
}

// acceptAll accepts connections on ln until it fails (Serve closes it)
// and sends them on the returned channel, then closes it and sends the
// error. A connection accepted after quit is closed.
func acceptAll(ln net.Listener, quit <-chan struct{}) (<-chan net.Conn, <-chan error) {
	conns, errc := make(chan net.Conn), make(chan error, 1)
	go func() {
		defer close(conns)
		for {
			c, err := ln.Accept()
			if err != nil {
				errc <- err
				return
			}
			select {
			case conns <- c:
			case <-quit:
				c.Close()
				return
			}
		}
	}()
	return conns, errc
}

// readHello reads and checks c's hello within helloTimeout; a bad one is
// answered with the error and c is closed.
func readHello(c net.Conn) (greeting, error) {
	_ = c.SetDeadline(time.Now().Add(helloTimeout))
	line, err := readLine(bufio.NewReaderSize(c, maxLine))
	if err != nil {
		c.Close()
		return greeting{}, fmt.Errorf("%w: hello from %s: %w", ErrProtocol, c.RemoteAddr(), err)
	}
	h, err := decodeHello(line)
	if err != nil {
		_ = writeJSONLine(c, reply{Error: err.Error()})
		c.Close()
		return greeting{}, err
	}
	return greeting{conn: c, hello: h}, nil
}

// serveTest runs the test of g: it answers the hello, takes the next
// connections carrying g's token as its streams and sends the result.
func serveTest(ctx context.Context, g greeting, incoming <-chan net.Conn, quit <-chan struct{}) (ServerResult, error) {
	ctrl, h := g.conn, g.hello
	defer ctrl.Close()
	stop := context.AfterFunc(ctx, func() { ctrl.Close() })
	defer stop()
	_ = ctrl.SetDeadline(time.Now().Add(helloTimeout))
	if err := writeJSONLine(ctrl, reply{OK: true}); err != nil {
		return ServerResult{}, fmt.Errorf("tcp probe server: %w", err)
	}
	res := ServerResult{Client: ctrl.RemoteAddr().String(), Streams: h.Streams}
	start := time.Now()
	bytes, last, err := receive(ctx, incoming, quit, h, start)
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

// receive takes h.Streams connections carrying h.Token (each read on its
// own goroutine: a stray idle connection delays no stream) and counts
// their bytes until each ends; it returns the total and when the last
// stream ended.
func receive(ctx context.Context, incoming <-chan net.Conn, quit <-chan struct{}, h hello, start time.Time) (int64, time.Time, error) {
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
	fail := func(err error) (int64, time.Time, error) {
		closeAll()
		wg.Wait()
		return 0, time.Time{}, err
	}
	end := start.Add(time.Duration(h.Seconds*float64(time.Second)) + streamsWithin + idleTimeout)
	streams := make(chan net.Conn)
	within := time.NewTimer(streamsWithin)
	defer within.Stop()
	for accepted := 0; accepted < h.Streams; {
		select {
		case c, ok := <-incoming:
			if !ok {
				return fail(fmt.Errorf("%d of %d streams connected: the listener closed", accepted, h.Streams))
			}
			go func() {
				if !hasToken(c, h.Token) {
					c.Close() // a stray connection, not this test's
					return
				}
				select {
				case streams <- c:
				case <-quit:
					c.Close()
				}
			}()
		case c := <-streams:
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
		case <-within.C:
			return fail(fmt.Errorf("%d of %d streams connected within %v", accepted, h.Streams, streamsWithin))
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return total, last, err
	}
	return total, last, nil
}

// hasToken reads a stream's first bytes within helloTimeout and says
// whether they are token.
func hasToken(c net.Conn, token string) bool {
	_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
	tok := make([]byte, tokenLen)
	_, err := io.ReadFull(c, tok)
	return err == nil && string(tok) == token
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
