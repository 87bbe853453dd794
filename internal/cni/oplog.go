package cni

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/inputfile"
)

// opLogLevels maps sriov-cni's log levels onto slog's; "panic" logs only
// errors, as sriov-cni does for anything short of a crash.
var opLogLevels = map[string]slog.Level{
	"panic": slog.LevelError, "error": slog.LevelError, "warning": slog.LevelWarn,
	"info": slog.LevelInfo, "debug": slog.LevelDebug,
}

// openLog returns the log the configuration asks for (sriov-cni's logLevel
// and logFile), nil when it asks for none: logFile, else stderr, at
// logLevel (default info). A logFile that is not a regular file, or is the
// process's stdout or stderr (/dev/stdout), is refused with a line on
// stderr, which gets the log instead: stdout carries only the result; so
// is a logFile outside what railyard-cni owns (config's path fields). A
// log that cannot be opened is skipped.
func openLog(conf []byte, stderr io.Writer, opts ...config.Option) (*slog.Logger, func()) {
	cfg, problems := config.ParseDel(conf, opts...)
	refused := false
	for _, p := range problems {
		if p.Field == "logFile" { // not a file railyard-cni owns (config's path fields)
			fmt.Fprintf(stderr, "railyard-cni: logFile refused, logging to stderr: %s\n", p.Msg)
			refused = true
		}
	}
	if cfg.LogLevel == "" && cfg.LogFile == "" && !refused {
		return nil, func() {}
	}
	level, ok := opLogLevels[cfg.LogLevel]
	if !ok {
		level = slog.LevelInfo
	}
	w, closeFn := stderr, func() {}
	if cfg.LogFile != "" {
		f, err := openLogFile(cfg.LogFile)
		if err != nil {
			fmt.Fprintf(stderr, "railyard-cni: logFile %s refused, logging to stderr: %v\n", cfg.LogFile, err)
		} else {
			w, closeFn = f, func() { f.Close() }
		}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), closeFn
}

// errStdStream is returned (wrapped) for a log file that is the process's
// own stdout or stderr.
var errStdStream = errors.New("is this process's stdout or stderr")

// openLogFile opens path for appending without blocking on a FIFO, and
// keeps it only when it is a regular file other than stdout and stderr.
func openLogFile(path string) (*os.File, error) {
	f, err := inputfile.OpenRegular(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	for _, std := range []*os.File{os.Stdout, os.Stderr} {
		if s, err := std.Stat(); err == nil && os.SameFile(s, st) {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, errStdStream)
		}
	}
	return f, nil
}

// logOutcome writes one line per invocation to log (nil: none).
func logOutcome(log *slog.Logger, conf []byte, command string, a Args, took time.Duration, err error) {
	if log == nil {
		return
	}
	cfg, _ := config.ParseDel(conf)
	attrs := []any{"command", command, "network", cfg.Name, "containerID", a.ContainerID,
		"ifname", a.IfName, "netns", a.Netns, "device", cfg.DeviceID + cfg.Device, "took", took}
	if err != nil {
		log.Error("railyard-cni failed", append(attrs, "error", err)...)
		return
	}
	log.Info("railyard-cni done", attrs...)
	log.Debug("railyard-cni configuration", "config", string(conf))
}
