package cni

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/utils"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/netops"
)

// About is printed on stderr when the binary runs without CNI_COMMAND.
const About = "railyard-cni: attaches an RDMA NIC (VF or PF) and its RDMA device to a pod, CNI spec 1.1.0"

// MaxConfig bounds the network configuration read from stdin (a
// configuration is a few KiB; /dev/zero ran the plugin out of memory).
const MaxConfig = 1 << 20

// Run serves one CNI invocation from the environment and stdin with the
// real Linux operations and exec'd IPAM. It prints the result, or the error
// as CNI error JSON, on stdout and nothing else, and returns the error.
func Run(ctx context.Context) error {
	ops := netops.NewOperation() // one netlink handle per namespace for this call
	defer ops.Close()
	p := &Plugin{
		Ops:     ops,
		IPAM:    ExecIPAM{CNIPath: os.Getenv("CNI_PATH")},
		BootID:  readBootID(),
		GIDWait: DefaultGIDWait,
		// Tests' roots come from this process's environment, which the
		// runtime sets and a network configuration cannot.
		TestRoot: os.Getenv(config.TestRootEnv),
	}
	return p.Serve(ctx, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
}

func readBootID() string {
	b, err := inputfile.Read("/proc/sys/kernel/random/boot_id", 64)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// command is one CNI command: the environment variables it needs, the
// oldest configuration version that has it, and what it runs.
type command struct {
	env     []string
	minConf string
	run     func(p *Plugin, ctx context.Context, a Args) (types.Result, error)
}

var commands = map[string]command{
	"ADD": {env: []string{"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"}, run: func(p *Plugin, ctx context.Context, a Args) (types.Result, error) {
		res, err := p.Add(ctx, a)
		if err != nil {
			return nil, err
		}
		return res, nil
	}},
	"CHECK":  {env: []string{"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"}, minConf: "0.4.0", run: noResult((*Plugin).Check)},
	"DEL":    {env: []string{"CNI_CONTAINERID", "CNI_IFNAME", "CNI_PATH"}, run: noResult((*Plugin).Del)},
	"STATUS": {env: []string{"CNI_PATH"}, minConf: "1.1.0", run: noResult((*Plugin).Status)},
	"GC":     {env: []string{"CNI_PATH"}, minConf: "1.1.0", run: noResult((*Plugin).GC)},
}

func noResult(f func(*Plugin, context.Context, Args) error) func(*Plugin, context.Context, Args) (types.Result, error) {
	return func(p *Plugin, ctx context.Context, a Args) (types.Result, error) { return nil, f(p, ctx, a) }
}

// Serve runs one CNI call: the command and its arguments from getenv, the
// network configuration from stdin (at most MaxConfig bytes). It writes the
// result, or the error as one CNI error document, to stdout and nothing
// else, and returns the error. It checks what the CNI library's skel
// checks (environment, network name, configuration version), except for
// DEL, which never fails on its configuration: a DEL whose configuration
// does not decode, is too large, names another version or no network
// still releases the attachment its record names (docs/cni.md).
func (p *Plugin) Serve(ctx context.Context, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	name := getenv("CNI_COMMAND")
	switch name {
	case "":
		fmt.Fprintf(stderr, "%s\nCNI protocol versions supported: %s\n", About, strings.Join(version.All.SupportedVersions(), ", "))
		return nil
	case "VERSION":
		return version.All.Encode(stdout)
	}
	conf, readErr := inputfile.ReadLimited(stdin, MaxConfig)
	a := Args{ContainerID: getenv("CNI_CONTAINERID"), Netns: getenv("CNI_NETNS"), IfName: getenv("CNI_IFNAME"), PluginArgs: getenv("CNI_ARGS"), Config: conf}
	log, closeLog := openLog(conf, stderr, p.configOptions()...)
	defer closeLog()
	q := *p
	if q.Log == nil {
		q.Log = log
	}
	start := time.Now()
	res, err := q.call(ctx, name, getenv, a, readErr)
	if err == nil && res != nil {
		err = printResult(stdout, res, conf)
	}
	logOutcome(log, conf, name, a, time.Since(start), err)
	if err != nil {
		e := ToCNIError(err)
		b, merr := json.MarshalIndent(e, "", "    ")
		if merr != nil {
			return merr
		}
		if _, werr := stdout.Write(b); werr != nil {
			return werr
		}
		return e
	}
	return nil
}

// call checks the call and runs its command.
func (p *Plugin) call(ctx context.Context, name string, getenv func(string) string, a Args, readErr error) (types.Result, error) {
	c, ok := commands[name]
	if !ok {
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("unknown CNI_COMMAND: %s", name), "")
	}
	var missing []string
	for _, v := range c.env {
		if getenv(v) == "" {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("required env variables [%s] missing", strings.Join(missing, ",")), "")
	}
	if a.ContainerID != "" {
		if e := utils.ValidateContainerID(a.ContainerID); e != nil {
			return nil, e
		}
	}
	if a.IfName != "" {
		if e := utils.ValidateInterfaceName(a.IfName); e != nil {
			return nil, e
		}
	}
	if name == "DEL" {
		if readErr != nil {
			// Released by its record: the configuration adds nothing.
			p.warn("configuration on stdin not read; releasing by the record", "error", readErr)
			a.Config = nil
		}
		return c.run(p, ctx, a)
	}
	if readErr != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "reading the network configuration from stdin: "+readErr.Error(), "")
	}
	if err := checkVersion(a.Config, c.minConf); err != nil {
		return nil, err
	}
	return c.run(p, ctx, a)
}

// checkVersion is skel's check of a configuration: a valid network name and
// a cniVersion this plugin speaks, at least minConf.
func checkVersion(conf []byte, minConf string) *types.Error {
	var n struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(conf, &n); err != nil {
		return types.NewError(types.ErrDecodingFailure, "error unmarshall network config: "+err.Error(), "")
	}
	if n.Name == "" {
		return types.NewError(types.ErrInvalidNetworkConfig, "missing network name", "")
	}
	if e := utils.ValidateNetworkName(n.Name); e != nil {
		return e
	}
	v, err := (&version.ConfigDecoder{}).Decode(conf)
	if err != nil {
		return types.NewError(types.ErrDecodingFailure, err.Error(), "")
	}
	if e := (&version.Reconciler{}).Check(v, version.All); e != nil {
		return types.NewError(types.ErrIncompatibleCNIVersion, "incompatible CNI versions", e.Details())
	}
	if minConf != "" {
		if ok, err := version.GreaterThanOrEqualTo(v, minConf); err != nil {
			return types.NewError(types.ErrDecodingFailure, err.Error(), "")
		} else if !ok {
			return types.NewError(types.ErrIncompatibleCNIVersion, fmt.Sprintf("config version %s does not allow this command (needs %s)", v, minConf), "")
		}
	}
	return nil
}

// printResult writes res in the configuration's cniVersion.
func printResult(w io.Writer, res types.Result, conf []byte) error {
	var v struct {
		CNIVersion string `json:"cniVersion"`
	}
	_ = json.Unmarshal(conf, &v)
	r, err := res.GetAsVersion(v.CNIVersion)
	if err != nil {
		return err
	}
	return r.PrintTo(w)
}
