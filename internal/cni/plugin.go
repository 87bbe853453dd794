package cni

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/draview"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// Plugin is the railyard-cni plugin logic with its dependencies.
type Plugin struct {
	Ops  netops.Ops
	IPAM IPAM
	// BootID identifies this boot of the node (/proc/sys/kernel/random/boot_id);
	// a record from another boot is stale.
	BootID string
	// PodResources is kubelet's PodResources for late binding; nil dials
	// the socket the binding store's view names (tests set a stand-in).
	PodResources podlist.Lister
	// DeviceInfoDir stands for DefaultDeviceInfoDir ("": the default);
	// tests point it at a temporary directory.
	DeviceInfoDir string
	// GIDWait is how long ADD waits for the RoCE v2 GID of the pod's
	// address to appear in its RDMA device's GID table (Run:
	// DefaultGIDWait; 0 reads it once).
	GIDWait time.Duration
	// TestRoot is a directory below which the configuration's path
	// fields (stateDir, sysfsRoot, logFile, ...) may point besides the
	// paths railyard-cni owns (config.TestRoot); "" in production. Run
	// takes it from config.TestRootEnv; tests set it.
	TestRoot string
	// Log receives the warnings of a call that succeeds anyway (a
	// device-info path DEL leaves alone, a record it cannot decode); nil
	// drops them. Run points it at the configuration's logFile.
	Log *slog.Logger
}

// warn logs a warning where the plugin has a log.
func (p *Plugin) warn(msg string, args ...any) {
	if p.Log != nil {
		p.Log.Warn(msg, args...)
	}
}

// markerPrefix starts the alias railyard-cni sets on an attached netdev:
// "railyard-cni <device key> <original name>", followed for a netdev that
// moves into the pod by what DEL needs to give it back when its record is
// gone: " mtu=<MTU> up=<0|1>" and, for an Ethernet netdev, " mac=<MAC>".
const markerPrefix = "railyard-cni "

func marker(key, origName string) string { return markerPrefix + key + " " + origName }

// deviceMarker is the marker of a netdev that moves into the pod, carrying
// its host settings.
func deviceMarker(key string, orig netops.Link) string {
	up := 0
	if orig.Up {
		up = 1
	}
	m := fmt.Sprintf("%s mtu=%d up=%d", marker(key, orig.Name), orig.MTU, up)
	if len(orig.MAC) == 6 {
		m += " mac=" + orig.MAC.String()
	}
	return m
}

// markerInfo is what an alias set by railyard-cni says.
type markerInfo struct {
	Key, Orig string
	// Host holds the settings the netdev had on the host (Name, MTU, Up
	// and MAC when the marker carries them; MTU 0 when it does not).
	Host netops.Link
	// Settings reports whether the marker carries MTU and up state (one set
	// by an older version does not).
	Settings bool
}

// parseMarker reads an alias set by railyard-cni.
func parseMarker(alias string) (markerInfo, bool) {
	rest, ok := strings.CutPrefix(alias, markerPrefix)
	if !ok {
		return markerInfo{}, false
	}
	f := strings.Split(rest, " ") // as deviceMarker joins them: a name may hold other white space
	if len(f) < 2 || f[0] == "" || config.ValidIfName(f[1]) != nil {
		return markerInfo{}, false
	}
	m := markerInfo{Key: f[0], Orig: f[1], Host: netops.Link{Name: f[1], Index: -1}}
	var mtu, up bool
	for _, kv := range f[2:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "mtu":
			n, err := strconv.Atoi(v)
			if err != nil || n < 68 || n > 65535 {
				return markerInfo{}, false
			}
			m.Host.MTU, mtu = n, true
		case "up":
			if v != "0" && v != "1" {
				return markerInfo{}, false
			}
			m.Host.Up, up = v == "1", true
		case "mac":
			hw, err := net.ParseMAC(v)
			if err != nil || len(hw) != 6 {
				return markerInfo{}, false
			}
			m.Host.MAC = hw
		default:
			return markerInfo{}, false
		}
	}
	m.Settings = mtu && up
	return m, true
}

// tempName is the unique name a netdev carries while it crosses namespaces.
func tempName(key, containerID, ifname string) string {
	h := sha256.Sum256([]byte(key + "\x00" + containerID + "\x00" + ifname))
	return "ry" + hex.EncodeToString(h[:])[:11]
}

type session struct {
	cfg   *config.Config
	fs    sysfs.FS
	store state.Store
	key   string
	// dra is the claimed device a late-binding ADD attaches (bindDRA),
	// nil otherwise: its status record is written once attached.
	dra *draview.Held
	// durable waits until ADD's first record is on disk (state.Store.Stage);
	// nil when there is nothing to wait for.
	durable func() error
	// ipam is ADD's IPAM ADD when it runs during the move (startIPAM).
	ipam *ipamAdd
}

// recordDurable waits until the record ADD staged is durable.
func (s *session) recordDurable() error {
	if s.durable == nil {
		return nil
	}
	return s.durable()
}

// open parses the configuration of an ADD, DEL or CHECK.
func (p *Plugin) open(a Args) (*session, error) {
	cfg, err := config.Parse(a.Config, p.configOptions()...)
	if err != nil {
		return nil, err
	}
	fs := sysfs.New(cfg.SysfsRoot)
	return &session{cfg: cfg, fs: fs, store: state.Store{Dir: cfg.StateDir}, key: deviceKey(fs, cfg)}, nil
}

// configOptions are the parse options of this plugin: its test root.
func (p *Plugin) configOptions() []config.Option {
	if p.TestRoot == "" {
		return nil
	}
	return []config.Option{config.TestRoot(p.TestRoot)}
}

// openDel reads the configuration of a DEL, which never fails on it (see
// config.ParseDel). key is "" when nothing in it names a device.
func (p *Plugin) openDel(a Args) *session {
	cfg, _ := config.ParseDel(a.Config, p.configOptions()...)
	fs := sysfs.New(cfg.SysfsRoot)
	s := &session{cfg: cfg, fs: fs, store: state.Store{Dir: cfg.StateDir}}
	if cfg.DeviceID != "" || cfg.Device != "" {
		s.key = deviceKey(fs, cfg)
	}
	return s
}

// openNetwork parses the configuration of a STATUS or GC (no device).
func (p *Plugin) openNetwork(a Args) (*session, error) {
	cfg, err := config.ParseNetwork(a.Config, p.configOptions()...)
	if err != nil {
		return nil, err
	}
	return &session{cfg: cfg, fs: sysfs.New(cfg.SysfsRoot), store: state.Store{Dir: cfg.StateDir}}, nil
}

func (s *session) lock(ctx context.Context, key string) (func(), error) {
	unlock, err := s.store.Lock(ctx, key, s.cfg.LockTimeout)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", key, err)
	}
	return unlock, nil
}

func (p *Plugin) ipam(ctx context.Context, command string, conf []byte, a Args) (types.Result, error) {
	plugin, err := ipamType(conf)
	if err != nil || plugin == "" {
		return nil, err
	}
	return p.IPAM.Exec(ctx, command, plugin, conf, a)
}

// ipamType reads ipam.type of a stored or received configuration, leniently:
// releasing addresses must not fail on a field unrelated to IPAM.
func ipamType(conf []byte) (string, error) {
	cfg, _ := config.ParseDel(conf)
	return cfg.IPAMType, nil
}
