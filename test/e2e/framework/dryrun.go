//go:build e2e

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// DecodeObjects splits a multi-document YAML or JSON stream into objects,
// skipping empty documents.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode objects: document %d: %w", len(objs)+1, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// DryRunResult is the server's answer for one object.
type DryRunResult struct {
	Object *unstructured.Unstructured // as the server would store it (defaults applied)
	Err    error                      // validation or admission error, if any
}

// DryRunApply sends every object to the apiserver as a server-side apply with
// dryRun=All: the server decodes, defaults, validates and admits it but
// stores nothing. Objects without a namespace that are namespaced go to
// "default". The results line up with objs; the error is for failures before
// any request (discovery, an unknown kind); per-object failures are in each
// result's Err, and errors.Join of them is returned as the second value.
func (c *Cluster) DryRunApply(ctx context.Context, objs []*unstructured.Unstructured) ([]DryRunResult, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	results := make([]DryRunResult, len(objs))
	var errs []error
	for i, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("dry run: object %d (%s %q): %w", i, gvk, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == "namespace" {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		out, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{
			DryRun:       []string{metav1.DryRunAll},
			FieldManager: "railyard-e2e",
			Force:        true,
		})
		if err != nil {
			err = fmt.Errorf("%s %q: %w", gvk.Kind, obj.GetName(), err)
			errs = append(errs, err)
		}
		results[i] = DryRunResult{Object: out, Err: err}
	}
	return results, errors.Join(errs...)
}
