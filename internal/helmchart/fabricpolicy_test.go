package helmchart

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	celgo "github.com/google/cel-go/cel"
	admissionapi "k8s.io/api/admission/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// The chart's fabric admission policies, evaluated by the apiserver's own
// ValidatingAdmissionPolicy library (k8s.io/apiserver: the CEL
// environment, compiler, match conditions and validator the
// kube-apiserver runs), without an apiserver: what each service account
// may change on a Node. test/e2e/fabric_chart_test.go checks the same on
// a real kube-apiserver.

var (
	nodeGVK = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	nodeGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

// policy is one of the chart's ValidatingAdmissionPolicies, compiled.
type policy struct {
	spec               admissionv1.ValidatingAdmissionPolicySpec
	match, validations cel.ConditionEvaluator
	// messages holds the compiled messageExpressions, by validation index.
	messages map[int]cel.ConditionEvaluator
}

// policies are the chart's compiled policies, by name.
type policies map[string]policy

// expr is a CEL expression of a policy: a variable (with a name), a
// match condition or a validation (returning a bool), or a message
// expression (returning a string).
type expr struct {
	name, expression string
	returns          []*celgo.Type
}

func (e expr) GetExpression() string      { return e.expression }
func (e expr) ReturnTypes() []*celgo.Type { return e.returns }
func (e expr) GetName() string            { return e.name }

// The return types the apiserver's policy expressions are compiled
// with (k8s.io/apiserver policy/validating's Variable,
// ValidationCondition, MessageExpressionCondition).
var (
	anyType    = []*celgo.Type{celgo.AnyType, celgo.DynType}
	boolType   = []*celgo.Type{celgo.BoolType}
	stringType = []*celgo.Type{celgo.StringType}
)

func conditions(es ...expr) []cel.ExpressionAccessor {
	out := make([]cel.ExpressionAccessor, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// fabricPolicies renders the chart with values and compiles each
// ValidatingAdmissionPolicy as the apiserver's admission plugin does
// (k8s.io/apiserver's policy/validating compilePolicy: the same
// environment, composited compiler and stored-expression mode; its
// package is not imported because it links tracing modules this module's
// go.sum does not hold). Any compilation error fails the test.
func fabricPolicies(t *testing.T, values map[string]any) policies {
	t.Helper()
	_, o := render(t, values)
	out := policies{}
	for _, doc := range o.byKind["ValidatingAdmissionPolicy"] {
		var p admissionv1.ValidatingAdmissionPolicy
		if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
			t.Fatal(err)
		}
		out[p.Name] = compilePolicy(t, p)
	}
	return out
}

func compilePolicy(t *testing.T, p admissionv1.ValidatingAdmissionPolicy) policy {
	t.Helper()
	compiler, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	decls := cel.OptionalVariableDeclarations{}
	for _, v := range p.Spec.Variables {
		if r := compiler.CompileAndStoreVariable(expr{v.Name, v.Expression, anyType}, decls, environment.StoredExpressions); r.Error != nil {
			t.Fatalf("%s: variable %s: %v", p.Name, v.Name, r.Error)
		}
	}
	var matches, checks []expr
	for _, m := range p.Spec.MatchConditions {
		matches = append(matches, expr{m.Name, m.Expression, boolType})
	}
	out := policy{spec: p.Spec, messages: map[int]cel.ConditionEvaluator{}}
	for i, v := range p.Spec.Validations {
		checks = append(checks, expr{"", v.Expression, boolType})
		if v.MessageExpression != "" {
			out.messages[i] = compiler.CompileCondition(conditions(expr{"", v.MessageExpression, stringType}), decls, environment.StoredExpressions)
		}
	}
	out.match = compiler.CompileCondition(conditions(matches...), decls, environment.StoredExpressions)
	out.validations = compiler.CompileCondition(conditions(checks...), decls, environment.StoredExpressions)
	for _, ev := range append([]cel.ConditionEvaluator{out.match, out.validations}, slices.Collect(maps.Values(out.messages))...) {
		if errs := ev.CompilationErrors(); len(errs) > 0 {
			t.Fatalf("%s: %v", p.Name, errs)
		}
	}
	return out
}

// admit evaluates an update of old to new by the user (a service account
// name and the node its token carries, "" for none) under every policy
// whose match conditions hold, and returns the denials' messages; none
// admits it. An expression that fails to evaluate denies
// (failurePolicy: Fail), as in the apiserver.
func (ps policies) admit(t *testing.T, username, tokenNode string, old, new *corev1.Node) []string {
	t.Helper()
	ctx := context.Background()
	u := &user.DefaultInfo{Name: username}
	if tokenNode != "" {
		u.Extra = map[string][]string{"authentication.kubernetes.io/node-name": {tokenNode}}
	}
	attr := admission.NewAttributesRecord(new, old, nodeGVK, "", new.Name, nodeGVR, "", admission.Update, &metav1.UpdateOptions{}, false, u)
	va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: nodeGVK, VersionedObject: admission.NewLazyObject(new), VersionedOldObject: admission.NewLazyObject(old)}
	req := cel.CreateAdmissionRequest(attr, metav1.GroupVersionResource(nodeGVR), metav1.GroupVersionKind(nodeGVK))
	var denied []string
	for name, p := range ps {
		if p.spec.FailurePolicy == nil || *p.spec.FailurePolicy != admissionv1.Fail {
			t.Fatalf("%s: failurePolicy %v, want Fail", name, p.spec.FailurePolicy)
		}
		matched, _, err := p.match.ForInput(ctx, va, req, cel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudgetMatchConditions)
		if err != nil {
			t.Fatalf("%s: match conditions: %v", name, err)
		}
		applies := true
		for _, r := range matched {
			applies = applies && r.Error == nil && r.EvalResult.Value() == true
		}
		if !applies {
			continue
		}
		results, _, err := p.validations.ForInput(ctx, va, req, cel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, r := range results {
			switch {
			case r.Error != nil:
				denied = append(denied, name+": "+r.Error.Error())
			case r.EvalResult.Value() != true:
				denied = append(denied, name+": "+p.message(ctx, i, va, req))
			}
		}
	}
	return denied
}

// message is validation i's message: its messageExpression's, else its
// message.
func (p policy) message(ctx context.Context, i int, va *admission.VersionedAttributes, req *admissionapi.AdmissionRequest) string {
	if ev, ok := p.messages[i]; ok {
		if res, _, err := ev.ForInput(ctx, va, req, cel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget); err == nil && res[0].Error == nil {
			if s, ok := res[0].EvalResult.Value().(string); ok {
				return s
			}
		}
	}
	return p.spec.Validations[i].Message
}

// edit is a change to a Node.
type edit func(n *corev1.Node)

func setLabel(k, v string) edit { return func(n *corev1.Node) { n.Labels[k] = v } }
func dropLabel(k string) edit   { return func(n *corev1.Node) { delete(n.Labels, k) } }
func setAnnotation(k, v string) edit {
	return func(n *corev1.Node) { n.Annotations[k] = v }
}

var (
	addFinalizer = func(n *corev1.Node) { n.Finalizers = append(n.Finalizers, "example.com/never-deleted") }
	addOwner     = func(n *corev1.Node) {
		n.OwnerReferences = append(n.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "0123"})
	}
	cordon = func(n *corev1.Node) { n.Spec.Unschedulable = true }
)

// gpuNode is a labelled, annotated Node with a finalizer and an owner
// already, so that changing them, not only adding them, is judged.
func gpuNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"kubernetes.io/hostname": name, "rail.railyard.io/7": "leaf-7", "railyard.io/leaf-set": "ls-0123456789ab",
			"railyard.io/fabric-unit": "su1-leaf0", "fabric.topograph.run/tier-0": "ls-x", "fabric.topograph.run/tier-1": "su1-leaf0"},
		Annotations:     map[string]string{"railyard.io/fabric-ports": "[]", "other": "x"},
		Finalizers:      []string{"example.com/keep"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "n", UID: "4567"}},
	}}
}

