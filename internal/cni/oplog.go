package cni

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/railyard-io/railyard/internal/cni/config"
)

// opLogLevels maps sriov-cni's log levels onto slog's; "panic" logs only
// errors, as sriov-cni does for anything short of a crash.
var opLogLevels = map[string]slog.Level{
	"panic": slog.LevelError, "error": slog.LevelError, "warning": slog.LevelWarn,
	"info": slog.LevelInfo, "debug": slog.LevelDebug,
}

// logOutcome writes one line per invocation where the configuration asks
// for it (sriov-cni's logLevel and logFile): to logFile, else to stderr,
// at logLevel (default info). It never writes to stdout, which carries
// only the result, and a log that cannot be opened is skipped.
func logOutcome(conf []byte, command string, a Args, took time.Duration, err error) {
	cfg, _ := config.ParseDel(conf)
	if cfg.LogLevel == "" && cfg.LogFile == "" {
		return
	}
	var w io.Writer = os.Stderr
	if cfg.LogFile != "" {
		f, ferr := os.OpenFile(cfg.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if ferr != nil {
			return
		}
		defer f.Close()
		w = f
	}
	level, ok := opLogLevels[cfg.LogLevel]
	if !ok {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	attrs := []any{"command", command, "network", cfg.Name, "containerID", a.ContainerID,
		"ifname", a.IfName, "netns", a.Netns, "device", cfg.DeviceID + cfg.Device, "took", took}
	if err != nil {
		log.Error("railyard-cni failed", append(attrs, "error", err)...)
		return
	}
	log.Info("railyard-cni done", attrs...)
	log.Debug("railyard-cni configuration", "config", string(conf))
}
