package config

import (
	"strings"
)

// applyBinding reads resourceName, for attaching without Multus: the pool
// whose device to attach when no deviceID is given (a sandbox pool's bound
// device, else the one kubelet allocated). Its paths, bindingDir and
// podResourcesSocket, are path fields (paths.go).
func (r *raw) applyBinding(c *Config) []FieldError {
	var errs []FieldError
	bad := func(field, msg string) {
		errs = append(errs, FieldError{Field: field, Msg: msg, Code: CodeInvalid})
	}
	if r.ResourceName != nil && *r.ResourceName != "" {
		name := strings.TrimSpace(*r.ResourceName)
		domain, short, ok := strings.Cut(name, "/")
		switch {
		case !ok || domain == "" || short == "" || strings.ContainsAny(name, " \t\n"):
			bad("resourceName", "must be an extended resource name <domain>/<name> such as railyard.io/rdma_vf")
		case c.Device != "":
			bad("resourceName", "a late-binding pool picks the device: set only one of resourceName and device")
		default:
			c.ResourceName = name
		}
	}
	return errs
}
