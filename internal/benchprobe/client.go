package benchprobe

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	dialTimeout  = 5 * time.Second
	retryEvery   = time.Second
	resultWithin = 60 * time.Second // the server answers once every stream ended
)

// ClientOptions configure Run.
type ClientOptions struct {
	// Addr is the server's host:port.
	Addr     string
	Streams  int           // 0 means DefaultStreams
	Duration time.Duration // 0 means DefaultDuration
	// Interval is the sampling interval of the rows; 0 means one second,
	// and it is at least MinInterval (the rows stay few: at most
	// MaxDuration/MinInterval).
	Interval time.Duration
	// Wait is how long to keep trying to connect (the server may not be
	// listening yet); 0 means DefaultWait.
	Wait time.Duration
	// Version is appended to start.version ("railyard 0.1.0").
	Version string
}

func (o ClientOptions) withDefaults() (ClientOptions, error) {
	if o.Streams == 0 {
		o.Streams = DefaultStreams
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	var errs []error
	if o.Streams < 1 || o.Streams > MaxStreams {
		errs = append(errs, fmt.Errorf("streams %d: want 1 to %d", o.Streams, MaxStreams))
	}
	if o.Duration < 0 || o.Duration > MaxDuration {
		errs = append(errs, fmt.Errorf("duration %v: want up to %v", o.Duration, MaxDuration))
	}
	if o.Interval < MinInterval {
		errs = append(errs, fmt.Errorf("interval %v: want at least %v", o.Interval, MinInterval))
	}
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		errs = append(errs, fmt.Errorf("server address %q: want HOST:PORT: %w", o.Addr, err))
	}
	return o, errors.Join(errs...)
}

// Run connects to the server, sends for the duration and returns the
// report. It never returns without a report: a failed test has Error set
// (and the returned error is the same failure), so the caller can always
// print the report as the run's output.
func Run(ctx context.Context, opts ClientOptions) (Report, error) {
	version := protocolVersion
	if opts.Version != "" {
		version += " (" + opts.Version + ")"
	}
	rep := Report{Start: Start{Version: version, Timestamp: timestamp(time.Now()),
		TestStart: TestStart{Protocol: "TCP", NumStreams: opts.Streams, BlkSize: blockSize, Duration: opts.Duration.Seconds()}},
		Intervals: []Interval{}}
	fail := func(err error) (Report, error) {
		err = fmt.Errorf("tcp probe client: %w", err)
		rep.Error = err.Error()
		return rep, err
	}
	o, err := opts.withDefaults()
	if err != nil {
		return fail(err)
	}
	rep.Start.TestStart.NumStreams, rep.Start.TestStart.Duration = o.Streams, o.Duration.Seconds()
	ctrl, err := dialRetry(ctx, o.Addr, o.Wait)
	if err != nil {
		return fail(err)
	}
	defer ctrl.Close()
	stop := context.AfterFunc(ctx, func() { ctrl.Close() })
	defer stop()
	tok := make([]byte, tokenLen/2)
	if _, err := rand.Read(tok); err != nil {
		return fail(err)
	}
	h := hello{Probe: protocolVersion, Streams: o.Streams, Seconds: o.Duration.Seconds(), Token: hex.EncodeToString(tok)}
	br := bufio.NewReaderSize(ctrl, maxLine)
	_ = ctrl.SetDeadline(time.Now().Add(helloTimeout))
	if err := writeJSONLine(ctrl, h); err != nil {
		return fail(fmt.Errorf("hello: %w", err))
	}
	if _, err := readReply(br); err != nil {
		return fail(fmt.Errorf("hello: %w", err))
	}
	start := time.Now()
	rep.Start.Timestamp = timestamp(start)
	sent, conns, elapsed, rows, err := send(ctx, o, h.Token)
	rep.Start.Connected = conns
	rep.Intervals = rows
	if err != nil {
		return fail(err)
	}
	s := newSum(0, elapsed, sent, true)
	rep.End.SumSent = &s
	_ = ctrl.SetDeadline(time.Now().Add(resultWithin))
	r, err := readReply(br)
	if err != nil {
		return fail(fmt.Errorf("result: %w", err))
	}
	if r.Bytes != sent {
		return fail(fmt.Errorf("the server received %d of the %d bytes sent", r.Bytes, sent))
	}
	if err := checkSeconds(r.Seconds, elapsed); err != nil {
		return fail(fmt.Errorf("result: %w", err))
	}
	recv := newSum(0, r.Seconds, r.Bytes, false)
	rep.End.SumReceived = &recv
	return rep, nil
}

