package topo

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/railyard-io/railyard/internal/capture"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/netops"
)

// writeCapture runs discovery and doctor with recorders and writes what
// they read to file as a gzipped tarball (--capture FILE).
func writeCapture(ctx context.Context, s iostreams.Streams, src Source, hostRoot, file string) error {
	if src.Machine != "" || src.NCCLTopo != "" || src.VFs != 0 {
		return errors.New("--capture records a sysfs tree (the live /sys or --sysfs): not with --machine, --vfs or --nccl-topo")
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("--capture: %w", err)
	}
	st, err := capture.Node(ctx, f, capture.Options{SysfsRoot: src.Sysfs, HostRoot: hostRoot, Root: os.Geteuid() == 0, DCB: netops.Linux{}})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(file)
		return fmt.Errorf("--capture: %w", err)
	}
	fmt.Fprintf(s.Out, "wrote %s: %d files (%d bytes), %d directories, %d symlinks; %d files could not be read\n"+
		"replay: mkdir c && tar -xzf %s -C c && railyard topo --sysfs c/%s && railyard doctor --sysfs c/%s --host-root c/%s\n",
		file, st.Files, st.Bytes, st.Dirs, st.Symlinks, st.Unreadable, file, capture.SysDir, capture.SysDir, capture.HostDir)
	return nil
}
