//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// mpiJobCRD is a minimal CustomResourceDefinition for kubeflow.org/v2beta1
// MPIJob, written for this test from the MPI Operator's documented fields
// (its own CRD is not available here). The structural schema types the
// fields `railyard bench plan` sets, so the server prunes anything it does
// not know; the pod templates are kept as they are and validated separately
// as pods below.
const mpiJobCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"mpijobs.kubeflow.org"},
 "spec":{"group":"kubeflow.org","scope":"Namespaced",
  "names":{"kind":"MPIJob","listKind":"MPIJobList","plural":"mpijobs","singular":"mpijob"},
  "versions":[{"name":"v2beta1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","required":["mpiReplicaSpecs"],"properties":{
    "slotsPerWorker":{"type":"integer","format":"int32","minimum":1},
    "mpiImplementation":{"type":"string","enum":["OpenMPI","Intel","MPICH"]},
    "runPolicy":{"type":"object","properties":{"cleanPodPolicy":{"type":"string","enum":["None","Running","All"]}}},
    "mpiReplicaSpecs":{"type":"object","required":["Launcher","Worker"],"properties":{
     "Launcher":{"type":"object","properties":{"replicas":{"type":"integer","minimum":1,"maximum":1},"template":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
     "Worker":{"type":"object","properties":{"replicas":{"type":"integer","minimum":1},"template":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}}},
   "status":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}]}}`

// TestBenchPlanMPIJobPassesServerDryRun installs the MPIJob CRD above, then
// sends the nccl-tests MPIJobs of `railyard bench plan` (RDMA and TCP) to
// the real apiserver with dryRun=All: each must be accepted with every
// field it sets kept (none pruned as unknown), and each launcher and worker
// pod template, wrapped in a Pod, must pass the apiserver's pod validation.
func TestBenchPlanMPIJobPassesServerDryRun(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 2*time.Minute)
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd, err := framework.DecodeObjects([]byte(mpiJobCRD))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crds.Create(ctx, crd[0], metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the MPIJob CRD: %v", err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), "mpijobs.kubeflow.org", metav1.DeleteOptions{}) })
	waitEstablished(ctx, t, crds)

	bin, err := c.ProjectBin("railyard")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin, "bench", "plan", "--image", framework.BusyboxImage,
		"--nodes", c.NodeName+","+c.NodeName, "--tests", "nccl", "--variant", "both").Output()
	if err != nil {
		t.Fatalf("railyard bench plan: %v", err)
	}
	objs, err := framework.DecodeObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	var jobs, pods []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "MPIJob" {
			continue
		}
		jobs = append(jobs, o)
		for _, role := range []string{"Launcher", "Worker"} {
			tmpl, ok, err := unstructured.NestedMap(o.Object, "spec", "mpiReplicaSpecs", role, "template")
			if !ok || err != nil {
				t.Fatalf("%s: no %s template (%v)", o.GetName(), role, err)
			}
			spec, _, _ := unstructured.NestedMap(tmpl, "spec")
			labels, _, _ := unstructured.NestedStringMap(tmpl, "metadata", "labels")
			pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": fmt.Sprintf("%s-%s", o.GetName(), map[string]string{"Launcher": "launcher", "Worker": "worker"}[role]), "namespace": "default"},
				"spec":     spec}}
			pod.SetLabels(labels)
			pods = append(pods, pod)
		}
	}
	if len(jobs) != 2 {
		t.Fatalf("plan has %d MPIJobs, want 2 (rdma and tcp)", len(jobs))
	}
	results, err := c.DryRunApply(ctx, jobs)
	if err != nil {
		t.Fatalf("server dry run rejected the MPIJobs: %v", err)
	}
	for i, r := range results {
		sent, _, _ := unstructured.NestedMap(jobs[i].Object, "spec")
		kept, _, _ := unstructured.NestedMap(r.Object.Object, "spec")
		for _, path := range [][]string{{"slotsPerWorker"}, {"mpiImplementation"}, {"runPolicy", "cleanPodPolicy"},
			{"mpiReplicaSpecs", "Launcher", "replicas"}, {"mpiReplicaSpecs", "Worker", "replicas"}} {
			want, _, _ := unstructured.NestedFieldNoCopy(sent, path...)
			got, found, _ := unstructured.NestedFieldNoCopy(kept, path...)
			if want == nil || !found || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: spec.%v sent %v, server kept %v (found %v)", jobs[i].GetName(), path, want, got, found)
			}
		}
		for k := range sent {
			if _, ok := kept[k]; !ok {
				t.Errorf("%s: the server pruned spec.%s", jobs[i].GetName(), k)
			}
		}
	}
	if _, err := c.DryRunApply(ctx, pods); err != nil {
		t.Fatalf("a pod template of the MPIJobs fails pod validation: %v", err)
	}
}

// waitEstablished waits until the MPIJob CRD is served.
func waitEstablished(ctx context.Context, t *testing.T, crds dynamic.NamespaceableResourceInterface) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got, err := crds.Get(ctx, "mpijobs.kubeflow.org", metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("MPIJob CRD not established within 30s (last error %v)", err)
		}
	}
}
