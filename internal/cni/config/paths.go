package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// TestRootEnv is the variable of railyard-cni's own environment (the
// runtime's, which a NetworkAttachmentDefinition writer cannot set) that
// names a test root: a directory under which tests may place stateDir,
// bindingDir, sysfsRoot, logFile and podResourcesSocket. Production never
// sets it.
const TestRootEnv = "RAILYARD_CNI_TEST_ROOT"

// Option changes what Parse accepts.
type Option func(*options)

type options struct {
	testRoot string
}

// TestRoot accepts, beside the paths railyard-cni owns, any path below
// dir for its path fields: the tests' fake sysfs trees and temporary
// state. railyard-cni takes dir from TestRootEnv. A dir that is not
// absolute, or is "/", is ignored: it would open every path.
func TestRoot(dir string) Option {
	return func(o *options) {
		if filepath.IsAbs(dir) && filepath.Clean(dir) != "/" {
			o.testRoot = filepath.Clean(dir)
		}
	}
}

func optionsOf(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// pathField is one configuration field that names a host path
// railyard-cni, as root, writes, reads or connects to. A path in a
// configuration is not a licence to use it: each field accepts only what
// the component owns (owned, checked lexically after filepath.Clean, so
// ".." cannot climb out), or a path below the test root.
type pathField struct {
	name string
	// get is the field's raw value (nil: absent); set stores the accepted
	// path.
	get func(*raw) *string
	set func(*Config, string)
	// def is the value when absent ("" for none: logFile).
	def string
	// owned says whether railyard-cni owns p; what says what it owns,
	// for the error.
	owned func(p string) bool
	what  string
}

// under reports whether p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// Owned host paths.
const (
	// AgentStateDir is railyard-agent's state directory (the chart's
	// default), which holds the binding store (<AgentStateDir>/binding)
	// and may hold railyard-cni's state (the chart's examples put it in
	// <AgentStateDir>/cni).
	AgentStateDir = "/var/lib/railyard"
	// LogDir and DefaultLogFile are where railyard-cni may log.
	LogDir         = "/var/log/railyard"
	DefaultLogFile = "/var/log/railyard-cni.log"
)

// pathFields are the path fields and what each may name.
var pathFields = []pathField{
	{
		name: "stateDir", def: DefaultStateDir,
		get:   func(r *raw) *string { return r.StateDir },
		set:   func(c *Config, p string) { c.StateDir = p },
		owned: func(p string) bool { return under(p, DefaultStateDir) || under(p, AgentStateDir) },
		what:  DefaultStateDir + " or " + AgentStateDir + ", or a directory below them",
	},
	{
		name: "bindingDir", def: DefaultBindingDir,
		get:   func(r *raw) *string { return r.BindingDir },
		set:   func(c *Config, p string) { c.BindingDir = p },
		owned: func(p string) bool { return under(p, AgentStateDir) },
		what:  "a directory below " + AgentStateDir + " (the agent's binding store)",
	},
	{
		name: "sysfsRoot", def: DefaultSysfsRoot,
		get:   func(r *raw) *string { return r.SysfsRoot },
		set:   func(c *Config, p string) { c.SysfsRoot = p },
		owned: func(p string) bool { return p == DefaultSysfsRoot },
		what:  DefaultSysfsRoot + " (another root is for tests only: " + TestRootEnv + ")",
	},
	{
		name: "logFile",
		get:  func(r *raw) *string { return r.LogFile },
		set:  func(c *Config, p string) { c.LogFile = p },
		owned: func(p string) bool {
			return p == DefaultLogFile || (under(p, LogDir) && p != LogDir)
		},
		what: DefaultLogFile + " or a file below " + LogDir,
	},
	{
		name: "podResourcesSocket", def: DefaultPodResourcesSocket,
		get: func(r *raw) *string { return r.PodResourcesSocket },
		set: func(c *Config, p string) { c.PodResourcesSocket = p },
		owned: func(p string) bool {
			return filepath.Base(p) == "kubelet.sock" && filepath.Base(filepath.Dir(p)) == "pod-resources"
		},
		what: "kubelet's PodResources socket, <kubelet root>/pod-resources/kubelet.sock",
	},
}

// applyPaths checks and sets every path field (pathFields).
func (r *raw) applyPaths(c *Config, o options) []FieldError {
	var errs []FieldError
	for _, f := range pathFields {
		f.set(c, f.def)
		v := f.get(r)
		if v == nil || (*v == "" && f.def == "") {
			continue
		}
		p, err := f.check(*v, o)
		if err != nil {
			errs = append(errs, FieldError{Field: f.name, Msg: err.Error(), Code: CodeInvalid})
			continue
		}
		f.set(c, p)
	}
	return errs
}

// check returns v cleaned when the field may name it.
func (f pathField) check(v string, o options) (string, error) {
	if !filepath.IsAbs(v) {
		return "", fmt.Errorf("%q must be an absolute path", v)
	}
	p := filepath.Clean(v)
	if f.owned(p) || (o.testRoot != "" && under(p, o.testRoot) && p != o.testRoot) {
		return p, nil
	}
	return "", fmt.Errorf("%q is not a path railyard-cni owns: want %s", v, f.what)
}