const (
	publisherSA = "system:serviceaccount:railyard-system:railyard-fabric"
	unitsSA     = "system:serviceaccount:railyard-system:railyard-fabric-units"
)

// TestFabricPoliciesKeepEachWriterToItsKeysCEL: the publisher may change
// only its own Node's rail, leaf-set and degraded-rails labels and the
// ports annotation; the unit writer only the unit label, on any Node;
// neither the finalizers (which would block a Node's deletion), the owner
// references (which would hand it to the garbage collector), the spec,
// nor any other key. In the topograph scheme the policies follow its
// keys. Others are not the policies' business.
func TestFabricPoliciesKeepEachWriterToItsKeysCEL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scheme           string
		leafSet, unit    string
		notLeaf, notUnit string // the other scheme's keys
	}{
		{"railyard", "railyard.io/leaf-set", "railyard.io/fabric-unit", "fabric.topograph.run/tier-0", "fabric.topograph.run/tier-1"},
		{"topograph", "fabric.topograph.run/tier-0", "fabric.topograph.run/tier-1", "railyard.io/leaf-set", "railyard.io/fabric-unit"},
	} {
		ps := fabricPolicies(t, map[string]any{"fabric": map[string]any{"enabled": true,
			"labels": map[string]any{"scheme": tc.scheme}, "units": map[string]any{"enabled": true}}})
		if len(ps) != 2 {
			t.Fatalf("%s: %d policies, want the publisher's and the unit writer's", tc.scheme, len(ps))
		}
		for _, c := range []struct {
			name      string
			user      string
			tokenNode string
			edits     []edit
			deny      string // "" admitted
		}{
			{"publisher: its fabric labels and annotation", publisherSA, "gpu-1",
				[]edit{setLabel("rail.railyard.io/0", "leaf-0"), setLabel(tc.leafSet, "ls-new"), setLabel("railyard.io/degraded-rails", "3_5"),
					dropLabel("rail.railyard.io/7"), setAnnotation("railyard.io/fabric-ports", `[{"rail":0}]`)}, ""},
			{"publisher: another node", publisherSA, "gpu-2", []edit{setLabel("rail.railyard.io/0", "leaf-0")}, "may write only its own Node, not gpu-1"},
			{"publisher: a token naming no node", publisherSA, "", []edit{setLabel("rail.railyard.io/0", "leaf-0")}, "token names no node"},
			{"publisher: another label", publisherSA, "gpu-1", []edit{setLabel("node-role.kubernetes.io/gpu", "")}, "may change only the rail.railyard.io/*, " + tc.leafSet},
			{"publisher: the unit label", publisherSA, "gpu-1", []edit{setLabel(tc.unit, "su9-leaf0")}, "may change only the rail.railyard.io/*"},
			{"publisher: the other scheme's leaf set", publisherSA, "gpu-1", []edit{setLabel(tc.notLeaf, "x")}, "may change only the rail.railyard.io/*"},
			{"publisher: another annotation", publisherSA, "gpu-1", []edit{setAnnotation("other", "y")}, "only the railyard.io/fabric-ports annotation"},
			{"publisher: a finalizer", publisherSA, "gpu-1", []edit{addFinalizer}, "may not change a Node's finalizers"},
			{"publisher: no finalizer", publisherSA, "gpu-1", []edit{func(n *corev1.Node) { n.Finalizers = nil }}, "may not change a Node's finalizers"},
			{"publisher: an owner", publisherSA, "gpu-1", []edit{addOwner}, "may not change a Node's owner references"},
			{"publisher: the spec", publisherSA, "gpu-1", []edit{cordon}, "may not change a Node's spec"},

			{"unit writer: the unit label", unitsSA, "", []edit{setLabel(tc.unit, "su2-leaf0")}, ""},
			{"unit writer: the unit label removed", unitsSA, "", []edit{dropLabel(tc.unit)}, ""},
			{"unit writer: the leaf set", unitsSA, "", []edit{setLabel(tc.leafSet, "ls-other")}, "may change only the " + tc.unit + " label"},
			{"unit writer: the other scheme's unit", unitsSA, "", []edit{setLabel(tc.notUnit, "x")}, "may change only the " + tc.unit + " label"},
			{"unit writer: a rail label", unitsSA, "", []edit{dropLabel("rail.railyard.io/7")}, "may change only the " + tc.unit + " label"},
			{"unit writer: the ports annotation", unitsSA, "", []edit{setAnnotation("railyard.io/fabric-ports", "[]x")}, "may not change a Node's annotations"},
			{"unit writer: a finalizer", unitsSA, "", []edit{setLabel(tc.unit, "su2-leaf0"), addFinalizer}, "may not change a Node's finalizers"},
			{"unit writer: an owner", unitsSA, "", []edit{addOwner}, "may not change a Node's owner references"},
			{"unit writer: the spec", unitsSA, "", []edit{cordon}, "may not change a Node's spec"},

			{"an administrator", "kubernetes-admin", "", []edit{setLabel("example.com/any", "x"), addFinalizer, addOwner, cordon}, ""},
		} {
			old := gpuNode("gpu-1")
			updated := old.DeepCopy()
			for _, e := range c.edits {
				e(updated)
			}
			denied := ps.admit(t, c.user, c.tokenNode, old, updated)
			switch {
			case c.deny == "" && len(denied) > 0:
				t.Errorf("%s, %s: denied: %v", tc.scheme, c.name, denied)
			case c.deny != "" && !strings.Contains(strings.Join(denied, "\n"), c.deny):
				t.Errorf("%s, %s: denials %v, want one saying %q", tc.scheme, c.name, denied, c.deny)
			}
		}
	}
}
