package benchprobe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/railyard-io/railyard/internal/strictjson"
)

// Tool is the probe's name in its output (start.version begins with it).
const Tool = "railyard-tcp-probe"

// Protocol version, sent in every hello.
const protocolVersion = Tool + "/1"

// Limits of a test: far above what a benchmark needs, small enough that a
// bad hello cannot make the server open thousands of connections or wait
// for hours.
const (
	MaxStreams  = 128
	MaxDuration = time.Hour
	MinInterval = 100 * time.Millisecond // the client's sampling: at most 36000 rows
	tokenLen    = 32
	maxLine     = 4096 // control lines are small JSON objects
	blockSize   = 128 << 10
)

// Defaults.
const (
	DefaultPort     = 5201
	DefaultStreams  = 4
	DefaultDuration = 10 * time.Second
	DefaultWait     = 5 * time.Minute
)

// ErrProtocol marks a peer that does not speak the probe's protocol.
var ErrProtocol = errors.New("not a railyard tcp probe peer")

// hello is the client's first line on the control connection.
type hello struct {
	Probe   string  `json:"probe"`
	Streams int     `json:"streams"`
	Seconds float64 `json:"seconds"`
	Token   string  `json:"token"`
}

// reply is the server's answer to a hello ({"ok":true} or an error) and,
// after the test, what it received.
type reply struct {
	OK      bool    `json:"ok,omitempty"`
	Error   string  `json:"error,omitempty"`
	Bytes   int64   `json:"bytes,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// validate checks a hello the server read from the network.
func (h hello) validate() error {
	if h.Probe != protocolVersion {
		return fmt.Errorf("%w: probe %q, want %q", ErrProtocol, h.Probe, protocolVersion)
	}
	if h.Streams < 1 || h.Streams > MaxStreams {
		return fmt.Errorf("streams %d: want 1 to %d", h.Streams, MaxStreams)
	}
	// Written so that NaN fails.
	if !(h.Seconds > 0 && h.Seconds <= MaxDuration.Seconds()) {
		return fmt.Errorf("seconds %g: want (0, %g]", h.Seconds, MaxDuration.Seconds())
	}
	if len(h.Token) != tokenLen {
		return fmt.Errorf("%w: token of %d characters, want %d", ErrProtocol, len(h.Token), tokenLen)
	}
	return nil
}

// decodeHello reads one bounded JSON line and validates it.
func decodeHello(line []byte) (hello, error) {
	var h hello
	if err := strictjson.UnmarshalLimit(line, maxLine, &h); err != nil {
		return hello{}, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if err := h.validate(); err != nil {
		return hello{}, err
	}
	return h, nil
}

// readLine reads one newline-terminated line of at most maxLine bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("%w: control line longer than %d bytes", ErrProtocol, maxLine)
		}
		if err == nil {
			return bytes.TrimSuffix(line, []byte("\n")), nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return nil, fmt.Errorf("%w: control line cut off", ErrProtocol)
		}
		return nil, err
	}
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