func readReply(br *bufio.Reader) (reply, error) {
	line, err := readLine(br)
	if err != nil {
		return reply{}, err
	}
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		return reply{}, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if r.Error != "" {
		return r, fmt.Errorf("server: %s", r.Error)
	}
	return r, nil
}

// checkSeconds checks the server's receive time against the client's
// send time: the server's clock starts before the first byte and stops
// after the last, so it reads at least about the client's time (half of
// it leaves room for clock granularity) and at most the server's own
// limit. Anything else (0, negative, NaN, 1e-320, which makes the
// bandwidth infinite) is a broken or hostile server.
func checkSeconds(server, client float64) error {
	lo, hi := client/2, client+(streamsWithin+idleTimeout).Seconds()
	if !(server >= lo && server <= hi) { // written so that NaN fails
		return fmt.Errorf("%w: the server says it received for %g s, want %.3g to %.3g s (this client sent for %.3g s)", ErrProtocol, server, lo, hi, client)
	}
	return nil
}

// dialRetry connects to addr, retrying until wait has passed.
func dialRetry(ctx context.Context, addr string, wait time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(wait)
	var d net.Dialer
	attempts := 0
	for {
		attempts++
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if time.Now().Add(retryEvery).After(deadline) {
			return nil, fmt.Errorf("connect to %s: %d attempts in %v: %w", addr, attempts, wait, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(retryEvery):
		}
	}
}

// send opens the data streams and writes to each until the duration has
// passed, sampling the total every interval. It returns the bytes sent,
// the streams' addresses, the seconds from the start to the last stream's
// end and the interval rows.
func send(ctx context.Context, o ClientOptions, token string) (int64, []Connected, float64, []Interval, error) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var info []Connected
	var d net.Dialer
	for i := 0; i < o.Streams; i++ {
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := d.DialContext(dctx, "tcp", o.Addr)
		cancel()
		if err != nil {
			return 0, info, 0, nil, fmt.Errorf("stream %d: %w", i, err)
		}
		conns = append(conns, c)
		info = append(info, connected(c))
	}
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			c.Close()
		}
	})
	defer stop()
	start := time.Now()
	end := start.Add(o.Duration)
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = stream(c, token, end, &total)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var rows []Interval
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	prevT, prevB := 0.0, int64(0)
	sample := func(now time.Time) {
		t, b := now.Sub(start).Seconds(), total.Load()
		if t > prevT {
			rows = append(rows, Interval{Sum: newSum(prevT, t, b-prevB, true)})
		}
		prevT, prevB = t, b
	}
	for running := true; running; {
		select {
		case now := <-tick.C:
			sample(now)
		case <-done:
			running = false
		}
	}
	elapsed := time.Since(start)
	sample(start.Add(elapsed))
	if err := ctx.Err(); err != nil {
		return total.Load(), info, elapsed.Seconds(), rows, err
	}
	return total.Load(), info, elapsed.Seconds(), rows, errors.Join(errs...)
}

// stream writes the token, then blocks until end, then half-closes c.
func stream(c net.Conn, token string, end time.Time, total *atomic.Int64) error {
	_ = c.SetWriteDeadline(end.Add(idleTimeout))
	if _, err := c.Write([]byte(token)); err != nil {
		return fmt.Errorf("stream %s: %w", c.LocalAddr(), err)
	}
	buf := make([]byte, blockSize)
	for time.Now().Before(end) {
		n, err := c.Write(buf)
		total.Add(int64(n))
		if err != nil {
			return fmt.Errorf("stream %s: %w", c.LocalAddr(), err)
		}
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.CloseWrite(); err != nil {
			return fmt.Errorf("stream %s: %w", c.LocalAddr(), err)
		}
	}
	return nil
}

func connected(c net.Conn) Connected {
	lh, lp := splitAddr(c.LocalAddr())
	rh, rp := splitAddr(c.RemoteAddr())
	return Connected{LocalHost: lh, LocalPort: lp, RemoteHost: rh, RemotePort: rp}
}

func splitAddr(a net.Addr) (string, int) {
	h, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String(), 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}
