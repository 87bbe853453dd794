//go:build e2e

package framework

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// AsServiceAccount returns a client that acts, by impersonation, as the
// service account namespace/name; with node set it also carries the
// node-name extra a kubelet-bound pod token has
// (ServiceAccountTokenPodNodeInfo), which the chart's admission policies
// read. The cluster's own static tokens carry no node: impersonation is
// how a test tells the apiserver the same user information.
func (c *Cluster) AsServiceAccount(namespace, name, node string) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(c.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	if node != "" {
		cfg.Impersonate.Extra = map[string][]string{"authentication.kubernetes.io/node-name": {node}}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("impersonating %s/%s: %w", namespace, name, err)
	}
	return cs, nil
}
