package binding

import (
	"math"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/railyard-io/railyard/internal/inputfile"
)

// Bindings and PodResources lists are ordered by the boot's clock, not the
// wall clock: a wall clock stepped back by D made a binding look newer
// than every list for D, so a deleted pod's device stayed bound for D.
// CLOCK_BOOTTIME is never stepped, counts suspend and is the same in every
// process of the node (the agent's, railyard-cni's, across their
// restarts), but starts again at each boot, so a stamp carries the boot's
// ID: a binding of another boot was made before anything of this one.

// BootTime is a moment on a boot's clock.
type BootTime struct {
	// ID is the boot's /proc/sys/kernel/random/boot_id.
	ID string `json:"id"`
	// NS is CLOCK_BOOTTIME in nanoseconds.
	NS int64 `json:"ns"`
}

// bootIDFile holds the kernel's ID of the running boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// SystemBootTime reads the node's boot clock; the zero BootTime when it
// cannot (bindings and lists are then ordered by the wall clock).
func SystemBootTime() BootTime {
	b, err := inputfile.Read(bootIDFile, 64)
	if err != nil {
		return BootTime{}
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return BootTime{}
	}
	return BootTime{ID: strings.TrimSpace(string(b)), NS: ts.Nano()}
}

// Now is the store's time on both clocks (a list's Holders.At and .Boot).
func (s *Store) Now() (time.Time, BootTime) {
	return s.opt.Now(), s.opt.Boot()
}

// Postdates reports whether the list h was taken after binding b was made
// (only such a list can say that b's pod ended).
func (h *Holders) Postdates(b Binding) bool {
	_, ok := h.age(b)
	return ok
}

// age is how long before the list h binding b was made; false when it was
// not made before it. Within one boot the boot clock decides, a binding of
// an earlier boot is older than anything, and without boot times (a
// bindings.json of an older agent) the wall clock decides.
func (h *Holders) age(b Binding) (time.Duration, bool) {
	if b.Boot != nil && b.Boot.ID != "" && h.Boot.ID != "" {
		if b.Boot.ID != h.Boot.ID {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(h.Boot.NS - b.Boot.NS), b.Boot.NS < h.Boot.NS
	}
	return h.At.Sub(b.At), b.At.Before(h.At)
}
