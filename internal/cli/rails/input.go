package rails

import (
	"context"
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/jobrails"
)

// readList reads a List (JSON or YAML, as kubectl get -o json|yaml writes
// it) and hands each item to add with its kind.
func readList(path string, want string, add func(kind string, item []byte) error) error {
	b, err := inputfile.Read(path, maxFile)
	if err != nil {
		return err
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("%s: want a List of %s: %w", path, want, err)
	}
	for i, item := range list.Items {
		var meta metav1.TypeMeta
		if err := json.Unmarshal(item, &meta); err != nil {
			return fmt.Errorf("%s: item %d: %w", path, i, err)
		}
		if err := add(meta.Kind, item); err != nil {
			return fmt.Errorf("%s: item %d: %w", path, i, err)
		}
	}
	return nil
}

// readFile reads a List of ResourceSlices, ResourceClaims and
// DeviceTaintRules; other kinds are ignored.
func readFile(path string) (jobrails.Cluster, error) {
	var c jobrails.Cluster
	err := readList(path, "ResourceSlices and ResourceClaims", func(kind string, item []byte) error {
		switch kind {
		case "ResourceSlice":
			var s resourceapi.ResourceSlice
			if err := json.Unmarshal(item, &s); err != nil {
				return err
			}
			c.Slices = append(c.Slices, &s)
		case "ResourceClaim":
			var cl resourceapi.ResourceClaim
			if err := json.Unmarshal(item, &cl); err != nil {
				return err
			}
			c.Claims = append(c.Claims, &cl)
		case "DeviceTaintRule":
			var r resourceapi.DeviceTaintRule
			if err := json.Unmarshal(item, &r); err != nil {
				return err
			}
			c.TaintRules = append(c.TaintRules, &r)
		}
		return nil
	})
	return c, err
}

// listCluster lists the cluster's slices, claims and DeviceTaintRules. A
// cluster that serves no DeviceTaintRules (resource.k8s.io/v1 before
// Kubernetes 1.37) or does not let the caller list them is read without
// them, with a warning.
func listCluster(ctx context.Context, connect connectFunc, kubeconfig string) (jobrails.Cluster, []string, error) {
	cs, err := connect(kubeconfig, requestTimeout)
	if err != nil {
		return jobrails.Cluster{}, nil, err
	}
	sl, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return jobrails.Cluster{}, nil, fmt.Errorf("listing ResourceSlices (resource.k8s.io/v1, Kubernetes 1.34+): %w", err)
	}
	cl, err := cs.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return jobrails.Cluster{}, nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	var c jobrails.Cluster
	for i := range sl.Items {
		c.Slices = append(c.Slices, &sl.Items[i])
	}
	for i := range cl.Items {
		c.Claims = append(c.Claims, &cl.Items[i])
	}
	var warnings []string
	rules, err := cs.ResourceV1().DeviceTaintRules().List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		for i := range rules.Items {
			c.TaintRules = append(c.TaintRules, &rules.Items[i])
		}
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		warnings = append(warnings, fmt.Sprintf("DeviceTaintRules not read (%v): taints they add are not counted", err))
	default:
		return jobrails.Cluster{}, nil, fmt.Errorf("listing DeviceTaintRules: %w", err)
	}
	return c, warnings, nil
}
