package cni

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/railyard-io/railyard/internal/netops"
)

// About is printed by the skel when the binary runs without CNI_COMMAND.
const About = "railyard-cni: attaches an RDMA NIC (VF or PF) and its RDMA device to a pod, CNI spec 1.1.0"

// Run serves one CNI invocation from the environment and stdin with the
// real Linux operations and exec'd IPAM. It prints the result, or the error
// as CNI error JSON, on stdout and nothing else, and returns the error.
func Run(ctx context.Context) error {
	ops := netops.NewOperation() // one netlink handle per namespace for this call
	defer ops.Close()
	p := &Plugin{
		Ops:    ops,
		IPAM:   ExecIPAM{CNIPath: os.Getenv("CNI_PATH")},
		BootID: readBootID(),
	}
	if e := skel.PluginMainFuncsWithError(p.Funcs(ctx), version.All, About); e != nil {
		if err := e.Print(); err != nil {
			return err
		}
		return e
	}
	return nil
}

func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Funcs adapts the plugin to skel's callbacks, mapping errors to CNI codes
// and logging each outcome where the configuration asks for it.
func (p *Plugin) Funcs(ctx context.Context) skel.CNIFuncs {
	conv := func(c *skel.CmdArgs) Args {
		return Args{ContainerID: c.ContainerID, Netns: c.Netns, IfName: c.IfName, PluginArgs: c.Args, Config: c.StdinData}
	}
	logged := func(command string, f func(ctx context.Context, a Args) error) func(*skel.CmdArgs) error {
		return func(c *skel.CmdArgs) error {
			start := time.Now()
			err := f(ctx, conv(c))
			logOutcome(c.StdinData, command, conv(c), time.Since(start), err)
			return asCNI(err)
		}
	}
	add := func(ctx context.Context, a Args) error {
		res, err := p.Add(ctx, a)
		if err != nil {
			return err
		}
		var v struct {
			CNIVersion string `json:"cniVersion"`
		}
		_ = json.Unmarshal(a.Config, &v)
		return types.PrintResult(res, v.CNIVersion)
	}
	return skel.CNIFuncs{
		Add:    logged("ADD", add),
		Del:    logged("DEL", p.Del),
		Check:  logged("CHECK", p.Check),
		Status: logged("STATUS", p.Status),
		GC:     logged("GC", p.GC),
	}
}

func asCNI(err error) error {
	if err == nil {
		return nil
	}
	return ToCNIError(err)
}
