//go:build e2e

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	return c.apply(ctx, objs, []string{metav1.DryRunAll})
}

// Apply stores every object with a server-side apply (as DryRunApply, but
// for real) and returns a function deleting them again, for t.Cleanup. It
// stops at the first failure, deleting what it stored.
func (c *Cluster) Apply(ctx context.Context, objs []*unstructured.Unstructured) (remove func(context.Context) error, err error) {
	var stored []*unstructured.Unstructured
	remove = func(ctx context.Context) error {
		dyn, mapper, err := c.clients()
		if err != nil {
			return err
		}
		var errs []error
		for _, o := range stored {
			ri, err := resourceFor(dyn, mapper, o)
			if err == nil {
				err = ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting %s %q: %w", o.GetKind(), o.GetName(), err))
			}
		}
		return errors.Join(errs...)
	}
	for _, o := range objs {
		res, err := c.apply(ctx, []*unstructured.Unstructured{o}, nil)
		if err == nil {
			err = res[0].Err
		}
		if err != nil {
			return nil, errors.Join(err, remove(ctx))
		}
		stored = append(stored, o)
	}
	return remove, nil
}

func (c *Cluster) clients() (*dynamic.DynamicClient, meta.RESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("apply: %w", err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("apply: %w", err)
	}
	return dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), nil
}

// resourceFor is the dynamic client of obj's kind (in obj's namespace,
// "default" when it has none, for a namespaced kind).
func resourceFor(dyn *dynamic.DynamicClient, mapper meta.RESTMapper, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", gvk, obj.GetName(), err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		return dyn.Resource(mapping.Resource).Namespace(ns), nil
	}
	return dyn.Resource(mapping.Resource), nil
}

func (c *Cluster) apply(ctx context.Context, objs []*unstructured.Unstructured, dryRun []string) ([]DryRunResult, error) {
	dyn, mapper, err := c.clients()
	if err != nil {
		return nil, err
	}
	results := make([]DryRunResult, len(objs))
	var errs []error
	for i, obj := range objs {
		ri, err := resourceFor(dyn, mapper, obj)
		if err != nil {
			return nil, fmt.Errorf("apply: object %d: %w", i, err)
		}
		out, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{
			DryRun:       dryRun,
			FieldManager: "railyard-e2e",
			Force:        true,
		})
		if err != nil {
			err = fmt.Errorf("%s %q: %w", obj.GetKind(), obj.GetName(), err)
			errs = append(errs, err)
		}
		results[i] = DryRunResult{Object: out, Err: err}
	}
	return results, errors.Join(errs...)
}
